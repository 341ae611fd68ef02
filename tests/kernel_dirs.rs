//! A `dir` on a kernel interface (cgroupfs, tracefs, proc, sysfs, debugfs) is refused at its
//! line by `check` and `run`, before a cgroup or a tracing instance is made of the
//! experiment's directory (issue #31 item 3).

use crate::util::{is_root, Lab};
use std::path::Path;

fn spec(dir: &str) -> String {
    format!("dir = \"{dir}\"\nname = \"k\"\n[matrix]\nworkload = [\"nap\"]\n[workloads.nap]\nkind = \"command\"\nargv = [\"true\"]\n")
}

#[test]
fn check_and_run_refuse_a_dir_on_a_kernel_interface_at_its_value() {
    let lab = Lab::new();
    let unique = format!("schedlab-kernel-dirs-{}", std::process::id());
    let cases = [
        (format!("/sys/fs/cgroup/cpu/{unique}"), "cgroupfs"),
        (format!("/sys/kernel/tracing/instances/{unique}"), "tracefs"),
        ("/proc/1/x".to_string(), "proc"),
        (format!("/sys/{unique}"), "sysfs"),
        (format!("/sys/kernel/debug/{unique}"), "debugfs"),
    ];
    let mut tried = 0;
    for (dir, fs) in &cases {
        let parent = Path::new(dir).parent().unwrap();
        if schedlab_spec::kernel_fs(parent) != Some(fs) {
            continue; // not mounted here
        }
        tried += 1;
        let file = lab.spec("k.toml", &spec(dir));
        for cmd in ["check", "run"] {
            let out = lab.run(&[cmd, file.to_str().unwrap()]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{cmd} {dir}: {err}");
            assert!(
                err.starts_with(&format!(
                    "error: {}:1:7: dir: {dir} is on {fs}, a kernel interface",
                    file.display()
                )),
                "{err}"
            );
            assert!(!Path::new(dir).exists(), "{cmd} made {dir}");
            // The same directory given as --dir, which replaces the spec's.
            let file = lab.spec("plain.toml", &spec("plain"));
            let out = lab.run(&[cmd, file.to_str().unwrap(), "--dir", dir]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{cmd} --dir {dir}: {err}");
            assert!(
                err.starts_with(&format!("error: --dir: {dir} is on {fs}, a kernel interface")),
                "{err}"
            );
            assert!(!Path::new(dir).exists(), "{cmd} --dir made {dir}");
        }
    }
    assert!(tried >= 2, "proc and sysfs are always mounted");
    if is_root() {
        assert!(tried >= 3, "root sees cgroupfs");
    }
    assert!(!lab.db().exists(), "refused before a database was made");
}
