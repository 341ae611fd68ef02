//! A control character in a path that goes into a Slurm job script is refused, so a newline
//! cannot start a command of its own in `shards.sbatch` (issue #31 item 11).

use crate::util::Lab;

const SPEC: &str = "name = \"one\"\n[matrix]\nworkload = [\"nap\"]\n[workloads.nap]\nkind = \"command\"\nargv = [\"true\"]\n";

#[test]
fn a_newline_in_a_script_path_is_refused_before_any_script_is_written() {
    let lab = Lab::new();
    let spec = lab.spec("one.toml", SPEC);
    let spec = spec.to_str().unwrap();
    for (flag, value) in
        [("--shared", "sl/x\ntouch /tmp/pwned\n#"), ("--dir", "d\n#"), ("--shared", "tab\there")]
    {
        let mut args = vec!["slurm", spec, "--shards", "2", flag, value];
        if flag != "--shared" {
            args.extend(["--shared", "ok"]);
        }
        let out = lab.run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("{flag} ")) && err.contains("has a control character"),
            "{err}"
        );
        assert!(!lab.path("sl").exists(), "nothing made");
        assert!(!lab.path("ok").join("shards.sbatch").exists(), "no script written");
    }
    // A working directory with a newline in its name reaches the default --shared directory.
    let odd = lab.path("odd\ndir");
    std::fs::create_dir(&odd).unwrap();
    let out = lab.cmd(&["slurm", spec, "--shards", "2"]).current_dir(&odd).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("has a control character"), "{err}");
    assert_eq!(std::fs::read_dir(&odd).unwrap().count(), 0, "nothing made in {}", odd.display());
}
