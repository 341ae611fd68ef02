use super::*;
use crate::journal;

/// A fake machine: sysctls, a debugfs mounted at the standard place with the scheduler's
/// files, SMT control, and two CPUs' governors.
fn fake(tag: &str) -> (PathBuf, Root) {
    let d = std::env::temp_dir().join(format!("schedlab-knobs-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let w = |p: &str, text: &str| crate::fake::put(&d, p, text);
    w("proc/self/mountinfo", "30 1 0:7 / /sys/kernel/debug rw,nosuid - debugfs debugfs rw\n");
    w("proc/sys/kernel/sched_rr_timeslice_ms", "100\n");
    w("sys/kernel/debug/sched/preempt", "none voluntary (full) lazy\n");
    w("sys/kernel/debug/sched/features", "PLACE_LAG NO_RUN_TO_PARITY WAKEUP_PREEMPTION\n");
    w("sys/kernel/debug/sched/base_slice_ns", "3000000\n");
    w("sys/devices/system/cpu/smt/control", "on\n");
    for c in ["cpu0", "cpu1"] {
        w(&format!("sys/devices/system/cpu/{c}/cpufreq/scaling_governor"), "schedutil\n");
        w(
            &format!("sys/devices/system/cpu/{c}/cpufreq/scaling_available_governors"),
            "performance powersave schedutil\n",
        );
    }
    (d.clone(), Root::new(d))
}

fn knob(n: &str) -> Knob {
    Knob::parse(n).unwrap()
}

#[test]
fn debugfs_preempt_and_features_are_parsed_as_the_kernel_writes_them() {
    assert_eq!(
        preempt_modes("none voluntary (full) lazy"),
        (
            Some("full".into()),
            vec!["none".into(), "voluntary".into(), "full".into(), "lazy".into()]
        )
    );
    assert_eq!(
        preempt_modes("(none) voluntary full"),
        (Some("none".into()), vec!["none".into(), "voluntary".into(), "full".into()])
    );
    let f = "GENTLE_FAIR_SLEEPERS NO_PLACE_LAG RUN_TO_PARITY";
    assert_eq!(feature_state(f, "PLACE_LAG"), Some(false));
    assert_eq!(feature_state(f, "RUN_TO_PARITY"), Some(true));
    assert_eq!(feature_state(f, "LAG"), None, "a name is matched whole, not inside another");
}

#[test]
fn facts_say_what_each_knob_holds_offers_and_lacks() {
    let (d, root) = fake("facts");
    let names: Vec<String> = [
        "kernel.sched_rr_timeslice_ms",
        "kernel.sched_schedstats",
        "sched.preempt",
        "sched.features.PLACE_LAG",
        "sched.features.NOPE",
        "cpu.smt",
        "cpu.governor",
    ]
    .map(String::from)
    .to_vec();
    let f = facts(&root, &names);
    let present = |n: &str| match &f[n] {
        KnobFact::Present { value, offered, .. } => (value.clone(), offered.clone()),
        other => panic!("{n}: {other:?}"),
    };
    assert_eq!(present("kernel.sched_rr_timeslice_ms").0, "100");
    assert_eq!(
        present("sched.preempt"),
        ("full".into(), vec!["none".into(), "voluntary".into(), "full".into(), "lazy".into()])
    );
    assert_eq!(present("sched.features.PLACE_LAG").0, "on");
    assert_eq!(present("cpu.smt").0, "on");
    assert_eq!(
        present("cpu.governor"),
        ("schedutil".into(), vec!["performance".into(), "powersave".into(), "schedutil".into()])
    );
    assert!(
        matches!(&f["kernel.sched_schedstats"], KnobFact::Missing(w) if w.contains("sched_schedstats"))
    );
    assert!(
        matches!(&f["sched.features.NOPE"], KnobFact::Missing(w) if w.contains("lists no NOPE"))
    );
    std::fs::write(d.join("sys/devices/system/cpu/smt/control"), "notsupported\n").unwrap();
    std::fs::remove_dir_all(d.join("sys/devices/system/cpu/cpu0/cpufreq")).unwrap();
    std::fs::remove_dir_all(d.join("sys/devices/system/cpu/cpu1/cpufreq")).unwrap();
    std::fs::write(d.join("proc/self/mountinfo"), "").unwrap();
    let f = facts(&root, &names);
    assert!(
        matches!(&f["cpu.smt"], KnobFact::Unusable(w) if w.contains("no SMT")),
        "{:?}",
        f["cpu.smt"]
    );
    assert!(
        matches!(&f["cpu.governor"], KnobFact::Unusable(w) if w.contains("no CPU frequency scaling"))
    );
    assert!(
        matches!(&f["sched.preempt"], KnobFact::Unusable(w) if w.contains("debugfs is not mounted"))
    );
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_knob_written_is_journaled_first_and_its_undo_puts_the_old_value_back() {
    let (d, root) = fake("write");
    let mut j = Journal::create(&d.join("state")).unwrap();
    assert_eq!(
        set(&root, &knob("sched.features.PLACE_LAG"), &KnobValue::Bool(false), &mut j).unwrap(),
        "off"
    );
    let features = d.join("sys/kernel/debug/sched/features");
    assert_eq!(
        std::fs::read_to_string(&features).unwrap(),
        "NO_PLACE_LAG",
        "the kernel takes one NAME or NO_NAME per write"
    );
    // A fake file is not the kernel: make it read as the kernel would after that write.
    std::fs::write(&features, "NO_PLACE_LAG NO_RUN_TO_PARITY").unwrap();
    // The fake file keeps what was written, which names no mode in parentheses as the
    // kernel's would: a value that cannot be read back is an error naming the knob.
    let e = set(&root, &knob("sched.preempt"), &KnobValue::Word("voluntary".into()), &mut j)
        .unwrap_err()
        .to_string();
    assert_eq!(e, "sched.preempt: set to voluntary, but it cannot be read back");
    assert_eq!(
        std::fs::read_to_string(d.join("sys/kernel/debug/sched/preempt")).unwrap(),
        "voluntary"
    );
    set(&root, &knob("cpu.governor"), &KnobValue::Word("performance".into()), &mut j).unwrap();
    set(&root, &knob("kernel.sched_rr_timeslice_ms"), &KnobValue::Int(5), &mut j).unwrap();
    let undo = |p: &str, v: &str| Entry::Restore { path: d.join(p), value: v.into() };
    assert_eq!(
        journal::in_force(j.path()).unwrap(),
        [
            undo("sys/kernel/debug/sched/features", "PLACE_LAG"),
            undo("sys/kernel/debug/sched/preempt", "full"),
            undo("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "schedutil"),
            undo("sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "schedutil"),
            undo("proc/sys/kernel/sched_rr_timeslice_ms", "100"),
        ],
        "every file's old value, journaled before it was written"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("proc/sys/kernel/sched_rr_timeslice_ms")).unwrap(),
        "5"
    );
    assert!(j.undo_to(0).is_empty());
    assert_eq!(
        std::fs::read_to_string(d.join("proc/sys/kernel/sched_rr_timeslice_ms")).unwrap(),
        "100"
    );
    assert_eq!(std::fs::read_to_string(&features).unwrap(), "PLACE_LAG");
    assert_eq!(std::fs::read_to_string(d.join("sys/kernel/debug/sched/preempt")).unwrap(), "full");
    assert_eq!(
        std::fs::read_to_string(d.join("sys/devices/system/cpu/cpu1/cpufreq/scaling_governor"))
            .unwrap(),
        "schedutil"
    );
    drop(j);
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_knob_that_cannot_be_set_names_itself_and_its_file() {
    let (d, root) = fake("refused");
    let mut j = Journal::create(&d.join("state")).unwrap();
    std::fs::remove_file(d.join("sys/kernel/debug/sched/base_slice_ns")).unwrap();
    let e = set(&root, &knob("sched.base_slice_ns"), &KnobValue::Int(1_000_000), &mut j)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("sched.base_slice_ns: ") && e.contains("base_slice_ns does not exist"),
        "{e}"
    );
    assert!(j.entries().is_empty(), "nothing journaled, nothing written");
    drop(j);
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_knob_another_run_holds_is_refused_before_anything_reads_or_changes_it() {
    let (d, root) = fake("held");
    let names: Vec<String> =
        ["kernel.sched_rr_timeslice_ms", "cpu.governor", "nosuch.knob"].map(String::from).to_vec();
    let mut first = crate::lock::Holds::new();
    hold(&root, &names, &mut first).unwrap();
    assert_eq!(
        first.paths().count(),
        3,
        "the sysctl and both CPUs' governor files; an unknown knob is left to the spec's checks"
    );
    let mut second = crate::lock::Holds::new();
    let e = hold(&root, &names[..1], &mut second).unwrap_err().to_string();
    assert!(
        e.contains("kernel.sched_rr_timeslice_ms is held by another run") && e.contains("process "),
        "{e}"
    );
    // Another knob's files stay free for another run.
    hold(&root, &["sched.base_slice_ns".to_string()], &mut second).unwrap();
    drop(first);
    hold(&root, &names, &mut crate::lock::Holds::new()).expect("free once the first run is gone");
    std::fs::remove_dir_all(d).unwrap();
}
