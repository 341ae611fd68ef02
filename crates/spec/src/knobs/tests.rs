use crate::{parse, KnobFact, KnobFacts, Spec, SpecError};

const BASE: &str = "name = \"t\"\n[matrix]\nworkload = [\"pi\"]\npolicy = [\"rr\"]\n";

fn spec(extra: &str) -> Spec {
    parse("t.toml", &format!("{BASE}{extra}")).unwrap_or_else(|e| panic!("{e}"))
}

fn err(extra: &str) -> SpecError {
    parse("t.toml", &format!("{BASE}{extra}")).expect_err("spec should be rejected")
}

fn present(value: &str, offered: &[&str], writable: bool) -> KnobFact {
    KnobFact::Present {
        path: "/x".into(),
        value: value.into(),
        offered: offered.iter().map(|s| s.to_string()).collect(),
        unwritable: (!writable).then(|| "/x is read-only: /proc/sys is mounted read-only".into()),
    }
}

/// This machine's sysctls as a root process sees them.
fn machine() -> KnobFacts {
    let mut f = KnobFacts::new();
    for (k, v) in [
        ("sched_rr_timeslice_ms", "100"),
        ("sched_autogroup_enabled", "1"),
        ("sched_rt_runtime_us", "950000"),
        ("sched_rt_period_us", "1000000"),
    ] {
        f.insert(format!("kernel.{k}"), present(v, &[], true));
    }
    f
}

#[test]
fn swept_knobs_are_cells_varying_slowest_with_their_values_in_the_key() {
    let s = spec("[knobs]\n\"kernel.sched_autogroup_enabled\" = 0\n[matrix.knobs]\n\"kernel.sched_rr_timeslice_ms\" = [5, 100]\n");
    let keys: Vec<&str> = s.plan.cells.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(keys, ["pi/rr/n1/sched_rr_timeslice_ms=5", "pi/rr/n1/sched_rr_timeslice_ms=100"]);
    assert_eq!(s.plan.knobs.len(), 1, "held for the run, in no key");
    assert_eq!(s.plan.cells[1].params().knobs["kernel.sched_rr_timeslice_ms"], "100");
    s.check_knobs(&machine()).unwrap();
}

#[test]
fn an_unknown_knob_or_a_value_the_kernel_refuses_is_an_error_at_its_line() {
    let e = err("[matrix.knobs]\n\"kernel.sched_nonsense\" = [1]\n");
    assert_eq!(
        (e.line, e.message.contains("unknown knob \"kernel.sched_nonsense\"")),
        (6, true),
        "{e}"
    );
    let e = err("[matrix.knobs]\n\"kernel.sched_rr_timeslice_ms\" = [5, -5]\n");
    assert_eq!((e.line, e.col), (6, 38), "{e}");
    assert!(e.message.contains("kernel.sched_rr_timeslice_ms must be between 1"), "{e}");
    let e = err("[knobs]\n\"kernel.sched_autogroup_enabled\" = 2\n");
    assert_eq!(e.line, 6, "{e}");
    let e = err("[knobs]\n\"sched.preempt\" = 3\n");
    assert!(e.message.contains("one of none, voluntary, full, lazy"), "{e}");
    let e = err("[knobs]\n\"kernel.sched_rr_timeslice_ms\" = 5\n[matrix.knobs]\n\"kernel.sched_rr_timeslice_ms\" = [5]\n");
    assert!(e.message.contains("both held in [knobs] and swept"), "{e}");
}

#[test]
fn a_knob_the_machine_lacks_refuses_or_keeps_from_this_user_is_an_error_naming_it() {
    let s = spec("[matrix.knobs]\n\"kernel.sched_rr_timeslice_ms\" = [5]\n\"sched.preempt\" = [\"full\", \"lazy\"]\n");
    let check = |name: &str, fact: KnobFact| {
        let mut f = machine();
        f.insert(name.into(), fact);
        s.check_knobs(&f).expect_err("refused")
    };
    let e = check(
        "sched.preempt",
        KnobFact::Unusable("reading /sys/kernel/debug/sched/preempt gives EPERM".into()),
    );
    assert_eq!(e.line, 7, "{e}");
    assert!(
        e.message.starts_with("sched.preempt cannot be used on this machine: reading")
            && e.message.contains("EPERM"),
        "{e}"
    );
    let e = check("sched.preempt", present("full", &["none", "voluntary", "full"], true));
    assert_eq!((e.line, e.col), (7, 28), "{e}");
    assert!(e.message.contains("\"lazy\": this kernel offers none, voluntary, full"), "{e}");
    let e = check("kernel.sched_rr_timeslice_ms", present("100", &[], false));
    assert_eq!(e.line, 6, "{e}");
    assert!(
        e.message.contains("kernel.sched_rr_timeslice_ms") && e.message.contains("read-only"),
        "{e}"
    );
    let e = check(
        "kernel.sched_rr_timeslice_ms",
        KnobFact::Missing("/proc/sys/kernel/sched_rr_timeslice_ms does not exist".into()),
    );
    assert!(e.message.starts_with("this kernel has no kernel.sched_rr_timeslice_ms"), "{e}");
}

#[test]
fn rt_throttling_is_disabled_or_weakened_only_when_the_spec_says_so() {
    let s = spec("[matrix.knobs]\n\"kernel.sched_rt_runtime_us\" = [950000, -1]\n");
    let e = s.check_knobs(&machine()).expect_err("refused");
    assert_eq!((e.line, e.col), (6, 41), "at the -1: {e}");
    assert!(
        e.message.contains("disables RT throttling")
            && e.message.contains("allow_rt_unthrottled = true"),
        "{e}"
    );
    assert!(crate::unthrottles(&s.plan, &machine()));
    let text = format!("allow_rt_unthrottled = true\n{BASE}[matrix.knobs]\n\"kernel.sched_rt_runtime_us\" = [950000, -1]\n");
    let s = parse("t.toml", &text).unwrap();
    s.check_knobs(&machine()).unwrap();
    assert!(
        crate::unthrottles(&s.plan, &machine()),
        "allowed, still unthrottling: the engine's watchdog must be armed"
    );
    let s = spec("[knobs]\n\"kernel.sched_rt_period_us\" = 960000\n");
    let e = s.check_knobs(&machine()).expect_err("99% for RT");
    assert!(e.message.contains("gives real-time tasks 99.0% of each period"), "{e}");
    let s = spec("[knobs]\n\"kernel.sched_rt_runtime_us\" = 2000000\n");
    assert!(s
        .check_knobs(&machine())
        .expect_err("above period")
        .message
        .contains("the kernel refuses it"));
    let s = spec("[knobs]\n\"kernel.sched_rt_runtime_us\" = 500000\n");
    s.check_knobs(&machine()).unwrap();
    assert!(!crate::unthrottles(&s.plan, &machine()));
}

/// Issue 47's preflight review: facts are read for the knobs a plan names only, so a plan
/// naming `sched_rt_runtime_us` alone has no period among them; -1 must still be refused.
#[test]
fn rt_runtime_minus_one_alone_is_refused_without_its_period_among_the_facts() {
    let mut only_runtime = KnobFacts::new();
    only_runtime.insert("kernel.sched_rt_runtime_us".into(), present("950000", &[], true));
    let s = spec("[knobs]\n\"kernel.sched_rt_runtime_us\" = -1\n");
    let e = s.check_knobs(&only_runtime).expect_err("refused");
    assert!(e.message.contains("disables RT throttling"), "{e}");
    assert!(crate::unthrottles(&s.plan, &only_runtime));
    let s = spec("[knobs]\n\"kernel.sched_rt_runtime_us\" = 500000\n");
    s.check_knobs(&only_runtime).unwrap();
}
