//! A mock run shaped like seed 000's: cpu/io/mixed x other/fifo/rr x 10/50/500 processes,
//! three repetitions, per-process figures from its Figure 12 (so tests need neither root
//! nor time). The repetitions differ by a fixed -3%/0/+3% so intervals have width.

use crate::html::RunMeta;
use schedlab_model::{CellParams, CellRecord, Environment, GroupParams, Sample};

/// (workload, kind, policy, [per count: wall/child, user/child, preempted/child, blocked/child]).
type Row = (&'static str, &'static str, &'static str, [(f64, f64, f64, f64); 3]);

const SEED_FIG12: [Row; 9] = [
    (
        "cpu",
        "pi",
        "other",
        [(1.284, 5.040, 687.0, 2.0), (1.268, 5.044, 1308.0, 2.0), (1.777, 7.065, 1824.0, 2.0)],
    ),
    (
        "cpu",
        "pi",
        "fifo",
        [(2.055, 6.356, 5.0, 2.0), (1.800, 6.536, 7.0, 1.0), (1.858, 7.047, 7.0, 1.0)],
    ),
    (
        "cpu",
        "pi",
        "rr",
        [(1.868, 6.482, 21.0, 2.0), (1.771, 6.594, 25.0, 2.0), (1.869, 7.106, 27.0, 2.0)],
    ),
    (
        "io",
        "copy",
        "other",
        [(1.136, 0.002, 2.0, 269.0), (0.354, 0.001, 2.0, 339.0), (0.123, 0.001, 1.0, 327.0)],
    ),
    (
        "io",
        "copy",
        "fifo",
        [(0.550, 0.001, 0.0, 201.0), (0.240, 0.001, 0.0, 250.0), (0.108, 0.001, 0.0, 286.0)],
    ),
    (
        "io",
        "copy",
        "rr",
        [(0.564, 0.001, 0.0, 201.0), (0.198, 0.001, 0.0, 201.0), (0.103, 0.001, 0.0, 267.0)],
    ),
    (
        "mixed",
        "mixed",
        "other",
        [(2.242, 2.530, 366.0, 497.0), (0.955, 2.521, 665.0, 505.0), (0.833, 3.176, 923.0, 473.0)],
    ),
    (
        "mixed",
        "mixed",
        "fifo",
        [(2.173, 2.924, 0.0, 426.0), (1.116, 3.056, 0.0, 428.0), (0.929, 3.495, 3.0, 373.0)],
    ),
    (
        "mixed",
        "mixed",
        "rr",
        [(2.279, 3.000, 12.0, 434.0), (1.142, 3.010, 25.0, 434.0), (0.930, 3.508, 37.0, 346.0)],
    ),
];

/// Process counts of the matrix.
pub const COUNTS: [u32; 3] = [10, 50, 500];

/// Every measured repetition of the mock run, scaled by `factor` (1.0 for the seed's values).
pub fn pa3_records(factor: f64) -> Vec<CellRecord> {
    let mut out = Vec::new();
    let mut ordinal = 0;
    for (row, (workload, kind, policy, per_count)) in SEED_FIG12.iter().enumerate() {
        for (ci, &(wall, user, invol, vol)) in per_count.iter().enumerate() {
            let n = COUNTS[ci];
            let cell_id = (row * 3 + ci) as u32;
            let rt = *policy != "other";
            for rep in 0..3u32 {
                let f = factor * (1.0 + 0.03 * (rep as f64 - 1.0));
                let params = CellParams {
                    cell_id,
                    key: format!("{workload}/{policy}{}/n{n}", if rt { ":98" } else { "" }),
                    workload: workload.to_string(),
                    workload_kind: kind.to_string(),
                    policy: policy.to_string(),
                    class: policy.to_string(),
                    priority: if rt { 98 } else { 0 },
                    nice: 0,
                    processes: n,
                    ..Default::default()
                };
                out.push(record(
                    params,
                    rep,
                    ordinal,
                    wall * n as f64 * f / 4.0 + 0.5,
                    (0..n)
                        .map(|i| {
                            // A symmetric +-10% spread around the mean keeps the per-process mean exact.
                            let spread =
                                if n > 1 { 0.9 + 0.2 * i as f64 / (n - 1) as f64 } else { 1.0 };
                            Sample {
                                index: i,
                                pid: 1000 + i as i32,
                                exit_code: Some(0),
                                wall_s: wall * f * spread,
                                user_s: user * f,
                                sys_s: 0.002,
                                cpu_pct: 100.0 * user / wall,
                                involuntary_csw: (invol * f).round() as i64,
                                voluntary_csw: (vol * f).round() as i64,
                                work_units: 1e6,
                                ..Default::default()
                            }
                        })
                        .collect(),
                ));
                ordinal += 1;
            }
        }
    }
    out
}

/// A measured repetition that ended well, released at 1.7e9 + `ordinal` (Unix seconds).
pub fn record(
    params: CellParams,
    rep: u32,
    ordinal: u32,
    makespan_s: f64,
    samples: Vec<Sample>,
) -> CellRecord {
    CellRecord {
        params,
        rep,
        ordinal,
        started_unix: 1.7e9 + ordinal as f64,
        makespan_s,
        samples,
        ..Default::default()
    }
}

/// The mock run's header.
pub fn run_meta(id: i64) -> RunMeta {
    RunMeta {
        id,
        name: "pa3".into(),
        mode: "measured".into(),
        status: "complete".into(),
        started: "2026-01-02 03:04:05".into(),
        finished: Some("2026-01-02 04:05:06".into()),
        scale: 0.02,
        cells_done: 81,
        spec_path: "experiments/pa3.toml".into(),
        spec_hash: "ab12".into(),
        spec_text: "name = \"pa3\"\n# <not a tag> & more\n".into(),
        command_line: "schedlab run experiments/pa3.toml --scale 0.02".into(),
        warnings: vec!["cell io/other/n500: 1 process exited 1".into()],
        model: None,
        env: Environment {
            kernel: "6.1.0".into(),
            cpu_model: "Test CPU".into(),
            cpus: 4,
            rt_runtime_us: Some(950_000),
            rt_period_us: Some(1_000_000),
            tool_version: "0.1.0".into(),
            cgroup: "v2".into(),
            ..Default::default()
        },
    }
}

/// A mock run shaped like seed 004 (experiments/lab1.toml), 16 cells: 4 or 8 hashing
/// processes, unpinned or spread, without cgroups or at cpu.weight 200, alone or with 8
/// background spinners; three repetitions scaled -3%/0/+3%.
///
/// Hand-computable fairness: alone, every hasher takes `base` seconds (Jain 1). With the
/// background, the odd-numbered hashers take `1 + skew` times as long as the even ones, skew 1
/// unpinned (throughputs 1 : 1/2, Jain (3/2)^2 / (2 (1 + 1/4)) = 0.9) and 1/4 spread
/// (1 : 4/5, Jain 3.24 / 3.28). Inside the window each hasher uses 1 CPU-second and each
/// spinner 1, or 1/2 when the hashers' weight is 200: the hashers' share is n / (n + 8) or n / (n + 4).
pub fn lab1_records() -> Vec<CellRecord> {
    let mut out = Vec::new();
    let mut ordinal = 0;
    let mut cell_id = 0;
    for affinity in ["all", "spread"] {
        for weight in [None, Some(200u32)] {
            for n in [4u32, 8] {
                for bg in [0u32, 8] {
                    let key = format!(
                        "hash/other/affinity={affinity}/cpu_weight={}/n{n}+bg.processes={bg}",
                        weight.unwrap_or(0)
                    );
                    let main = GroupParams {
                        name: "main".into(),
                        workload: "hash".into(),
                        workload_kind: "hash".into(),
                        policy: "other".into(),
                        class: "other".into(),
                        processes: n,
                        affinity: affinity.into(),
                        cpu_weight: weight,
                        ..Default::default()
                    };
                    let mut groups = vec![main];
                    if bg > 0 {
                        groups.push(GroupParams {
                            name: "bg".into(),
                            workload: "spin".into(),
                            workload_kind: "pi".into(),
                            policy: "other".into(),
                            class: "other".into(),
                            processes: bg,
                            affinity: "all".into(),
                            background: true,
                            ..Default::default()
                        });
                    }
                    let skew = match (bg, affinity) {
                        (0, _) => 0.0,
                        (_, "all") => 1.0,
                        _ => 0.25,
                    };
                    let base = match (bg, weight) {
                        (0, _) => 1.0,
                        (_, None) => 2.0,
                        _ => 1.5,
                    };
                    let spinner_cpu = if weight.is_some() { 0.5 } else { 1.0 };
                    for rep in 0..3u32 {
                        let f = 1.0 + 0.03 * (rep as f64 - 1.0);
                        let wall = |i: u32| base * f * (1.0 + skew * (i % 2) as f64);
                        let makespan = wall(1).max(wall(0));
                        let mut samples: Vec<Sample> = (0..n)
                            .map(|i| Sample {
                                index: i,
                                group: "main".into(),
                                pid: 2000 + i as i32,
                                exit_code: Some(0),
                                wall_s: wall(i),
                                user_s: 0.9 * wall(i),
                                cpu_pct: 90.0,
                                involuntary_csw: 10 + bg as i64,
                                voluntary_csw: 2,
                                window_cpu_s: 1.0,
                                work_units: 722_000.0,
                                end_offset_s: wall(i),
                                ..Default::default()
                            })
                            .collect();
                        samples.extend((0..bg).map(|i| Sample {
                            index: n + i,
                            group: "bg".into(),
                            background: true,
                            pid: 3000 + i as i32,
                            signal: Some(15),
                            wall_s: makespan + 0.2,
                            user_s: makespan,
                            window_cpu_s: spinner_cpu,
                            work_units: 1e9,
                            start_offset_s: -0.2,
                            end_offset_s: makespan,
                            ..Default::default()
                        }));
                        let params = CellParams {
                            cell_id,
                            key: key.clone(),
                            workload: "hash".into(),
                            workload_kind: "hash".into(),
                            policy: "other".into(),
                            class: "other".into(),
                            processes: n,
                            groups: groups.clone(),
                            ..Default::default()
                        };
                        out.push(record(params, rep, ordinal, makespan, samples));
                        ordinal += 1;
                    }
                    cell_id += 1;
                }
            }
        }
    }
    out
}

/// Schedulers of the mock real-time run: two whose tasks time their own wake-ups, two
/// driven by the dispatcher (edf's workers recorded no latencies, dwcs's their hand-offs).
pub const RT_SCHEDULERS: [&str; 4] = ["other", "fifo-rm", "edf", "dwcs"];

/// A mock seed-003 run: a periodic set of 4 tasks per workload, under each of
/// [`RT_SCHEDULERS`], at each utilisation (None: a listed set), two repetitions.
///
/// Hand-computable: with k = (scheduler index + 1) x (utilisation index + 1), every task of
/// repetition r releases 100 jobs and misses 5k + r of them, violates k + r fixed and 2k + r
/// sliding windows and spends (2k + r)% of its periods in violation; a worker-timed task's
/// wake-ups, and a dwcs task's hand-offs, are 1, 2, ..., 20 us times k.
pub fn rt_records(workloads: &[&str], utilisations: &[Option<f64>]) -> Vec<CellRecord> {
    use schedlab_model::{hist, CellRt, RtTask};
    let mut out = Vec::new();
    let mut cell_id = 0;
    for w in workloads {
        for (si, sched) in RT_SCHEDULERS.iter().enumerate() {
            for (ui, u) in utilisations.iter().enumerate() {
                let k = ((si + 1) * (ui + 1)) as u64;
                let dispatched = si >= 2;
                let u_key = u.map(|u| format!("/utilisation={u}")).unwrap_or_default();
                for rep in 0..2u32 {
                    let r = rep as u64;
                    let samples = (0..4u32)
                        .map(|i| {
                            let latency_hist = (!dispatched || *sched == "dwcs").then(|| {
                                let mut h =
                                    hist::Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)
                                        .unwrap();
                                for us in 1..=20 {
                                    h.record(us * k * 1000).unwrap();
                                }
                                h
                            });
                            let rt = RtTask {
                                c_ns: 1_000_000,
                                t_ns: 10_000_000,
                                d_ns: 10_000_000,
                                x: 1,
                                y: 2,
                                jobs: 100,
                                met: 100 - (5 * k + r),
                                misses: 5 * k + r,
                                fixed_windows: 50,
                                fixed_violations: k + r,
                                sliding_windows: 99,
                                sliding_violations: 2 * k + r,
                                time_in_violation_pct: (2 * k + r) as f64,
                                wakeup: latency_hist
                                    .as_ref()
                                    .filter(|_| !dispatched)
                                    .map(hist::summary),
                                wakeup_hist: latency_hist
                                    .as_ref()
                                    .filter(|_| !dispatched)
                                    .map(hist::encode),
                                handoff: latency_hist
                                    .as_ref()
                                    .filter(|_| dispatched)
                                    .map(hist::summary),
                                handoff_hist: latency_hist
                                    .as_ref()
                                    .filter(|_| dispatched)
                                    .map(hist::encode),
                                source: if dispatched { "dispatcher" } else { "worker" }.into(),
                                ..Default::default()
                            };
                            Sample {
                                index: i,
                                pid: 4000 + i as i32,
                                exit_code: Some(0),
                                wall_s: 1.0,
                                user_s: 0.1,
                                work_units: 100.0,
                                extra: schedlab_model::Extra { rt: Some(rt), ..Default::default() },
                                ..Default::default()
                            }
                        })
                        .collect();
                    let params = CellParams {
                        cell_id,
                        key: format!("{w}/{sched}{u_key}/n4"),
                        workload: w.to_string(),
                        workload_kind: "periodic".into(),
                        policy: sched.to_string(),
                        class: if *sched == "fifo-rm" { "fifo" } else { "other" }.into(),
                        processes: 4,
                        ..Default::default()
                    };
                    let min_utilisation = u.unwrap_or(0.3);
                    let rt = CellRt {
                        scheduler: sched.to_string(),
                        utilisation: *u,
                        min_utilisation,
                        plain_utilisation: 2.0 * min_utilisation,
                        guaranteed: min_utilisation <= 0.5,
                        ..Default::default()
                    };
                    out.push(CellRecord {
                        rt: Some(rt),
                        ..record(params, rep, cell_id * 2 + rep, 1.0, samples)
                    });
                }
                cell_id += 1;
            }
        }
    }
    out
}

/// The mock real-time run at utilisation 0.5 with per-job records for fifo-rm's and dwcs's
/// tasks: 10 jobs each, finishing 1..9 ms after release (times k: 1 for fifo-rm, 2 for dwcs,
/// times `scale`), and one dropped; the other schedulers' records were not loaded.
pub fn rt_records_with_jobs(scale: u64) -> Vec<schedlab_model::CellRecord> {
    use schedlab_model::jobs::{JobLog, JobTrace};
    let mut recs = rt_records(&["set"], &[Some(0.5)]);
    for r in recs
        .iter_mut()
        .filter(|r| r.params.key.contains("/fifo-rm/") || r.params.key.contains("/dwcs/"))
    {
        let k = scale * if r.params.key.contains("/dwcs/") { 2 } else { 1 };
        for s in r.samples.iter_mut() {
            let jobs = (0..10u64)
                .map(|j| JobTrace {
                    release_ns: j * 10_000_000,
                    finish_ns: (j < 9).then_some((j + 1) * k * 1_000_000),
                    met: j < 9,
                    ..Default::default()
                })
                .collect();
            s.jobs =
                Some(JobLog { source: "worker".into(), d_ns: 10_000_000, jobs, unrecorded: 0 });
        }
    }
    recs
}
