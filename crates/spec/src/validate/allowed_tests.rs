//! The privilege rule against made-up capabilities: only what needs a privilege needs it.

use crate::{parse, Capabilities, Spec};

fn spec(policies: &str) -> Spec {
    parse("t.toml", &format!("name = \"t\"\n[matrix]\nworkload = [\"pi\"]\npolicy = [\"p\"]\n[policies.p]\n{policies}\n")).unwrap()
}

#[test]
fn an_ordinary_user_may_run_other_batch_and_idle_at_its_own_nice_or_above() {
    let user = Capabilities::unprivileged();
    for class in ["other", "batch", "idle"] {
        for nice in [0, 5, 19] {
            let s = spec(&format!("class = \"{class}\"\nnice = {nice}"));
            assert!(s.check_allowed(&user).is_ok(), "{class} nice {nice}");
        }
    }
    let at_ten = Capabilities { nice: 10, ..Capabilities::unprivileged() };
    assert!(spec("class = \"other\"\nnice = 10").check_allowed(&at_ten).is_ok());
    assert!(spec("class = \"batch\"\nnice = 12").check_allowed(&at_ten).is_ok());
}

#[test]
fn a_nice_below_the_process_and_the_rlimit_floor_names_cap_sys_nice_and_rlimit_nice() {
    let s = spec("class = \"other\"\nnice = -5");
    let e = s.check_allowed(&Capabilities::unprivileged()).unwrap_err();
    assert!(
        e.message.contains("CAP_SYS_NICE") && e.message.contains("RLIMIT_NICE >= 25 (it is 0)"),
        "{e}"
    );
    assert_eq!((e.line, e.col), (7, 8), "points at the nice value: {e}");
    // A process at nice 10 cannot give its workers nice 5 without the rlimit...
    let at_ten = Capabilities { nice: 10, ..Capabilities::unprivileged() };
    let e = spec("class = \"idle\"\nnice = 5").check_allowed(&at_ten).unwrap_err();
    assert!(
        e.message.contains("below this process's nice 10")
            && e.message.contains("RLIMIT_NICE >= 15"),
        "{e}"
    );
    // ...but RLIMIT_NICE 15 (floor 5) allows it, and CAP_SYS_NICE anything.
    assert!(spec("class = \"idle\"\nnice = 5")
        .check_allowed(&Capabilities { min_nice: 5, ..at_ten.clone() })
        .is_ok());
    assert!(s
        .check_allowed(&Capabilities { sys_nice: true, ..Capabilities::unprivileged() })
        .is_ok());
}

#[test]
fn fifo_and_rr_run_up_to_rlimit_rtprio_and_above_it_name_the_limit() {
    for class in ["fifo", "rr"] {
        let s = spec(&format!("class = \"{class}\"\npriority = 40"));
        let e = s.check_allowed(&Capabilities::unprivileged()).unwrap_err();
        assert!(
            e.message.contains("priority 40")
                && e.message.contains("RLIMIT_RTPRIO >= 40")
                && e.message.contains("RLIMIT_RTPRIO = 0"),
            "{e}"
        );
        assert!(
            s.check_allowed(&Capabilities { rtprio_limit: 40, ..Capabilities::unprivileged() })
                .is_ok(),
            "{class} at the limit"
        );
        let e = s
            .check_allowed(&Capabilities { rtprio_limit: 39, ..Capabilities::unprivileged() })
            .unwrap_err();
        assert!(e.message.contains("RLIMIT_RTPRIO = 39"), "{e}");
    }
    // An RT group's nice is set too: below the process's own it needs the privilege as well.
    let s = spec("class = \"fifo\"\npriority = 10\nnice = -3");
    let e = s
        .check_allowed(&Capabilities { rtprio_limit: 99, ..Capabilities::unprivileged() })
        .unwrap_err();
    assert!(e.message.contains("nice -3"), "{e}");
}

#[test]
fn deadline_needs_cap_sys_nice_whatever_the_rlimit() {
    let s = spec("class = \"deadline\"\nruntime_us = 1000\nperiod_us = 10000");
    let all_limits =
        Capabilities { rtprio_limit: 99, min_nice: -20, ..Capabilities::unprivileged() };
    let e = s.check_allowed(&all_limits).unwrap_err();
    assert!(e.message.contains("SCHED_DEADLINE needs CAP_SYS_NICE"), "{e}");
    assert!(s.check_allowed(&Capabilities::root()).is_ok());
}

#[test]
fn a_dispatched_set_needs_the_dispatchers_priority_98() {
    let s = parse(
        "rt.toml",
        "name = \"t\"\n[matrix]\nworkload = [\"w\"]\nscheduler = [\"edf\"]\n[workloads.w]\nkind = \"periodic\"\nquantum_ms = 5\ncanonical = { tasks = 3, x = 1, y = 3, period_quanta = 2 }\n",
    )
    .unwrap();
    let at_97 = Capabilities { rtprio_limit: 97, ..Capabilities::unprivileged() };
    let e = s.check_allowed(&at_97).unwrap_err();
    assert!(e.message.contains("dispatcher") && e.message.contains("RLIMIT_RTPRIO >= 98"), "{e}");
    assert!(s.check_allowed(&Capabilities { rtprio_limit: 98, ..at_97 }).is_ok());
}

#[test]
fn cgroup_controls_name_the_directory_this_process_cannot_write() {
    let text = "name = \"t\"\n[matrix]\nworkload = [\"pi\"]\ncpu_weight = [0, 200]\n";
    let s = parse("t.toml", text).unwrap();
    let e = s.check_allowed(&Capabilities::unprivileged()).unwrap_err();
    assert!(
        e.message.contains("write access to /sys/fs/cgroup") && e.message.contains("root"),
        "{e}"
    );
    assert_eq!((e.line, e.col), (4, 14), "points at cpu_weight's value: {e}");
    let writable = Capabilities { cgroup_unwritable: None, ..Capabilities::unprivileged() };
    assert!(s.check_allowed(&writable).is_ok(), "a delegated (writable) tree is enough");
    // An axis of weight 0 only makes no cgroup at all: nothing to refuse.
    let none = parse("t.toml", &text.replace("[0, 200]", "[0]")).unwrap();
    assert!(none.check_allowed(&Capabilities::unprivileged()).is_ok());
    // A group's cpuset is located as well.
    let g = parse("t.toml", "name = \"t\"\n[matrix]\nworkload = [\"pi\"]\n[groups.bg]\nworkload = \"pi\"\ncpuset = \"0\"\n").unwrap();
    let e = g.check_allowed(&Capabilities::unprivileged()).unwrap_err();
    assert!(e.message.contains("group \"bg\""), "{e}");
    assert_eq!(e.line, 6, "{e}");
}

#[test]
fn a_directory_device_that_drops_the_page_cache_needs_root_unless_told_not_to() {
    let text = "name = \"t\"\n[device]\npath = \"/tmp\"\n[matrix]\nworkload = [\"w\"]\n[workloads.w]\nkind = \"par_write\"\n";
    let s = parse("t.toml", text).unwrap();
    let e = s.check_allowed(&Capabilities::unprivileged()).unwrap_err();
    assert!(
        e.message.contains("/proc/sys/vm/drop_caches") && e.message.contains("drop_caches = false"),
        "{e}"
    );
    assert_eq!((e.line, e.col), (2, 1), "points at [device]: {e}");
    assert!(s.check_allowed(&Capabilities::root()).is_ok());
    let off = parse(
        "t.toml",
        &text.replace("path = \"/tmp\"\n", "path = \"/tmp\"\ndrop_caches = false\n"),
    )
    .unwrap();
    assert!(
        off.check_allowed(&Capabilities::unprivileged()).is_ok(),
        "files in a directory need no privilege"
    );
}

/// A fifo or other cell with `top` as the spec's first lines.
fn dma_spec(top: &str, class: &str) -> Result<Spec, crate::SpecError> {
    parse(
        "t.toml",
        &format!("name = \"t\"\n{top}\n[matrix]\nworkload = [\"pi\"]\npolicy = [\"{class}\"]\n"),
    )
}

#[test]
fn real_time_cells_hold_cpu_dma_latency_at_0_unless_the_spec_says_otherwise() {
    use schedlab_plan::DmaLatency;
    let s = dma_spec("", "fifo").unwrap();
    assert_eq!(s.plan.cpu_dma_latency, DmaLatency::Hold(0));
    assert_eq!(s.plan.dma_latency_for(&s.plan.cells[0]), Some(0));
    let other = dma_spec("cpu_dma_latency = 20", "other").unwrap();
    assert_eq!(other.plan.dma_latency_for(&other.plan.cells[0]), None, "not a real-time cell");
    let off = dma_spec("cpu_dma_latency = \"off\"", "fifo").unwrap();
    assert_eq!(
        (off.plan.cpu_dma_latency, off.plan.dma_latency_for(&off.plan.cells[0])),
        (DmaLatency::Off, None)
    );
    for bad in ["-1", "2000000001", "\"on\"", "1.5"] {
        let e = dma_spec(&format!("cpu_dma_latency = {bad}"), "fifo").unwrap_err();
        assert!(
            e.message.contains("cpu_dma_latency must be microseconds")
                && (e.line, e.col) == (2, 19),
            "{bad}: {e}"
        );
    }
}

#[test]
fn an_explicit_cpu_dma_latency_needs_root_only_for_real_time_cells() {
    let rt_user = Capabilities { rtprio_limit: 99, ..Capabilities::unprivileged() };
    let e = dma_spec("cpu_dma_latency = 10", "fifo").unwrap().check_allowed(&rt_user).unwrap_err();
    assert!(
        e.message.contains("/dev/cpu_dma_latency, which only root may open")
            && (e.line, e.col) == (2, 19),
        "{e}"
    );
    assert!(dma_spec("cpu_dma_latency = 10", "fifo")
        .unwrap()
        .check_allowed(&Capabilities::root())
        .is_ok());
    // The default is held where it can be; an ordinary cell holds nothing.
    assert!(dma_spec("", "fifo").unwrap().check_allowed(&rt_user).is_ok());
    assert!(dma_spec("cpu_dma_latency = 10", "other")
        .unwrap()
        .check_allowed(&Capabilities::unprivileged())
        .is_ok());
}
