//! `run --keep-files` keeps what the cells wrote, not only an empty experiment directory
//! (issue #31, smaller things).

use crate::util::Lab;

#[test]
fn keep_files_keeps_each_cell_repetitions_directory_and_what_its_workers_wrote() {
    let lab = Lab::new();
    let spec = lab.spec(
        "w.toml",
        "name = \"w\"\nrepetitions = 2\n[matrix]\nworkload = [\"w\"]\n[workloads.w]\nkind = \"command\"\nargv = [\"sh\", \"-c\", \"echo kept > {dir}/out-{index}\"]\n",
    );
    let parent = lab.path("files");
    std::fs::create_dir(&parent).unwrap();
    lab.ok(&[
        "run",
        spec.to_str().unwrap(),
        "-q",
        "--keep-files",
        "--dir",
        parent.to_str().unwrap(),
    ]);
    let outs: Vec<_> = walk(&parent)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("out-")))
        .collect();
    assert_eq!(outs.len(), 2, "one file per repetition's worker: {:?}", walk(&parent));
    for o in outs {
        assert_eq!(std::fs::read_to_string(&o).unwrap(), "kept\n");
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()) {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}
