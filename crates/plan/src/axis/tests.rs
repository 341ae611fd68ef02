use super::*;
use crate::{Class, Periodic, PeriodicBody, Policy, RtScheduler, TaskSource, Workload};
use schedlab_model::CellRecord;

fn group(name: &str) -> Group {
    Group::new(name, "cpu", Workload::Pi { iterations: 1000 }, 4)
}

fn fifo(g: &mut Group, priority: u32) {
    g.policy_name = "fifo".into();
    g.policy = Policy::rt(Class::Fifo, priority);
}

fn periodic(g: &mut Group, scheduler: RtScheduler, utilisation: f64) {
    let tasks = vec![crate::TaskParams {
        c_ns: 1_000_000,
        t_ns: 10_000_000,
        d_ns: None,
        x: 0,
        y: 0,
        phase_ns: 0,
    }];
    let p = Periodic {
        tasks,
        source: TaskSource::Explicit,
        body: PeriodicBody::Spin,
        duration_ns: 1_000_000_000,
        quantum_ns: 10_000_000,
        cpu: Some(0),
        cpus: vec![],
        work_ppm: 900_000,
        fill: false,
        scheduler,
        utilisation: Some(utilisation),
        priorities: Vec::new(),
        batch: None,
        live_set: None,
    };
    g.workload_name = "set".into();
    g.policy_name = scheduler.name().into();
    g.workload = Workload::Periodic(Box::new(p));
}

#[test]
fn every_axis_has_one_name_and_is_found_by_it() {
    for (i, a) in AXES.iter().enumerate() {
        assert!(AXES[..i].iter().all(|b| b.name != a.name), "{} is defined twice", a.name);
        assert_eq!(by_name(a.name), Some(*a));
        assert!(!a.header.is_empty(), "{} has no table column", a.name);
    }
    assert_eq!(by_name("colour"), None);
}

/// One value of each axis on a group or cell, with how the key shows it for the main group
/// and for another: the key is written from the value's label, and the stored parameters
/// must give back that same label.
#[test]
fn each_axis_value_reads_back_from_its_stored_parameters_as_the_key_spells_it() {
    type Setter = fn(&mut Group, &mut Option<IoSetting>);
    let cases: Vec<(&Axis, AxisValue, Setter, &str, &str)> = vec![
        (&WORKLOAD, AxisValue::Name("cpu".into()), |_, _| {}, "cpu/other/n4", "bg.workload=cpu"),
        (
            &POLICY,
            AxisValue::Name("fifo".into()),
            |g, _| fifo(g, 50),
            "cpu/fifo/n4",
            "bg.policy=fifo",
        ),
        (&PRIORITY, AxisValue::Int(7), |g, _| fifo(g, 7), "cpu/fifo:7/n4", "bg.priority=7"),
        (&NICE, AxisValue::Int(-5), |g, _| g.policy.nice = -5, "cpu/other/nice-5/n4", "bg.nice=-5"),
        (
            &AFFINITY,
            AxisValue::Affinity(Affinity::List(vec![0, 1])),
            |g, _| g.affinity = Affinity::List(vec![0, 1]),
            "cpu/other/affinity=0,1/n4",
            "bg.affinity=0,1",
        ),
        (
            &CPU_WEIGHT,
            AxisValue::Int(200),
            |g, _| g.cgroup.cpu_weight = Some(200),
            "cpu/other/cpu_weight=200/n4",
            "bg.cpu_weight=200",
        ),
        // 0 on the axis is no weight: stored as none, read back as the axis wrote it.
        (&CPU_WEIGHT, AxisValue::Int(0), |_, _| {}, "cpu/other/cpu_weight=0/n4", "bg.cpu_weight=0"),
        (
            &CPU_MAX,
            AxisValue::CpuMax((50_000, 100_000)),
            |g, _| g.cgroup.cpu_max = Some((50_000, 100_000)),
            "cpu/other/cpu_max=50000:100000/n4",
            "bg.cpu_max=50000:100000",
        ),
        (
            &CPUSET,
            AxisValue::Cpus(vec![0, 1, 3]),
            |g, _| g.cgroup.cpuset = Some(vec![0, 1, 3]),
            "cpu/other/cpuset=0-1,3/n4",
            "bg.cpuset=0-1,3",
        ),
        (&PROCESSES, AxisValue::Int(4), |_, _| {}, "cpu/other/n4", "bg.processes=4"),
        (
            &SCHEDULER,
            AxisValue::Name("dwcs".into()),
            |g, _| periodic(g, RtScheduler::Dwcs, 0.5),
            "set/dwcs/n4",
            "bg.scheduler=dwcs",
        ),
        (
            &UTILISATION,
            AxisValue::Float(0.75),
            |g, _| periodic(g, RtScheduler::Edf, 0.75),
            "set/edf/utilisation=0.75/n4",
            "bg.utilisation=0.75",
        ),
        (
            &SLICE,
            AxisValue::Int(3000),
            |g, _| g.policy.slice_ns = Some(3_000_000),
            "cpu/other/slice_us=3000/n4",
            "bg.slice_us=3000",
        ),
        (
            &WORK_SCALE,
            AxisValue::Float(1.03),
            |g, _| g.work_scale = Some(1.03),
            "cpu/other/work_scale=1.03/n4",
            "bg.work_scale=1.03",
        ),
        (
            &IOSCHED,
            AxisValue::Io(IoSetting {
                name: "fast".into(),
                scheduler: "mq-deadline".into(),
                tunables: vec![],
            }),
            |_, io| {
                *io = Some(IoSetting {
                    name: "fast".into(),
                    scheduler: "mq-deadline".into(),
                    tunables: vec![],
                })
            },
            "cpu/other/n4/iosched=fast",
            "bg/iosched=fast",
        ),
        (
            &CPU_SCHEDULER,
            AxisValue::CpuScheduler(
                crate::CpuScheduler::parse("scx:/usr/bin/scx_lavd:--performance").unwrap(),
            ),
            |_, _| {},
            "cpu/other/n4/cpu_scheduler=scx_lavd:--performance",
            "bg/cpu_scheduler=scx_lavd:--performance",
        ),
    ];
    for a in AXES {
        assert!(cases.iter().any(|(b, ..)| b == a), "no case for the {} axis", a.name);
    }
    for (a, value, set, main_key, other_key) in cases {
        for (name, want) in [(MAIN, main_key), ("bg", other_key)] {
            let mut g = group(name);
            let mut io = None;
            set(&mut g, &mut io);
            let tag = vec![(a, value.label())];
            let (group_tags, cell_tags) =
                if a.scope == Scope::Cell { (vec![], tag) } else { (tag, vec![]) };
            let key = cell_key(vec![group_key(name, Some(&g), &group_tags)], &cell_tags);
            assert_eq!(key, want, "the {} axis", a.name);
            let rt = g.workload.periodic().map(|p| p.cell_rt(None));
            let cpu_scheduler = match &value {
                AxisValue::CpuScheduler(s) => Some(s.clone()),
                _ => None,
            };
            let cell = crate::Cell {
                index: 0,
                key,
                groups: vec![g],
                io,
                knobs: Default::default(),
                cpu_scheduler,
            };
            let record = CellRecord { params: cell.params(), rt, ..Default::default() };
            assert_eq!(
                (a.stored)(&record, &record.params.groups[0]),
                Some(value.label()),
                "the {} axis's stored value",
                a.name
            );
        }
    }
}

#[test]
fn the_main_key_shows_a_priority_only_where_it_acts() {
    let mut g = group(MAIN);
    fifo(&mut g, DEFAULT_RT_PRIORITY);
    assert_eq!(group_key(MAIN, Some(&g), &[]), "cpu/fifo/n4", "the default priority is left out");
    fifo(&mut g, 98);
    assert_eq!(
        group_key(MAIN, Some(&g), &[]),
        "cpu/fifo:98/n4",
        "a policy's own priority is shown"
    );
    let other = group("bg");
    assert_eq!(
        group_key("bg", Some(&other), &[(&PRIORITY, "5".into())]),
        "bg",
        "a priority on a fair class has no effect"
    );
    assert_eq!(group_key(MAIN, None, &[(&PROCESSES, "0".into())]), "main.processes=0");
    let mut rt = group(MAIN);
    fifo(&mut rt, 50);
    assert_eq!(
        group_key(MAIN, Some(&rt), &[(&SLICE, "300".into())]),
        "cpu/fifo/n4",
        "a slice on an RT class has no effect"
    );
    assert_eq!(group_key("bg", Some(&rt), &[(&SLICE, "300".into())]), "bg");
    assert_eq!(
        cell_key(vec!["cpu/other/n4".into(), String::new(), "bg.nice=5".into()], &[]),
        "cpu/other/n4+bg.nice=5"
    );
}
