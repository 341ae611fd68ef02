//! Periodic task sets from TOML through the simulator, checked task by task against
//! schedules worked by hand.

use schedlab_model::{CellRecord, CellStatus, RtTask};
use schedlab_spec::Plan;

use schedlab_simrun::{simulate_cell, simulate_plan, unsupported, Params};

const MS: u64 = 1_000_000;

fn plan(body: &str) -> Plan {
    let text = format!("name = \"rt\"\n{body}");
    schedlab_spec::parse("rt.toml", &text).unwrap_or_else(|e| panic!("{e}")).plan
}

/// No switch or migration costs: the textbook schedules.
fn params(cpus: usize) -> Params {
    Params::new(cpus, 1.0, 0, 0).without_costs()
}

fn sim_key(plan: &Plan, key: &str, p: &Params) -> CellRecord {
    let cell = plan.cells.iter().find(|c| c.key == key).unwrap_or_else(|| panic!("no cell {key}"));
    simulate_cell(cell, p, schedlab_simrun::horizon(plan), false).record
}

fn tasks(r: &CellRecord) -> Vec<RtTask> {
    assert_eq!(r.status, CellStatus::Ok, "{:?}", r.message);
    r.samples
        .iter()
        .map(|s| s.rt().cloned().unwrap_or_else(|| panic!("no rt in sample {}", s.index)))
        .collect()
}

/// (jobs, met, misses) per task.
fn outcomes(t: &[RtTask]) -> Vec<(u64, u64, u64)> {
    t.iter().map(|t| (t.jobs, t.met, t.misses)).collect()
}

/// T1 = (2, 4), T2 = (3, 6) ms: U = 1 exactly. Jobs do all of C (work_fraction = 1).
const U1: &str = r#"[matrix]
workload = ["set"]
scheduler = ["fifo-rm", "fifo-dm", "edf", "dwcs"]
[workloads.set]
kind = "periodic"
duration_s = 0.024
quantum_ms = 1
work_fraction = 1.0
tasks = [{ c_ms = 2, t_ms = 4 }, { c_ms = 3, t_ms = 6 }]
"#;

/// RM: T1 runs 0-2, 4-6; T2 runs 2-4 and misses its deadline at 6 with 1 ms left; the job
/// loop finishes it late at 7 and starts job 1 (due 12), which ends exactly at 12. The
/// hyperperiod (12 ms) repeats: T2 misses jobs 0 and 2 of 4.
#[test]
fn rate_monotonic_misses_a_u1_set_that_edf_meets() {
    let plan = plan(U1);
    let p = params(2);
    let rm = tasks(&sim_key(&plan, "set/fifo-rm/n2", &p));
    assert_eq!(outcomes(&rm), vec![(6, 6, 0), (4, 2, 2)]);
    let t2 = &rm[1];
    // Responses 7, 6, 7, 6 ms; lateness 7 - 6 = 1 ms.
    assert_eq!(
        (t2.response_mean_ns, t2.response_max_ns, t2.lateness_max_ns),
        (Some(6.5e6), Some(7 * MS), Some(MS as i64))
    );
    // A 0/0 window counts every miss: windows of one deadline.
    assert_eq!(
        (t2.fixed_windows, t2.fixed_violations, t2.sliding_windows, t2.sliding_violations),
        (4, 2, 4, 2)
    );
    assert_eq!(t2.time_in_violation_pct, 50.0);
    assert_eq!(
        (t2.source.as_str(), t2.cpu_mean_ns, t2.c_ns, t2.t_ns, t2.d_ns),
        ("sim", Some(3e6), 3 * MS, 6 * MS, 6 * MS)
    );
    assert_eq!(rm[0].response_max_ns, Some(2 * MS));
    // Per job, T2 under RM: (release, start, finish) in ms after the release, met.
    let rec = sim_key(&plan, "set/fifo-rm/n2", &p);
    let log = rec.samples[1].jobs.as_ref().expect("per-job records");
    assert_eq!((log.source.as_str(), log.d_ns, log.met()), ("sim", 6 * MS, 2));
    let ms = |x: Option<u64>| x.map(|v| v as f64 / MS as f64);
    let jobs: Vec<_> = log
        .jobs
        .iter()
        .map(|j| (j.release_ns / MS, ms(j.start_ns), ms(j.finish_ns), j.met))
        .collect();
    assert_eq!(
        jobs,
        vec![
            (0, Some(2.0), Some(7.0), false),
            (6, Some(1.0), Some(6.0), true),
            (12, Some(2.0), Some(7.0), false),
            (18, Some(1.0), Some(6.0), true)
        ]
    );
    // D = T: deadline monotonic is rate monotonic.
    assert_eq!(outcomes(&tasks(&sim_key(&plan, "set/fifo-dm/n2", &p))), outcomes(&rm));
    // EDF: T1 0-2, T2 2-5, T1 5-7, T2 7-10, T1 10-12: every deadline met.
    let edf_rec = sim_key(&plan, "set/edf/n2", &p);
    let edf = tasks(&edf_rec);
    assert_eq!(outcomes(&edf), vec![(6, 6, 0), (4, 4, 0)]);
    // T1 responds in 2, 3, 4 ms, T2 in 5, 4 ms (whole quanta: no padding).
    assert_eq!((edf[0].response_mean_ns, edf[0].response_max_ns), (Some(3e6), Some(4 * MS)));
    assert_eq!((edf[1].response_mean_ns, edf[1].response_max_ns), (Some(4.5e6), Some(5 * MS)));
    assert_eq!(edf[1].time_in_violation_pct, 0.0);
    // The samples: completed jobs as work units, pinned to the last CPU, a sleep between jobs.
    let s = &edf_rec.samples[1];
    assert_eq!((s.work_units, s.allowed_cpus.as_slice(), s.voluntary_csw), (4.0, &[1u32][..], 3));
    assert_eq!(s.extra.sim.as_ref().unwrap().policy, "edf");
    let rt = edf_rec.rt.as_ref().expect("cell rt");
    assert_eq!(
        (rt.scheduler.as_str(), rt.cpu, rt.quantum_ns, rt.utilisation),
        ("edf", 1, MS, None)
    );
    assert!(
        (rt.plain_utilisation - 1.0).abs() < 1e-12 && (rt.min_utilisation - 1.0).abs() < 1e-12,
        "{rt:?}"
    );
    assert!(rt.dispatcher.is_none());
}

/// The seed's DWCS pair scaled to ms: C = T = 1 ms, W = 1/2 each, so each task needs the
/// whole CPU but may lose every other deadline (minimum utilisation 1/2 + 1/2 = 1).
const PAIR: &str = r#"[matrix]
workload = ["pair"]
scheduler = ["dwcs", "edf"]
[workloads.pair]
kind = "periodic"
duration_s = 0.006
quantum_ms = 1
tasks = [{ c_ms = 1, t_ms = 1, x = 1, y = 2 }, { c_ms = 1, t_ms = 1, x = 1, y = 2 }]
"#;

/// DWCS alternates (t0 serviced at 0, 2, 4; t1 at 1, 3, 5): each task meets 3 of 6
/// deadlines and never violates its window. Jobs do 0.9 ms of work in a 1 ms quantum, so
/// they respond in 0.9 ms. EDF breaks the tie for t0 every time and starves t1: every
/// window of t1 after its first deadline is violated.
#[test]
fn dwcs_keeps_the_seeds_pair_inside_its_windows_and_edf_does_not() {
    let plan = plan(PAIR);
    let p = params(1);
    let dwcs_rec = sim_key(&plan, "pair/dwcs/n2", &p);
    let dwcs = tasks(&dwcs_rec);
    assert_eq!(outcomes(&dwcs), vec![(6, 3, 3), (6, 3, 3)]);
    for t in &dwcs {
        assert_eq!(
            (t.fixed_windows, t.fixed_violations, t.sliding_windows, t.sliding_violations),
            (3, 0, 5, 0),
            "{t:?}"
        );
        assert_eq!(t.time_in_violation_pct, 0.0);
        assert_eq!((t.response_mean_ns, t.response_max_ns), (Some(0.9e6), Some(900_000)));
        assert_eq!(t.lateness_max_ns, Some(-100_000));
    }
    // Each task worked 0.9 ms in each of its 3 serviced quanta; the rest of each quantum idled.
    assert!(
        dwcs_rec.samples.iter().all(|s| (s.user_s - 2.7e-3).abs() < 1e-12),
        "{:?}",
        dwcs_rec.samples
    );
    let rt = dwcs_rec.rt.as_ref().unwrap();
    assert_eq!((rt.cpu, rt.guaranteed), (0, true), "one CPU: CPU 0; {rt:?}");
    assert!((rt.min_utilisation - 1.0).abs() < 1e-12 && (rt.plain_utilisation - 2.0).abs() < 1e-12);
    let edf_rec = sim_key(&plan, "pair/edf/n2", &p);
    let edf = tasks(&edf_rec);
    assert_eq!(outcomes(&edf), vec![(6, 6, 0), (6, 0, 6)]);
    // t1 never ran; its worker ends when its last job is dropped, at 6 ms.
    assert_eq!((edf_rec.samples[1].end_offset_s, edf_rec.samples[1].work_units), (0.006, 0.0));
    assert_eq!(edf_rec.makespan_s, 0.006);
    let t1 = &edf[1];
    assert_eq!(
        (t1.fixed_windows, t1.fixed_violations, t1.sliding_windows, t1.sliding_violations),
        (3, 3, 5, 5)
    );
    // Trailing windows: M (1 miss, tolerated), then MM five times.
    assert!((t1.time_in_violation_pct - 500.0 / 6.0).abs() < 1e-9, "{}", t1.time_in_violation_pct);
    assert_eq!(
        (t1.response_mean_ns, t1.response_max_ns, t1.cpu_mean_ns),
        (None, None, None),
        "no job of t1 finished"
    );
}

/// The seed's single DWCS task, C = 1, T = 2, W = 1/2, in ms with a 1 ms quantum: one
/// quantum per period, every deadline met.
#[test]
fn the_seeds_single_dwcs_task_gets_one_quantum_per_period() {
    let plan = plan(
        &PAIR
            .replace(
                "tasks = [{ c_ms = 1, t_ms = 1, x = 1, y = 2 }, { c_ms = 1, t_ms = 1, x = 1, y = 2 }]",
                "tasks = [{ c_ms = 1, t_ms = 2, x = 1, y = 2 }]",
            )
            .replace("0.006", "0.016"),
    );
    let t = tasks(&sim_key(&plan, "pair/dwcs/n1", &params(2)));
    assert_eq!(outcomes(&t), vec![(8, 8, 0)]);
    assert_eq!(
        (t[0].fixed_windows, t[0].sliding_windows, t[0].fixed_violations + t[0].sliding_violations),
        (4, 7, 0)
    );
}

/// With `fill`, jobs take their own work (0.9 ms) and the next task starts at once; without,
/// each job holds whole quanta (checked above through the 0.9 ms responses).
#[test]
fn fill_gives_jobs_their_own_length() {
    let plan = plan(&PAIR.replace("quantum_ms = 1", "quantum_ms = 1\nfill = true"));
    let edf = tasks(&sim_key(&plan, "pair/edf/n2", &params(1)));
    // t0 runs 0-0.9, t1 0.9-1 (dropped at 1), and so on: t1 never finishes.
    assert_eq!(outcomes(&edf), vec![(6, 6, 0), (6, 0, 6)]);
    assert_eq!(edf[0].response_max_ns, Some(900_000));
}

/// SCHED_DEADLINE runs unpinned: two tasks of utilisation 0.9 each meet every deadline on
/// two CPUs, one per CPU, and the cell's CPU is "none" (u32::MAX) as the engine records it.
#[test]
fn deadline_sets_are_global_and_admission_is_per_task() {
    let spec = r#"[matrix]
workload = ["set"]
scheduler = ["deadline"]
[workloads.set]
kind = "periodic"
duration_s = 0.1
work_fraction = 1.0
tasks = [{ c_ms = 9, t_ms = 10 }, { c_ms = 9, t_ms = 10 }]
"#;
    let plan = plan(spec);
    let r = sim_key(&plan, "set/deadline/n2", &params(2));
    let t = tasks(&r);
    assert_eq!(outcomes(&t), vec![(10, 10, 0), (10, 10, 0)]);
    let mut cpus: Vec<_> = r.samples.iter().map(|s| s.extra.cpu.unwrap()).collect();
    cpus.sort_unstable();
    assert_eq!(cpus, [0, 1]);
    assert!(r.samples.iter().all(|s| s.allowed_cpus.is_empty()));
    assert_eq!(r.rt.as_ref().unwrap().cpu, u32::MAX);
    // 1.8 > 1 CPU x 0.95: the kernel's admission test refuses it on one CPU.
    let one = sim_key(&plan, "set/deadline/n2", &params(1));
    assert_eq!(one.status, CellStatus::Failed);
    let msg = one.message.unwrap();
    assert!(msg.contains("admission refused") && msg.contains("1.800"), "{msg}");
}

/// An overloaded set (U = 1.3 on one CPU) misses under every scheduler; the job loop skips
/// what it cannot start in time and the dispatcher drops what is late, so every job is
/// judged and the set ends shortly after its duration.
#[test]
fn an_overloaded_set_misses_under_every_scheduler_and_ends() {
    let spec = r#"[matrix]
workload = ["set"]
scheduler = ["other", "fifo-rm", "fifo-dm", "deadline", "edf", "dwcs"]
[workloads.set]
kind = "periodic"
duration_s = 1
work_fraction = 1.0
tasks = [{ c_ms = 6, t_ms = 10 }, { c_ms = 12, t_ms = 20 }, { c_ms = 4, t_ms = 40 }]
"#;
    let plan = plan(spec);
    // Deadline on one CPU is refused (1.3 > 0.95); all others run on one CPU.
    let p = params(1);
    for key in ["set/other/n3", "set/fifo-rm/n3", "set/fifo-dm/n3", "set/edf/n3", "set/dwcs/n3"] {
        let r = sim_key(&plan, key, &p);
        let t = tasks(&r);
        assert_eq!(t.iter().map(|t| t.jobs).collect::<Vec<_>>(), [100, 50, 25], "{key}");
        assert!(t.iter().all(|t| t.met + t.misses == t.jobs), "{key}");
        // 0.3 s of the 1.3 s of demand cannot be served: at least 25 jobs of 12 ms.
        let misses: u64 = t.iter().map(|t| t.misses).sum();
        assert!(misses >= 25, "{key}: {misses} misses");
        assert!(r.makespan_s < 1.05, "{key}: makespan {}", r.makespan_s);
    }
}

#[test]
fn what_the_simulator_cannot_model_is_refused_with_a_reason() {
    let p = params(2);
    let reason = |spec: &str| -> String {
        let plan = plan(spec);
        let u = unsupported(&plan, &p);
        assert_eq!(u.len(), plan.cells.len(), "{u:?}");
        u[0].reason.clone()
    };
    let read = U1.replace("work_fraction = 1.0", "body = \"read\"");
    let r = reason(&read);
    assert!(r.contains("body = \"read\"") && r.contains("I/O") && r.contains("spin"), "{r}");
    // The dispatcher's grid: a 4 ms period in 3 ms quanta.
    let off_grid =
        U1.replace("quantum_ms = 1", "quantum_ms = 3").replace("\"fifo-rm\", \"fifo-dm\", ", "");
    let r = reason(&off_grid);
    assert!(r.contains("3 ms quanta") && r.contains("task 0") && r.contains("T = 4 ms"), "{r}");
    // ... which the job-loop schedulers do not have.
    assert!(unsupported(
        &plan(&U1.replace("quantum_ms = 1", "quantum_ms = 3").replace(", \"edf\", \"dwcs\"", "")),
        &p
    )
    .is_empty());
    let pinned = U1.replace("quantum_ms = 1", "quantum_ms = 1\ncpu = 3");
    let r = reason(&pinned);
    assert!(r.contains("CPU 3") && r.contains("2 CPUs"), "{r}");
    let beside =
        format!("{U1}[matrix.groups.bg]\nprocesses = [1]\n[groups.bg]\nworkload = \"pi\"\n");
    let r = reason(&beside);
    assert!(r.contains("beside other groups"), "{r}");
    // A refused cell is stored as failed, with the reason.
    let plan = plan(&read);
    let rec = simulate_cell(&plan.cells[0], &p, schedlab_simrun::horizon(&plan), false).record;
    assert_eq!(rec.status, CellStatus::Failed);
    assert!(rec.message.unwrap().starts_with("cannot be simulated: its jobs read"));
}

#[test]
fn the_same_generated_experiment_gives_the_same_records() {
    // A generated set per utilisation, every scheduler, two repetitions.
    let spec = r#"repetitions = 2
[workloads.set]
kind = "periodic"
generate = { tasks = 4, x = 1, y = 2, seed = 11 }
duration_s = 2
[matrix]
utilisation = [0.5, 0.9]
scheduler = ["other", "fifo-rm", "deadline", "edf", "dwcs"]
workload = ["set"]
"#;
    let run = || {
        let mut out = Vec::new();
        simulate_plan(&plan(spec), &Params::new(2, 1.0, 0, 0), None, |r| -> Result<(), ()> {
            out.push(r);
            Ok(())
        })
        .unwrap();
        out
    };
    let (a, b) = (run(), run());
    assert_eq!(a.len(), 20);
    assert_eq!(a, b);
    assert!(
        a.iter().all(|r| r.status == CellStatus::Ok && r.rt.is_some()),
        "{:?}",
        a.iter().map(|r| &r.message).collect::<Vec<_>>()
    );
    assert!(a
        .iter()
        .flat_map(|r| &r.samples)
        .all(|s| s.rt().is_some_and(|t| t.jobs > 0 && t.source == "sim")));
    // Repetitions of a deterministic simulation are the same record.
    let (r0, r1) = (a.iter().find(|r| r.rep == 0).unwrap(), a.iter().find(|r| r.rep == 1).unwrap());
    assert_eq!(r0.samples, r1.samples);
    // Minimum utilisation 0.9 with x/y = 1/2 is 1.8 of plain utilisation on one CPU: rate
    // monotonic misses, and more than at 0.5.
    let misses = |u: &str| -> u64 {
        let r = a
            .iter()
            .find(|r| r.params.key == format!("set/fifo-rm/utilisation={u}/n4"))
            .expect("cell");
        assert_eq!(r.rt.as_ref().unwrap().utilisation, Some(u.parse().unwrap()));
        r.samples.iter().map(|s| s.rt().unwrap().misses).sum()
    };
    assert!(misses("0.9") > misses("0.5"));
}

/// The U1 set with the priorities the other way round from RM (`fifo`: each task's own, as an
/// rt-app file gives them): T2 (priority 20) runs 0-3, 6-9, 12-15, 18-21; T1 (priority 10)
/// runs in between and finishes jobs 0, 1, 3 and 4 late (at 5, 10, 17 and 22) and jobs 2 and 5
/// exactly at their deadlines (12, 24). Under `rr` the priorities differ, so it is the same.
#[test]
fn a_set_under_fifo_runs_each_task_at_its_own_priority() {
    let text = U1
        .replace(
            r#"scheduler = ["fifo-rm", "fifo-dm", "edf", "dwcs"]"#,
            r#"scheduler = ["fifo", "rr", "fifo-rm"]"#,
        )
        .replace(
            "{ c_ms = 2, t_ms = 4 }, { c_ms = 3, t_ms = 6 }",
            "{ c_ms = 2, t_ms = 4, priority = 10 }, { c_ms = 3, t_ms = 6, priority = 20 }",
        );
    let plan = plan(&text);
    let p = params(2);
    let fifo = tasks(&sim_key(&plan, "set/fifo/n2", &p));
    assert_eq!(outcomes(&fifo), vec![(6, 2, 4), (4, 4, 0)]);
    assert_eq!(outcomes(&tasks(&sim_key(&plan, "set/rr/n2", &p))), outcomes(&fifo));
    // The same tasks under fifo-rm ignore the priorities: T1, the shorter period, first.
    assert_eq!(outcomes(&tasks(&sim_key(&plan, "set/fifo-rm/n2", &p))), vec![(6, 6, 0), (4, 2, 2)]);
}

/// The calibrated costs (`simulate --calibrated`) reach a set the kernel schedules, and not
/// one the live dispatcher runs in whole quanta. One task C = 2 ms, T = 10 ms; a release
/// latency of 0.1 ms and a tick of 0.1 ms every 1 ms: the tick [0, 0.1), the job ready at 0.1
/// runs [0.1, 1), [1.1, 2) and [2.1, 2.3) between ticks: R = 2.3 ms under fifo-rm, 2 ms
/// under edf.
#[test]
fn calibrated_costs_hold_up_a_fifo_set_and_not_the_dispatchers() {
    let set = r#"{ kind = "periodic", duration_s = 0.02, quantum_ms = 1, tasks = [{ c_ms = 2, t_ms = 10 }], work_fraction = 1.0 }"#;
    let plan = plan(&format!(
        "workloads.set = {set}\n[matrix]\nworkload = [\"set\"]\nscheduler = [\"fifo-rm\", \"edf\"]\n"
    ));
    let o = schedlab_schedulability::Overheads {
        release_latency: MS / 10,
        tick: MS / 10,
        tick_period: MS,
        ..Default::default()
    };
    let p = schedlab_simrun::overheads::with_overheads(params(1), &o, Some(7));
    let rm = sim_key(&plan, "set/fifo-rm/n1", &p);
    assert_eq!(tasks(&rm)[0].response_max_ns, Some(2_300_000));
    let model = rm.samples[0].extra.sim.as_ref().expect("a simulated sample").model.clone();
    assert_eq!(model.calibration, Some(7), "the stored model names its calibration");
    let edf = sim_key(&plan, "set/edf/n1", &p);
    assert_eq!(tasks(&edf)[0].response_max_ns, Some(2 * MS));
}
