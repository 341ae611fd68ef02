//! cgroup logic against fake v1 and v2 trees: which files are written, what is journaled,
//! and that undoing the journal leaves the tree as it was.

use super::*;
use crate::journal::Journal;

fn fake(tag: &str, files: &[(&str, &str)]) -> (Root, PathBuf) {
    let dir = std::env::temp_dir().join(format!("schedlab-cg-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    crate::fake::put_all(&dir, files);
    (Root::new(&dir), dir)
}

fn read(p: PathBuf) -> String {
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn pure_v2_writes_weight_max_cpuset_and_undoes_subtree_control() {
    let (root, dir) = fake(
        "v2",
        &[
            ("/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n"),
            ("/sys/fs/cgroup/cgroup.subtree_control", ""),
        ],
    );
    let h = detect(&root).unwrap();
    assert!(matches!(h, Hierarchy::V2 { .. }), "{h:?}");
    let state = dir.join("state");
    let mut j = Journal::create(&state).unwrap();
    let s = Settings {
        weight: Some(200),
        max: Some((50_000, 100_000)),
        cpuset: Some(vec![0, 1]),
        rt_runtime_us: None,
    };
    let cg = h.create(&mut j, "run1-hash", &s).unwrap();
    let d = dir.join("sys/fs/cgroup/schedlab/run1-hash");
    assert_eq!(cg.dirs(), std::slice::from_ref(&d));
    assert_eq!(read(d.join("cpu.weight")), "200");
    assert_eq!(read(d.join("cpu.max")), "50000 100000");
    assert_eq!(read(d.join("cpuset.cpus")), "0-1");
    cg.add(4242).unwrap();
    assert_eq!(read(d.join("cgroup.procs")), "4242");
    // root subtree_control got +cpu then +cpuset (a fake file keeps only the last write)
    assert_eq!(read(dir.join("sys/fs/cgroup/cgroup.subtree_control")), "+cpuset");
    assert!(j.close().is_empty());
    assert!(!dir.join("sys/fs/cgroup/schedlab").exists(), "the schedlab parent is removed");
    assert_eq!(
        read(dir.join("sys/fs/cgroup/cgroup.subtree_control")),
        "-cpu",
        "undo writes -cpu last (reverse order)"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn v2_without_the_controller_is_refused_before_any_change() {
    let (root, dir) = fake("v2none", &[("/sys/fs/cgroup/cgroup.controllers", "io memory pids\n")]);
    let h = detect(&root).unwrap();
    let err =
        h.check(&Settings { weight: Some(100), ..Default::default() }).unwrap_err().to_string();
    assert!(err.contains("\"cpu\" is not available"), "{err}");
    let mut j = Journal::create(&dir.join("state")).unwrap();
    assert!(h
        .create(&mut j, "x", &Settings { cpuset: Some(vec![0]), ..Default::default() })
        .is_err());
    assert!(!dir.join("sys/fs/cgroup/schedlab").exists(), "nothing created");
    assert!(j.entries().is_empty());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn v1_maps_weight_to_shares_and_sets_cpuset_parent_first() {
    let (root, dir) = fake(
        "v1",
        &[
            ("/sys/fs/cgroup/cpu/cpu.shares", "1024\n"),
            ("/sys/fs/cgroup/cpuset/cpuset.cpus", "0-3\n"),
            ("/sys/fs/cgroup/cpuset/cpuset.mems", "0\n"),
            ("/sys/fs/cgroup/unified/cgroup.controllers", ""),
        ],
    );
    let h = detect(&root).unwrap();
    assert!(matches!(h, Hierarchy::V1 { cpu: Some(_), cpuset: Some(_) }), "{h:?}");
    let mut j = Journal::create(&dir.join("state")).unwrap();
    let s = Settings {
        weight: Some(200),
        max: Some((25_000, 100_000)),
        cpuset: Some(vec![1]),
        rt_runtime_us: None,
    };
    h.create(&mut j, "g", &s).unwrap();
    let cpu = dir.join("sys/fs/cgroup/cpu/schedlab/g");
    assert_eq!(read(cpu.join("cpu.shares")), "2048");
    assert_eq!(read(cpu.join("cpu.cfs_quota_us")), "25000");
    assert_eq!(read(cpu.join("cpu.cfs_period_us")), "100000");
    let cs = dir.join("sys/fs/cgroup/cpuset/schedlab");
    assert_eq!(read(cs.join("cpuset.cpus")), "0-3");
    assert_eq!(read(cs.join("g/cpuset.cpus")), "1");
    assert_eq!(read(cs.join("g/cpuset.mems")), "0");
    drop(j);
    assert!(!dir.join("sys/fs/cgroup/cpu/schedlab").exists() && !cs.exists());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn weight_mapping_matches_the_kernel_defaults() {
    assert_eq!(weight_to_shares(100), 1024);
    assert_eq!(weight_to_shares(1), 10);
    assert_eq!(weight_to_shares(10_000), 102_400);
}

#[test]
fn hybrid_machine_uses_v1_and_an_empty_unified_tree_is_ignored() {
    let (root, dir) = fake(
        "hy",
        &[
            ("/sys/fs/cgroup/unified/cgroup.controllers", "\n"),
            ("/sys/fs/cgroup/cpu/cpu.shares", "1024"),
        ],
    );
    assert!(matches!(detect(&root), Some(Hierarchy::V1 { .. })));
    std::fs::remove_dir_all(&dir).unwrap();
    let (root, dir) = fake("none", &[("/sys/fs/cgroup/unified/cgroup.controllers", "\n")]);
    assert_eq!(detect(&root), None);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Regression: with two overlapping runs, the one that created the shared `schedlab`
/// parent finished first and left it behind for good. Every run now journals the parent;
/// the last one out removes it.
#[test]
fn overlapping_runs_leave_no_parent_behind() {
    let (root, dir) = fake("overlap", &[("/sys/fs/cgroup/cpu/cpu.shares", "1024\n")]);
    let h = detect(&root).unwrap();
    let s = Settings { weight: Some(100), ..Default::default() };
    let mut a = Journal::create(&dir.join("state-a")).unwrap();
    h.create(&mut a, "run-a", &s).unwrap();
    let mut b = Journal::create(&dir.join("state-b")).unwrap();
    h.create(&mut b, "run-b", &s).unwrap();
    let parent = dir.join("sys/fs/cgroup/cpu/schedlab");
    assert!(a.close().is_empty());
    assert!(
        parent.join("run-b").exists() && !parent.join("run-a").exists(),
        "a's cgroup gone, b's kept"
    );
    assert!(b.close().is_empty());
    assert!(!parent.exists(), "the last run out removes the parent");
    std::fs::remove_dir_all(dir).unwrap();
}
