use super::*;

fn err(text: &str) -> SpecError {
    parse("t.toml", text).expect_err("spec should be rejected")
}

const BASE: &str = "name = \"t\"\n[matrix]\nworkload = [\"pi\"]\n";

#[test]
fn misspelled_key_points_at_its_line_and_column() {
    let e = err("name = \"t\"\nrepetitons = 3\n[matrix]\nworkload = [\"pi\"]\n");
    assert_eq!((e.line, e.col), (2, 1), "{e}");
    assert!(e.message.contains("unknown field `repetitons`"), "{e}");
    assert!(e.to_string().starts_with("t.toml:2:1: "), "{e}");
}

#[test]
fn misspelled_key_inside_a_table_is_located_too() {
    let e = err("name = \"t\"\n[matrix]\nworkload = [\"cpu\"]\n[workloads.cpu]\nkind = \"pi\"\niteratons = 5\n");
    assert_eq!((e.line, e.col), (6, 1), "{e}");
}

#[test]
fn wrong_type_is_located() {
    let e = err("name = \"t\"\nrepetitions = \"three\"\n[matrix]\nworkload = [\"pi\"]\n");
    assert_eq!(e.line, 2, "{e}");
}

#[test]
fn priority_out_of_range_names_the_range() {
    let e = err(&format!("{BASE}[policies.f]\nclass = \"fifo\"\npriority = 99\n"));
    assert_eq!((e.line, e.col), (6, 12), "{e}");
    assert!(e.message.contains("between 1 and 98"), "{e}");
    let e =
        err("name = \"t\"\n[matrix]\nworkload = [\"pi\"]\npolicy = [\"fifo\"]\npriority = [0]\n");
    assert_eq!(e.line, 5, "{e}");
}

#[test]
fn priority_on_a_fair_class_is_an_error() {
    let e = err(&format!("{BASE}[policies.o]\nclass = \"other\"\npriority = 5\n"));
    assert!(e.message.contains("only to fifo and rr"), "{e}");
}

#[test]
fn unknown_names_list_the_alternatives() {
    let e = err("name = \"t\"\n[matrix]\nworkload = [\"pi\"]\npolicy = [\"fifi\"]\n");
    assert_eq!((e.line, e.col), (4, 11), "{e}");
    assert!(e.message.contains("fifo"), "{e}");
    let e = err("name = \"t\"\n[matrix]\nworkload = [\"cpux\"]\n");
    assert!(e.message.contains("unknown workload \"cpux\""), "{e}");
}

#[test]
fn keys_of_another_kind_are_rejected() {
    let e = err("name = \"t\"\n[matrix]\nworkload = [\"w\"]\n[workloads.w]\nkind = \"pi\"\nblock_bytes = 10\n");
    assert_eq!(e.line, 6, "{e}");
    assert!(e.message.contains("does not apply"), "{e}");
}

#[test]
fn deadline_parameters_must_be_ordered() {
    let e = err(&format!(
        "{BASE}[policies.d]\nclass = \"deadline\"\nruntime_us = 2000\nperiod_us = 1000\n"
    ));
    assert!(e.message.contains("runtime <= deadline <= period"), "{e}");
    let s = parse(
        "t.toml",
        &format!("{BASE}[policies.d]\nclass = \"deadline\"\nruntime_us = 500\nperiod_us = 1000\n"),
    )
    .unwrap();
    assert!(
        s.plan.cells.iter().all(|c| c.primary().policy.class == Class::Other),
        "an unused policy does not create cells"
    );
}

#[test]
fn matrix_is_the_product_and_priority_collapses_for_fair_classes() {
    let s = parse(
        "t.toml",
        "name = \"t\"\n[matrix]\nworkload = [\"pi\", \"copy\"]\npolicy = [\"other\", \"fifo\"]\npriority = [10, 20]\nprocesses = [1, 4]\n",
    )
    .unwrap();
    // per workload: other x 2 counts + fifo x 2 priorities x 2 counts = 6
    assert_eq!(s.plan.cells.len(), 12);
    let keys: Vec<&str> = s.plan.cells.iter().map(|c| c.key.as_str()).collect();
    assert!(keys.contains(&"pi/fifo:20/n4"), "{keys:?}");
    assert!(keys.contains(&"copy/other/n1"), "{keys:?}");
    assert!(s.plan.cells.iter().enumerate().all(|(i, c)| c.index as usize == i));
}

#[test]
fn scale_multiplies_work_but_keeps_at_least_one_block() {
    let mut s =
        parse("t.toml", "name = \"t\"\n[matrix]\nworkload = [\"pi\", \"copy\", \"mixed\"]\n")
            .unwrap();
    s.plan.scale(0.001);
    assert_eq!(s.plan.cells[0].primary().workload, Workload::Pi { iterations: 100_000 });
    assert_eq!(
        s.plan.cells[1].primary().workload,
        Workload::Copy { transfer_bytes: 1024, block_bytes: 1024, input_bytes: 1 << 20 }
    );
    assert_eq!(
        s.plan.cells[2].primary().workload,
        Workload::Mixed { iterations: 50_000, write_every: 100 }
    );
}

#[test]
fn random_order_is_seeded_and_warmups_precede_their_cell() {
    let text =
        "name = \"t\"\nrepetitions = 3\nwarmup = 1\norder = \"random\"\nseed = 7\n[matrix]\nworkload = [\"pi\"]\nprocesses = [1, 2, 3]\n";
    let a = parse("t.toml", text).unwrap().plan.steps();
    let b = parse("t.toml", text).unwrap().plan.steps();
    assert_eq!(a, b, "same seed, same order");
    assert_eq!(a.len(), 12);
    let seq: Vec<(u32, u32)> = a.iter().filter(|s| !s.warmup).map(|s| (s.cell, s.rep)).collect();
    let mut sorted = seq.clone();
    sorted.sort();
    assert_ne!(seq, sorted, "shuffled");
    for (i, s) in a.iter().enumerate() {
        if s.warmup {
            assert!(a[i + 1..].iter().any(|t| t.cell == s.cell && !t.warmup));
            assert!(
                !a[..i].iter().any(|t| t.cell == s.cell && !t.warmup),
                "warm-up after a measured rep of its cell"
            );
        }
    }
    let other = parse("t.toml", &text.replace("seed = 7", "seed = 8")).unwrap().plan.steps();
    assert_ne!(a, other);
}

#[test]
fn privileges_are_checked_and_named() {
    let s = parse(
        "t.toml",
        "name = \"t\"\n[matrix]\nworkload = [\"pi\"]\npolicy = [\"other\", \"fifo\"]\n",
    )
    .unwrap();
    let none = Capabilities::unprivileged();
    let e = s.check_allowed(&none).unwrap_err();
    assert!(e.message.contains("CAP_SYS_NICE") && e.message.contains("RLIMIT_RTPRIO"), "{e}");
    assert_eq!((e.line, e.col), (4, 20), "{e}");
    assert!(s
        .check_allowed(&Capabilities { rtprio_limit: 50, ..Capabilities::unprivileged() })
        .is_ok());
    assert!(s.check_allowed(&Capabilities::root()).is_ok());
}

#[test]
fn command_needs_argv_and_never_a_shell_string() {
    let e = err("name = \"t\"\n[matrix]\nworkload = [\"c\"]\n[workloads.c]\nkind = \"command\"\n");
    assert!(e.message.contains("argv"), "{e}");
    let e = err("name = \"t\"\n[matrix]\nworkload = [\"c\"]\n[workloads.c]\nkind = \"command\"\nargv = \"ls -l\"\n");
    assert_eq!(e.line, 6, "a string is not an argument vector: {e}");
}

#[test]
fn builtin_quick_experiment_is_valid() {
    let s = parse("quick.toml", BUILTIN_QUICK).unwrap();
    assert_eq!(s.plan.cells.len(), 18);
}

/// A machine of `caps`, `device` and `knobs`, without sched_ext.
fn machine<'a>(
    caps: &'a Capabilities,
    device: Option<&'a DeviceFacts>,
    knobs: &'a KnobFacts,
) -> MachineFacts<'a> {
    static NO_SCX: ScxFacts = ScxFacts {
        available: false,
        state: String::new(),
        ops: None,
        may_load: false,
        kernel: String::new(),
        programs: Vec::new(),
    };
    MachineFacts { caps, device, knobs, scx: &NO_SCX }
}

#[test]
fn the_builtin_experiment_leaves_out_what_an_ordinary_user_may_not_run() {
    let mut s = parse("quick.toml", BUILTIN_QUICK).unwrap();
    let (user, knobs) = (Capabilities::unprivileged(), KnobFacts::new());
    let unavailable = s.unavailable(&machine(&user, None, &knobs));
    let left_out = s.leave_out(&unavailable);
    let whys: Vec<&str> = left_out.iter().map(|(w, _)| w.as_str()).collect();
    assert_eq!(whys.len(), 2, "one reason per policy: {whys:?}");
    assert!(whys[0].starts_with("policy \"fifo\": SCHED_FIFO priority 50 needs CAP_SYS_NICE"));
    assert!(whys[1].starts_with("policy \"rr\": SCHED_RR priority 50 needs CAP_SYS_NICE"));
    assert_eq!(
        left_out[0].1,
        [
            "cpu/fifo/n2",
            "cpu/fifo/n8",
            "io/fifo/n2",
            "io/fifo/n8",
            "mixed/fifo/n2",
            "mixed/fifo/n8"
        ]
    );
    let kept: Vec<(u32, &str)> = s.plan.cells.iter().map(|c| (c.index, c.key.as_str())).collect();
    assert_eq!(
        kept,
        [
            (0, "cpu/other/n2"),
            (1, "cpu/other/n8"),
            (2, "io/other/n2"),
            (3, "io/other/n8"),
            (4, "mixed/other/n2"),
            (5, "mixed/other/n8")
        ]
    );
    assert!(s.check_allowed(&Capabilities::unprivileged()).is_ok());
    assert_eq!(s.plan.steps().len(), 12, "2 repetitions of each cell kept");
    let root = parse("quick.toml", BUILTIN_QUICK).unwrap();
    assert!(root.unavailable(&machine(&Capabilities::root(), None, &knobs)).is_empty());
    assert_eq!(root.plan.cells.len(), 18);
}

#[test]
fn caret_display_marks_the_column() {
    let e = err("name = \"t\"\n[matrix]\nworkload = [\"pi\"]\nprocesses = [0]\n");
    let shown = e.to_string();
    assert!(shown.contains("t.toml:4:14"), "{shown}");
    assert!(shown.ends_with("|              ^"), "{shown:?}");
}

const LAB: &str = r#"name = "lab"
[matrix]
workload = ["hash"]
processes = [4, 8]
[matrix.groups.bg]
processes = [0, 8, 9]
affinity = ["all", "spread"]
[groups.bg]
workload = "spin"
background = true
cpu_weight = 100
[workloads.spin]
kind = "pi"
iterations = 1_000_000_000
"#;

#[test]
fn groups_multiply_with_their_axes_and_background_comes_last() {
    let s = parse("lab.toml", LAB).unwrap();
    // main: 2 process counts; bg: 3 counts x 2 affinities, but with 0 processes the
    // affinity does not matter -> keys still differ by the affinity tag, so 2 x 6 = 12
    assert_eq!(
        s.plan.cells.len(),
        12,
        "{:#?}",
        s.plan.cells.iter().map(|c| &c.key).collect::<Vec<_>>()
    );
    let c = s
        .plan
        .cells
        .iter()
        .find(|c| c.key == "hash/other/n8+bg.affinity=spread.processes=9")
        .expect("key");
    assert_eq!(c.groups.len(), 2);
    assert_eq!((c.groups[0].name.as_str(), c.groups[0].background), ("main", false));
    assert_eq!(
        (c.groups[1].name.as_str(), c.groups[1].processes, c.groups[1].background),
        ("bg", 9, true)
    );
    assert_eq!(c.groups[1].affinity, Affinity::Spread);
    assert_eq!(c.groups[1].cgroup.cpu_weight, Some(100));
    assert!(c.uses_cgroups());
    assert_eq!(c.processes(), 17);
    let alone =
        s.plan.cells.iter().find(|c| c.key == "hash/other/n4+bg.affinity=all.processes=0").unwrap();
    assert_eq!(alone.groups.len(), 1, "a group with 0 processes is left out");
    assert_eq!(alone.primary().workload, Workload::Hash { hashes: 722_000 });
}

#[test]
fn affinity_spread_and_compact_follow_the_documented_rules() {
    let all = [0, 1];
    let spread: Vec<_> =
        (0..4).map(|i| Affinity::Spread.cpus_for(i, 4, &all).unwrap()[0]).collect();
    assert_eq!(spread, vec![0, 1, 0, 1]);
    let compact: Vec<_> =
        (0..4).map(|i| Affinity::Compact.cpus_for(i, 4, &all).unwrap()[0]).collect();
    assert_eq!(compact, vec![0, 0, 1, 1]);
    let odd: Vec<_> = (0..3).map(|i| Affinity::Compact.cpus_for(i, 3, &all).unwrap()[0]).collect();
    assert_eq!(odd, vec![0, 0, 1]);
    assert_eq!(Affinity::All.cpus_for(0, 4, &all), None);
    assert_eq!(Affinity::List(vec![1]).cpus_for(3, 4, &all), Some(vec![1]));
}

#[test]
fn group_settings_are_validated_where_they_are_written() {
    let base = "name = \"t\"\n[matrix]\nworkload = [\"pi\"]\n[groups.g]\nworkload = \"pi\"\n";
    let e = err(&format!("{base}cpu_weight = 20000\n"));
    assert_eq!(e.line, 6, "{e}");
    assert!(e.message.contains("between 1 and 10000"), "{e}");
    let e = err(&format!("{base}affinity = \"0-x\"\n"));
    assert!(e.message.contains("affinity must be"), "{e}");
    let e = err(&format!("{base}cpu_max = [50000]\n"));
    assert!(e.message.contains("[quota_us, period_us]"), "{e}");
    let e = err(&format!("{base}colour = 1\n"));
    assert!(e.message.contains("unknown field `colour`"), "{e}");
    let e =
        err("name = \"t\"\n[matrix]\nworkload = [\"pi\"]\n[matrix.groups.nope]\nprocesses = [1]\n");
    assert!(e.message.contains("names no group"), "{e}");
}

#[test]
fn cpus_that_do_not_exist_are_reported_with_their_location() {
    let s = parse(
        "t.toml",
        "name = \"t\"\n[matrix]\nworkload = [\"pi\"]\naffinity = [\"spread\", \"0-3\"]\n",
    )
    .unwrap();
    assert!(s.check_cpus(&[0, 1, 2, 3]).is_ok());
    let e = s.check_cpus(&[0, 1]).unwrap_err();
    assert_eq!((e.line, e.col), (4, 23), "{e}");
    assert!(e.message.contains("CPU 2 does not exist") && e.message.contains("online: 0-1"), "{e}");
}

#[test]
fn hash_workload_takes_only_its_own_keys() {
    let s = parse("t.toml", "name = \"t\"\n[matrix]\nworkload = [\"h\"]\n[workloads.h]\nkind = \"hash\"\nhashes = 1000\n").unwrap();
    assert_eq!(s.plan.cells[0].primary().workload, Workload::Hash { hashes: 1000 });
    let e = err("name = \"t\"\n[matrix]\nworkload = [\"h\"]\n[workloads.h]\nkind = \"hash\"\niterations = 5\n");
    assert!(e.message.contains("does not apply"), "{e}");
}

#[test]
fn lab1_example_is_valid_and_has_the_seed_cells() {
    let s = parse("lab1.toml", include_str!("../../../experiments/lab1.toml")).unwrap();
    let keys: Vec<&str> = s.plan.cells.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(keys.len(), 4 * 2 * 2 * 3);
    assert!(keys.contains(&"hash/other/affinity=all/cpu_weight=0/n8+bg.processes=9"), "{keys:?}");
    let w = s
        .plan
        .cells
        .iter()
        .find(|c| c.key == "hash/other/affinity=spread/cpu_weight=200/n8+bg.processes=8")
        .unwrap();
    assert_eq!(w.groups[0].cgroup.cpu_weight, Some(200));
    assert_eq!(w.groups[1].cgroup.cpu_weight, None);
    assert!(w.uses_cgroups());
    let plain = s
        .plan
        .cells
        .iter()
        .find(|c| c.key == "hash/other/affinity=all/cpu_weight=0/n8+bg.processes=9")
        .unwrap();
    assert!(!plain.uses_cgroups(), "weight 0 on the axis means no cgroup");
}

#[test]
fn main_axes_may_not_be_given_twice() {
    let e =
        err("name = \"t\"\n[matrix]\nworkload = [\"pi\"]\n[matrix.groups.main]\nprocesses = [1]\n");
    assert!(e.message.contains("already describe"), "{e}");
}

const RT: &str = r#"name = "rt"
[matrix]
workload = ["set"]
scheduler = ["other", "fifo-rm", "deadline", "dwcs"]
utilisation = [0.25, 0.5]
[workloads.set]
kind = "periodic"
duration_s = 2
generate = { tasks = 4, x = 1, y = 2, seed = 7 }
"#;

#[test]
fn periodic_sets_sweep_scheduler_and_utilisation() {
    let s = parse("rt.toml", RT).unwrap();
    assert_eq!(s.plan.cells.len(), 8);
    let c = &s.plan.cells[7];
    assert_eq!(c.key, "set/dwcs/utilisation=0.5/n4");
    let g = c.primary();
    assert_eq!(g.processes, 4, "one process per task");
    let p = g.workload.periodic().unwrap();
    assert_eq!(p.scheduler, RtScheduler::Dwcs);
    assert_eq!(p.utilisation, Some(0.5));
    let u: f64 = p.tasks.iter().map(|t| t.min_utilisation()).sum();
    assert!((u - 0.5).abs() < 0.05, "generated for U = 0.5 (window minimum), got {u}");
    // The same seed gives the same set in every scheduler's cell.
    assert_eq!(
        s.plan.cells[1].primary().workload.periodic().unwrap().tasks,
        s.plan.cells[7].primary().workload.periodic().unwrap().tasks
    );
    assert_eq!(
        s.plan.cells[2].primary().policy.class,
        Class::Fifo,
        "fifo-rm workers are SCHED_FIFO"
    );
    assert_eq!(s.plan.cells[4].primary().policy.class, Class::Deadline);
    // Scaling shortens the run, never below the longest period.
    let mut plan = s.plan.clone();
    plan.scale(0.001);
    let p = plan.cells[0].primary().workload.periodic().unwrap();
    assert!(p.duration_ns >= p.tasks.iter().map(|t| t.t_ns).max().unwrap());
}

#[test]
fn rm_and_dm_priorities_follow_periods_and_deadlines() {
    let s = parse(
        "rt.toml",
        "name = \"t\"\n[matrix]\nworkload = [\"w\"]\n[workloads.w]\nkind = \"periodic\"\ntasks = [{ c_ms = 1, t_ms = 30, d_ms = 10 }, { c_ms = 1, t_ms = 10 }, { c_ms = 2, t_ms = 20, d_ms = 20 }, { c_ms = 1, t_ms = 10 }]\n",
    )
    .unwrap();
    let p = s.plan.cells[0].primary().workload.periodic().unwrap();
    assert_eq!(p.fifo_priorities(false), vec![88, 90, 89, 90]);
    assert_eq!(p.fifo_priorities(true), vec![90, 90, 89, 90]);
    assert!((p.deadline_bandwidth() - (1.0 / 30.0 + 0.1 + 0.1 + 0.1)).abs() < 1e-9);
    assert_eq!(p.work_ns(&p.tasks[2]), 1_800_000, "90% of C by default");
}

#[test]
fn fifo_rm_and_fifo_dm_sets_are_partitioned_by_rta_admission() {
    // C/T 0.5, 0.443, 0.1 over CPUs 2 and 3. By C/T (dwcs, edf) 0.5 and 0.443 share CPU 2
    // (0.943 <= 1) and 0.1 goes to CPU 3; by RTA (31, 70) beside (20, 40) needs 71 > 70, so
    // it goes to CPU 3, and (10, 100) fits beside (20, 40) on CPU 2.
    let spec = "name = \"t\"\n[matrix]\nworkload = [\"w\"]\nscheduler = [\"dwcs\", \"edf\", \"fifo-rm\", \"fifo-dm\"]\n[workloads.w]\nkind = \"periodic\"\ncpus = \"2-3\"\nquantum_ms = 1\ntasks = [{ c_ms = 20, t_ms = 40 }, { c_ms = 31, t_ms = 70 }, { c_ms = 10, t_ms = 100 }]\n";
    let s = parse("rt.toml", spec).unwrap();
    let placement = |i: usize| s.plan.cells[i].primary().workload.periodic().unwrap().placement(7);
    assert_eq!(placement(0), Some(vec![2, 2, 3]), "dwcs by C/T");
    assert_eq!(placement(1), placement(0), "edf by C/T");
    assert_eq!(placement(2), Some(vec![2, 3, 2]), "fifo-rm by RTA");
    assert_eq!(placement(3), placement(2), "fifo-dm by RTA (deadlines at the periods)");
}

#[test]
fn a_set_on_several_cpus_is_partitioned_and_a_deadline_set_is_not() {
    let spec = "name = \"t\"\n[matrix]\nworkload = [\"w\"]\nscheduler = [\"dwcs\", \"fifo-rm\", \"deadline\"]\n[workloads.w]\nkind = \"periodic\"\ncpus = \"0-1\"\ntasks = [{ c_ms = 10, t_ms = 40 }, { c_ms = 10, t_ms = 20 }, { c_ms = 10, t_ms = 50 }, { c_ms = 10, t_ms = 20 }]\n";
    let s = parse("rt.toml", spec).unwrap();
    let placement = |i: usize| s.plan.cells[i].primary().workload.periodic().unwrap().placement(7);
    // C/T 0.25, 0.5, 0.2, 0.5: the two halves fill CPU 0, the others go to CPU 1.
    assert_eq!(placement(0), Some(vec![1, 0, 1, 0]));
    assert_eq!(placement(1), placement(0), "RTA admits the same partition here");
    assert_eq!(placement(2), None, "SCHED_DEADLINE tasks are global");
    // One CPU in `cpus`, `cpu`, or neither (the default CPU).
    let one = parse("rt.toml", &spec.replace("cpus = \"0-1\"", "cpus = [1]")).unwrap();
    assert_eq!(
        one.plan.cells[0].primary().workload.periodic().unwrap().placement(7),
        Some(vec![1; 4])
    );
    let cpu = parse("rt.toml", &spec.replace("cpus = \"0-1\"", "cpu = 0")).unwrap();
    assert_eq!(
        cpu.plan.cells[0].primary().workload.periodic().unwrap().placement(7),
        Some(vec![0; 4])
    );
    let neither = parse("rt.toml", &spec.replace("cpus = \"0-1\"\n", "")).unwrap();
    assert_eq!(
        neither.plan.cells[0].primary().workload.periodic().unwrap().placement(7),
        Some(vec![7; 4])
    );
    // Both keys, a bad list, or `cpus` on another kind are refused where they are written.
    let e = err(&spec.replace("cpus = \"0-1\"", "cpus = \"0-1\"\ncpu = 0"));
    assert!(e.message.contains("not both") && e.line == 7, "{e}");
    let e = err(&spec.replace("cpus = \"0-1\"", "cpus = \"1-0\""));
    assert!(e.message.contains("runs backwards") && e.line == 7, "{e}");
    let e = err("name = \"t\"\n[matrix]\nworkload = [\"pi\"]\n[workloads.pi]\nkind = \"pi\"\ncpus = \"0\"\n");
    assert!(e.message.contains("`cpus` applies only to a workload of kind \"periodic\""), "{e}");
}

#[test]
fn a_periodic_workload_keeps_its_own_scheduler_unless_an_axis_names_one() {
    let spec = "name = \"t\"\n[matrix]\nworkload = [\"f\", \"d\"]\n[workloads.f]\nkind = \"periodic\"\nscheduler = \"fifo-rm\"\ntasks = [{ c_ms = 2, t_ms = 10 }]\n[workloads.d]\nkind = \"periodic\"\nscheduler = \"deadline\"\ntasks = [{ c_ms = 3, t_ms = 20 }]\n";
    let s = parse("rt.toml", spec).unwrap();
    let sched =
        |s: &Spec, i: usize| s.plan.cells[i].primary().workload.periodic().unwrap().scheduler;
    assert_eq!(s.plan.cells.len(), 2, "one cell per set, not a product of sets and schedulers");
    assert_eq!((sched(&s, 0), sched(&s, 1)), (RtScheduler::FifoRm, RtScheduler::Deadline));
    assert_eq!(s.plan.cells[0].primary().policy.class, Class::Fifo);
    assert_eq!(s.plan.cells[1].primary().policy.class, Class::Deadline);
    let swept = parse(
        "rt.toml",
        &spec.replace("[\"f\", \"d\"]\n", "[\"f\", \"d\"]\nscheduler = [\"edf\"]\n"),
    )
    .unwrap();
    assert!(
        (0..2).all(|i| sched(&swept, i) == RtScheduler::Edf),
        "the axis overrides the workload's own"
    );
    let e = err(&spec.replace("scheduler = \"fifo-rm\"", "scheduler = \"lottery\""));
    assert!(e.message.contains("unknown scheduler \"lottery\"") && e.line == 6, "{e}");
    let e = err("name = \"t\"\n[matrix]\nworkload = [\"w\"]\n[workloads.w]\nkind = \"pi\"\nscheduler = \"edf\"\n");
    assert!(
        e.message.contains("`scheduler` applies only to a workload of kind \"periodic\""),
        "{e}"
    );
}

#[test]
fn periodic_mistakes_are_located() {
    let e = err(&RT.replace("\"dwcs\"]", "\"dwcs\", \"lottery\"]"));
    assert_eq!(e.line, 4, "{e}");
    assert!(
        e.message.contains("unknown scheduler \"lottery\"") && e.message.contains("fifo-rm"),
        "{e}"
    );
    let bad_task = "name = \"t\"\n[matrix]\nworkload = [\"w\"]\n[workloads.w]\nkind = \"periodic\"\ntasks = [{ c_ms = 5, t_ms = 4 }]\n";
    let e = err(bad_task);
    assert_eq!((e.line, e.col), (6, 10), "{e}");
    assert!(e.message.contains("C"), "{e}");
    let e = err(&bad_task.replace("t_ms = 4", "t_ms = 0"));
    assert_eq!(e.line, 6, "{e}");
    let e = err(&bad_task.replace("c_ms = 5, t_ms = 4", "c_ms = 1, t_ms = 4, x = 3, y = 2"));
    assert!(e.message.contains("x (misses tolerated) must not exceed y"), "{e}");
    let e = err("name = \"t\"\n[matrix]\nworkload = [\"w\"]\n[workloads.w]\nkind = \"periodic\"\n");
    assert!(e.message.contains("needs its task set"), "{e}");
    let e = err(&RT.replace("kind = \"periodic\"", "kind = \"periodic\"\niterations = 5"));
    assert!(e.message.contains("`iterations` does not apply"), "{e}");
    let e = err(&format!("{BASE}scheduler = [\"dwcs\"]\n"));
    assert!(e.message.contains("applies to periodic workloads only"), "{e}");
    let e = err(&RT.replace(
        "generate = { tasks = 4, x = 1, y = 2, seed = 7 }",
        "canonical = { tasks = 2, x = 1, y = 2, period_quanta = 2 }",
    ));
    assert!(e.message.contains("needs a generated task set"), "{e}");
    let e = err(&RT.replace("scheduler = [", "policy = [\"fifo\"]\nscheduler = ["));
    assert!(e.message.contains("not by policy"), "{e}");
    let e = err(&RT.replace("utilisation = [0.25, 0.5]", "utilisation = [0.25, 9.0]"));
    assert!(e.message.contains("cannot generate"), "{e}");
}

#[test]
fn canonical_sets_use_the_quantum_as_c() {
    let s = parse(
        "rt.toml",
        "name = \"t\"\n[matrix]\nworkload = [\"w\"]\nscheduler = [\"dwcs\"]\n[workloads.w]\nkind = \"periodic\"\nquantum_ms = 5\ncanonical = { tasks = 3, x = 1, y = 3, period_quanta = 2 }\n",
    )
    .unwrap();
    let p = s.plan.cells[0].primary().workload.periodic().unwrap();
    assert!(p
        .tasks
        .iter()
        .all(|t| t.c_ns == 5_000_000 && t.t_ns == 10_000_000 && (t.x, t.y) == (1, 3)));
    let caps = Capabilities::unprivileged();
    let e = s.check_allowed(&caps).unwrap_err();
    assert!(
        e.message.contains("CAP_SYS_NICE") && e.line == 4,
        "the dispatcher needs RT privileges: {e}"
    );
}

#[test]
fn a_periodic_set_on_a_missing_cpu_is_located() {
    let s = parse("t.toml", &RT.replace("duration_s = 2", "duration_s = 2\ncpu = 7")).unwrap();
    let e = s.check_cpus(&[0, 1]).unwrap_err();
    assert_eq!((e.line, e.col), (9, 7), "{e}");
    assert!(e.message.contains("CPU 7 does not exist"), "{e}");
}

#[test]
fn generated_sets_can_be_canonical() {
    let s = parse("t.toml", &RT.replace("seed = 7 }", "seed = 7, canonical = true }")).unwrap();
    for c in &s.plan.cells {
        let p = c.primary().workload.periodic().unwrap();
        assert!(
            p.tasks.iter().all(|t| t.c_ns == 10_000_000 && t.t_ns % 10_000_000 == 0),
            "{:?}",
            p.tasks
        );
    }
}

#[test]
fn an_unknown_workload_in_a_group_is_an_error_at_its_name_not_a_panic() {
    let e = err("name = \"t\"\n[matrix]\nworkload = [\"pi\"]\n[groups.bg]\nworkload = \"nope\"\nbackground = true\n");
    assert_eq!((e.line, e.col), (5, 12), "{e}");
    assert!(e.message.contains("unknown workload \"nope\""), "{e}");
}

#[test]
fn an_unknown_policy_in_a_group_is_an_error_at_its_name_not_a_panic() {
    let e = err("name = \"t\"\n[matrix]\nworkload = [\"pi\"]\n[groups.bg]\nworkload = \"pi\"\npolicy = \"nope\"\n");
    assert_eq!((e.line, e.col), (6, 10), "{e}");
    assert!(
        e.message.starts_with("unknown policy \"nope\"; define it under [policies.nope]"),
        "{e}"
    );
}

#[test]
fn a_key_dotted_past_the_toml_depth_limit_is_located_at_the_key() {
    let deep = vec!["k"; 120].join(".");
    for (text, col) in
        [(format!("name = \"t\"\n{deep} = 1\n"), 1), (format!("name = \"t\"\n[{deep}]\n"), 2)]
    {
        let e = err(&text);
        assert_eq!((e.line, e.col), (2, col), "{e}");
        assert!(e.message.contains("120 dotted parts"), "{e}");
    }
}

#[test]
fn a_nice_this_process_may_not_set_points_at_the_nice_value() {
    let user = Capabilities::unprivileged();
    let s = parse("t.toml", &format!("{BASE}nice = [0, -5]\n")).unwrap();
    let e = s.check_allowed(&user).unwrap_err();
    assert_eq!((e.line, e.col), (4, 12), "{e}");
    assert!(e.message.contains("RLIMIT_NICE"), "{e}");
}

#[test]
fn device_errors_of_an_implicit_loop_device_point_at_the_io_workload() {
    let s =
        parse("t.toml", "name = \"t\"\n[matrix]\nworkload = [\"pi\", \"par_write\"]\n").unwrap();
    let e = s.check_device(&DeviceFacts::default(), None).unwrap_err();
    assert_eq!((e.line, e.col), (3, 19), "{e}");
    assert!(e.message.contains("CAP_SYS_ADMIN"), "{e}");
}

#[test]
fn cells_whose_scheduler_is_not_offered_or_cannot_be_set_are_unavailable_and_refused_alike() {
    let text =
        "name = \"t\"\n[matrix]\nworkload = [\"par_write\"]\niosched = [\"none\", \"cfq\"]\n";
    let offered = |queue_unwritable: Option<&str>| DeviceFacts {
        privileged: true,
        offered: Some(vec!["none".into(), "mq-deadline".into()]),
        queue_unwritable: queue_unwritable.map(String::from),
        ..DeviceFacts::default()
    };
    let mut s = parse("t.toml", text).unwrap();
    let facts = offered(None);
    let (caps, knobs) = (Capabilities::root(), KnobFacts::new());
    let unavailable = s.unavailable(&machine(&caps, Some(&facts), &knobs));
    assert_eq!(unavailable.len(), 1, "{unavailable:?}");
    assert!(unavailable[0].1.contains("does not offer the I/O scheduler \"cfq\""));
    let e = s.check_device(&facts, None).unwrap_err();
    assert_eq!((e.line, e.col), (4, 20), "the refusal points at the scheduler: {e}");
    assert_eq!(e.message, unavailable[0].1, "a run is refused for what a skip says");
    let left_out = s.leave_out(&unavailable);
    assert_eq!(
        left_out,
        [(unavailable[0].1.clone(), vec!["par_write/other/n1/iosched=cfq".to_string()])]
    );
    assert!(s.check_device(&facts, None).is_ok(), "the other cell runs");
    // A read-only /sys: every cell that sets a scheduler, whatever it is.
    let ro = offered(Some("the iosched axis sets the loop device's I/O scheduler in sysfs, but /sys/block is read-only"));
    let all = parse("t.toml", text).unwrap().unavailable(&machine(&caps, Some(&ro), &knobs));
    assert_eq!(all.len(), 2, "{all:?}");
    assert!(all[0].1.contains("read-only") && all[1].1.contains("cfq"), "{all:?}");
    assert!(s.check_device(&ro, None).unwrap_err().message.contains("/sys/block is read-only"));
}

#[test]
fn a_cell_whose_knob_value_the_kernel_does_not_offer_is_unavailable_alone() {
    let s = parse(
        "t.toml",
        &format!("{BASE}[matrix.knobs]\n\"sched.preempt\" = [\"full\", \"lazy\"]\n"),
    )
    .unwrap();
    let mut facts = KnobFacts::new();
    let offered = vec!["none".to_string(), "voluntary".into(), "full".into()];
    let present = |unwritable: Option<&str>| KnobFact::Present {
        path: "/sys/kernel/debug/sched/preempt".into(),
        value: "full".into(),
        offered: offered.clone(),
        unwritable: unwritable.map(String::from),
    };
    facts.insert("sched.preempt".into(), present(None));
    let caps = Capabilities::root();
    let unavailable = s.unavailable(&machine(&caps, None, &facts));
    let keys: Vec<&str> =
        unavailable.iter().map(|(i, _)| s.plan.cells[*i as usize].key.as_str()).collect();
    assert_eq!(keys, ["pi/other/n1/preempt=lazy"], "{unavailable:?}");
    assert!(unavailable[0].1.contains("this kernel offers none, voluntary, full"));
    facts.insert("sched.preempt".into(), present(Some("/sys/kernel/debug is read-only")));
    assert_eq!(s.unavailable(&machine(&caps, None, &facts)).len(), 2, "unwritable: every cell");
}

#[test]
fn a_cgroup_error_points_at_the_groups_first_cgroup_setting() {
    let s = parse(
        "t.toml",
        "name = \"t\"\n[matrix]\nworkload = [\"pi\"]\ncpuset = [\"0\"]\n[groups.bg]\nworkload = \"pi\"\ncpu_max = [5000, 10000]\ncpu_weight = 50\n",
    )
    .unwrap();
    let at = |g: &str| {
        let e = s.cgroup_error(g, "no cpu controller");
        (e.line, e.col)
    };
    assert_eq!(at("main"), (4, 10));
    assert_eq!(at("bg"), (7, 11));
}

#[test]
fn adaptive_repetitions_parse_with_defaults_and_fixed_ones_stay_fixed() {
    let plan = |r: &str| {
        parse(
            "t.toml",
            &format!("name = \"t\"\nrepetitions = {r}\n[matrix]\nworkload = [\"pi\"]\n"),
        )
        .unwrap()
        .plan
    };
    let p = plan("{ min = 4, max = 20, ci_pct = 2.5 }");
    assert_eq!(
        (p.repetitions, p.adaptive),
        (4, Some(AdaptiveTarget { min: 4, max: 20, ci_pct: 2.5 })),
        "every cell runs min first"
    );
    assert_eq!(
        plan("{ max = 10 }").adaptive,
        Some(AdaptiveTarget { max: 10, ..AdaptiveTarget::AUTO })
    );
    assert_eq!(plan("\"auto\"").adaptive, Some(AdaptiveTarget::AUTO));
    assert_eq!((plan("7").repetitions, plan("7").adaptive), (7, None));
}

#[test]
fn bad_adaptive_repetitions_are_located_and_say_what_is_wanted() {
    for (r, want) in [
        ("{ min = 2, max = 9 }", "repetitions.min must be a whole number from 3"),
        ("{ min = 9, max = 4 }", "repetitions.min (9) must not exceed repetitions.max (4)"),
        (
            "{ min = 3, ci_pct = 0 }",
            "repetitions.ci_pct must be a percentage of the mean above 0 and below 100",
        ),
        ("{ min = 3, ci = 5 }", "unknown key \"ci\" in repetitions"),
        ("0", "repetitions must be a count from 1 to 100000, \"auto\", or { min = 3"),
        ("\"many\"", "repetitions must be a count"),
    ] {
        let e = err(&format!("name = \"t\"\nrepetitions = {r}\n[matrix]\nworkload = [\"pi\"]\n"));
        assert_eq!((e.line, e.col), (2, 15), "{r}: {e}");
        assert!(e.message.contains(want), "{r}: {e}");
    }
}

#[test]
fn an_adaptive_round_follows_the_plans_order_and_a_random_one_its_seed_and_round() {
    let text = "name = \"t\"\nrepetitions = { min = 3 }\norder = \"random\"\nseed = 7\n[matrix]\nworkload = [\"pi\"]\nprocesses = [1, 2, 3, 4, 5, 6]\n";
    let plan = parse("t.toml", text).unwrap().plan;
    let more: Vec<(u32, u32)> = (0..6).rev().map(|c| (c, 3 + c)).collect();
    let r1 = plan.round(1, &more);
    assert_eq!(r1, plan.round(1, &more), "same seed and round, same order");
    let mut got: Vec<(u32, u32, bool)> = r1.iter().map(|s| (s.cell, s.rep, s.warmup)).collect();
    assert_ne!(got.iter().map(|s| s.0).collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5], "shuffled");
    assert_ne!(r1, plan.round(2, &more), "each round its own order");
    got.sort();
    assert_eq!(
        got,
        (0..6).map(|c| (c, 3 + c, false)).collect::<Vec<_>>(),
        "each cell once, at the repetition asked, measured"
    );
    let seq = parse("t.toml", &text.replace("random", "sequential")).unwrap().plan;
    assert_eq!(
        seq.round(1, &more).iter().map(|s| s.cell).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4, 5],
        "in cell order"
    );
}

#[test]
fn fifo_and_rr_sets_run_each_listed_task_at_its_own_priority() {
    let spec = |sched: &str, tasks: &str| {
        format!(
            "name = \"t\"\n[matrix]\nworkload = [\"w\"]\nscheduler = [{sched}]\n[workloads.w]\nkind = \"periodic\"\ntasks = [{tasks}]\n"
        )
    };
    let both = "{ c_ms = 1, t_ms = 10, priority = 10 }, { c_ms = 1, t_ms = 20, priority = 30 }";
    let s = parse("rt.toml", &spec("\"fifo\", \"rr\", \"fifo-rm\"", both)).unwrap();
    let of = |i: usize| {
        let g = s.plan.cells[i].primary();
        (
            g.policy.class,
            g.policy.priority,
            g.workload.periodic().unwrap().task_priorities().unwrap(),
        )
    };
    assert_eq!(
        of(0),
        (Class::Fifo, 30, vec![10, 30]),
        "the group's priority is the highest, for the privilege check"
    );
    assert_eq!(of(1), (Class::Rr, 30, vec![10, 30]));
    assert_eq!(of(2).2, vec![90, 89], "fifo-rm ranks by period whatever the tasks say");

    let e = err(&spec("\"fifo\"", "{ c_ms = 1, t_ms = 10 }"));
    assert!(e.message.contains("scheduler fifo runs each task at its own priority"), "{e}");
    let e = err(&spec("\"rr\"", "{ c_ms = 1, t_ms = 10, priority = 5 }, { c_ms = 1, t_ms = 20 }"));
    assert!(e.message.contains("give every task a `priority`"), "{e}");
    assert_eq!((e.line, e.col), (7, 49), "{e}");
    let e = err(&spec("\"fifo\"", "{ c_ms = 1, t_ms = 10, priority = 99 }"));
    assert!(
        e.message.contains("priority (99 is reserved for the engine) must be between 1 and 98"),
        "{e}"
    );
}

#[test]
fn a_misspelled_field_names_the_field_it_is_closest_to() {
    let e = err("name = \"t\"\n[matrix]\nworkload = [\"cpu\"]\n[workloads.cpu]\nkind = \"pi\"\niteratons = 5\n");
    assert!(e.message.starts_with("unknown field `iteratons`: did you mean `iterations`?"), "{e}");
    assert!(e.message.contains("expected one of"), "the full list stays: {e}");
}

#[test]
fn a_misspelled_workload_names_the_workload_it_is_closest_to() {
    let e = err("name = \"t\"\n[matrix]\nworkload = [\"cpuu\"]\n[workloads.cpu]\nkind = \"pi\"\n");
    assert!(e.message.contains("unknown workload \"cpuu\" (did you mean \"cpu\"?)"), "{e}");
    assert!(e.message.contains("use one of: cpu, pi,"), "the full list stays: {e}");
}

#[test]
fn trace_true_aggregates_in_the_kernel_and_timeline_captures_too() {
    let mode = |text: &str| parse("t.toml", text).unwrap().plan.trace;
    let cells = "[matrix]\nworkload = [\"a\", \"b\"]\n[workloads.a]\nkind = \"pi\"\n[workloads.b]\nkind = \"pi\"\n";
    let t = mode(&format!("name = \"t\"\ntrace = true\n{cells}"));
    assert!(t.all && t.mode == TraceMode::Bpf && t.mode.bpf() && !t.mode.timeline());
    let t = mode(&format!("name = \"t\"\ntrace = \"timeline\"\n{cells}"));
    assert!(t.all && t.mode == TraceMode::TimelineAndBpf && t.mode.timeline());
    // One workload's timeline makes the run's mode the timeline.
    let t = mode(&format!("name = \"t\"\n{cells}").replace(
        "[workloads.b]\nkind = \"pi\"\n",
        "[workloads.b]\nkind = \"pi\"\ntrace = \"timeline\"\n",
    ));
    assert!(!t.all && t.workloads == ["b"] && t.mode == TraceMode::TimelineAndBpf, "{t:?}");
    // Traced both ways in one run: each cell as its workload asks (a benchmark's twins).
    let plan = parse(
        "t.toml",
        &format!("name = \"t\"\n{cells}")
            .replace(
                "[workloads.a]\nkind = \"pi\"\n",
                "[workloads.a]\nkind = \"pi\"\ntrace = true\n",
            )
            .replace(
                "[workloads.b]\nkind = \"pi\"\n",
                "[workloads.b]\nkind = \"pi\"\ntrace = \"timeline\"\n",
            ),
    )
    .unwrap()
    .plan;
    assert_eq!(plan.trace.timeline, ["b"]);
    let by: Vec<(String, TraceMode)> = plan
        .cells
        .iter()
        .map(|c| (c.groups[0].workload_name.clone(), plan.trace_mode(c)))
        .collect();
    assert_eq!(
        by,
        [("a".into(), TraceMode::Bpf), ("b".into(), TraceMode::TimelineAndBpf)],
        "{by:?}"
    );
    // With every cell on the timeline, no list.
    let t = mode(&format!("name = \"t\"\ntrace = \"timeline\"\n{cells}").replace(
        "[workloads.b]\nkind = \"pi\"\n",
        "[workloads.b]\nkind = \"pi\"\ntrace = \"timeline\"\n",
    ));
    assert!(t.timeline.is_empty(), "{t:?}");
    // Untraced: no mode, as before (plans stored then read back as tracefs timelines).
    let t = mode(&format!("name = \"t\"\ntrace = false\n{cells}"));
    assert!(t.is_off() && t.mode == TraceMode::Tracefs);
    let e = err(&format!("name = \"t\"\ntrace = 3\n{cells}"));
    assert_eq!((e.line, e.col), (2, 9), "{e}");
    assert!(e.message.contains("\"timeline\""), "{e}");
}

#[test]
fn a_batch_of_sets_takes_set_0_as_the_cells_set_and_checks_its_keys() {
    let batch =
        RT.replace("seed = 7 }", "seed = 7, sets = 50, live = 2, horizon = \"hyperperiod\" }");
    let s = parse("rt.toml", &batch).unwrap();
    let periodic = |c: &schedlab_plan::Cell| c.primary().workload.periodic().cloned();
    let i = (s.plan.cells.iter())
        .position(|c| periodic(c).is_some_and(|p| p.batch.is_some() && p.utilisation == Some(0.5)))
        .expect("a batch cell at 0.5");
    let p = periodic(&s.plan.cells[i]).unwrap();
    // live = 2: set 1 is a cell of its own right after it, its tasks set 1's, no batch.
    let live = &s.plan.cells[i + 1];
    assert_eq!(live.key, format!("{}/set=1", s.plan.cells[i].key));
    assert_eq!(live.index as usize, i + 1);
    let one = periodic(live).unwrap();
    assert_eq!((one.batch, one.live_set, one.set_index()), (None, Some(1), Some(1)));
    assert_eq!(one.tasks, p.nth_set(1).unwrap().unwrap().1.tasks);
    assert_eq!(live.params().groups[0].set, Some(1));
    assert_eq!(s.plan.cells[i].params().groups[0].set, Some(0));
    let b = p.batch.expect("a batch");
    assert_eq!((b.sets, b.live, b.job_records, b.hyperperiod), (50, 2, false, true));
    assert_eq!(p.set_count(), 50);
    let (seed, first) = p.nth_set(0).unwrap().unwrap();
    assert_eq!(seed, schedlab_plan::set_seed(7, 0, 0.5));
    assert_eq!(p.tasks, first.tasks, "the cell's set is set 0");
    assert_ne!(p.nth_set(1).unwrap().unwrap().1.tasks, p.tasks);
    assert_eq!(p.duration_ns, 2_000_000_000, "the cell keeps its duration");
    assert!(first.duration_ns <= p.duration_ns);
    // One set without a batch: the generator's own seed, as before.
    let one = parse("rt.toml", RT).unwrap();
    assert!(one.plan.cells[7].primary().workload.periodic().unwrap().batch.is_none());
    let e = err(&RT.replace("seed = 7 }", "seed = 7, live = 2 }"));
    assert!(e.message.contains("give `sets = N` too"), "{e}");
    let e = err(&RT.replace("seed = 7 }", "seed = 7, sets = 5, live = 6 }"));
    assert!(e.message.contains("live"), "{e}");
    let e = err(&RT.replace("seed = 7 }", "seed = 7, sets = 5, horizon = \"forever\" }"));
    assert!(e.message.contains("hyperperiod"), "{e}");
    let e = err(&RT.replace("seed = 7 }", "seed = 7, sets = 0 }"));
    assert!(e.message.contains("sets"), "{e}");
}

#[test]
fn work_scale_slows_each_cells_work_by_its_level_and_names_it_in_the_key() {
    let text = "name = \"t\"\n[matrix]\nworkload = [\"cpu\", \"sb\"]\nwork_scale = [1.0, 1.1]\n\
                [workloads.cpu]\nkind = \"pi\"\niterations = 1000\n\
                [workloads.sb]\nkind = \"schbench\"\noperations = 30\nruntime_s = 2\n";
    let s = parse("t.toml", text).unwrap();
    let keys: Vec<&str> = s.plan.cells.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "cpu/other/work_scale=1/n1",
            "cpu/other/work_scale=1.1/n1",
            "sb/other/work_scale=1/n1",
            "sb/other/work_scale=1.1/n1"
        ]
    );
    assert_eq!(s.plan.cells[1].primary().workload, Workload::Pi { iterations: 1100 });
    assert_eq!(s.plan.cells[1].primary().params().work_scale, Some(1.1));
    // A schbench's requests do more operations; it runs as long as before.
    let Workload::Schbench(b) = &s.plan.cells[3].primary().workload else { panic!("schbench") };
    assert_eq!((b.operations, b.runtime_ms), (33, 2000));
}

#[test]
fn work_scale_is_refused_where_there_is_no_work_to_scale_and_out_of_bounds() {
    let e = err("name = \"t\"\n[matrix]\nworkload = [\"ls\"]\nwork_scale = [1.0, 1.1]\n\
                 [workloads.ls]\nkind = \"command\"\nargv = [\"/bin/true\"]\n");
    assert!(e.message.contains("`work_scale` multiplies a workload's work amounts"), "{e}");
    assert!(e.message.contains("a command runs what its argv says"), "{e}");
    let e = err(&format!("{BASE}work_scale = [0.0]\n"));
    assert_eq!((e.line, e.col), (4, 15), "{e}");
    assert!(e.message.contains("more than 0 and at most 100"), "{e}");
}

#[test]
fn a_container_without_a_loop_driver_and_a_read_only_sys_is_refused_for_both() {
    let text = "name = \"t\"\n[matrix]\nworkload = [\"par_write\"]\niosched = [\"none\"]\n";
    let s = parse("t.toml", text).unwrap();
    let facts = DeviceFacts {
        privileged: true,
        offered: Some(vec!["none".into()]),
        loop_unavailable: Some("/dev/loop-control does not exist here".into()),
        queue_unwritable: Some("/sys/block is read-only".into()),
        ..DeviceFacts::default()
    };
    let all = s.check_device_all(&facts, None);
    let said: Vec<&str> = all.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(said, ["/dev/loop-control does not exist here", "/sys/block is read-only"]);
    assert_eq!(s.check_device(&facts, None).unwrap_err().message, said[0], "the first alone");
}
