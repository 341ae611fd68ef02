//! `run --until-decided AXIS` (issue 45 item 4): two builds of a program, one doing twice
//! the work, in one run interleaved in random order, decided `regressed` well before the
//! cap; a resumed run is told how to go on deciding.

use crate::util::{measuring, Lab};

/// Two pi programs, `b` doing twice the iterations of `a`, one process each. (30% more
/// was once decided only at the cap beside the whole suite: a repetition's wall time varies
/// by 15-20% on this VM under that load.)
const AB: &str = "name = \"ab\"\nrepetitions = 5\nwarmup = 1\n[matrix]\nworkload = [\"a\", \"b\"]\nprocesses = [1]\n\
    [workloads.a]\nkind = \"pi\"\niterations = 60_000_000\n\
    [workloads.b]\nkind = \"pi\"\niterations = 120_000_000\n";

#[test]
fn two_programs_twice_apart_are_decided_regressed_well_before_the_cap() {
    let _turn = measuring();
    let lab = Lab::new();
    let spec = lab.spec("ab.toml", AB);
    let out = lab.ok(&[
        "run",
        spec.to_str().unwrap(),
        "--until-decided",
        "workload",
        "--max-repetitions",
        "20",
    ]);
    assert!(out.contains("verdicts of b against a: 1 regressed"), "{out}");
    assert!(out.contains("▲ regressed"), "{out}");
    let line =
        out.lines().find(|l| l.starts_with("decided after ")).unwrap_or_else(|| panic!("{out}"));
    let n: u32 = line["decided after ".len()..].split(' ').next().unwrap().parse().unwrap();
    assert!((5..=12).contains(&n), "well before the cap of 20: {line}");
    // The stored plan interleaves both arms, and `compare --by` reads the run as any other.
    let by = lab.ok(&["compare", "1", "--by", "workload"]);
    assert!(by.contains("1 tested: 1 significantly higher"), "{by}");
}

#[test]
fn an_axis_the_spec_does_not_sweep_is_refused_with_the_axes_it_does() {
    let lab = Lab::new();
    let spec = lab.spec("ab.toml", AB);
    let out = lab.run(&["run", spec.to_str().unwrap(), "--until-decided", "policy"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--until-decided policy: the run has one policy only"), "{err}");
    assert!(err.contains("the axes it sweeps: workload"), "{err}");
    assert!(!lab.db().exists(), "refused before the database is made");
}
