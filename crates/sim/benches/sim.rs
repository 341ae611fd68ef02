//! Throughput of the simulator: 10 periodic tasks on 2 CPUs over 100,000 ms.
//!
//! Run with `cargo bench -p schedlab-sim`. Prints jobs/s and events/s for
//! global EDF and RM (and their partitioned variants), best of several runs,
//! with trace and response-list recording off. Every line simulates each of the 23.8
//! hyperperiods (`skip_cycles` off: the core's own speed) but the last, which runs what
//! `schedlab simulate` runs, repeated cycles skipped.

use std::hint::black_box;
use std::time::{Duration, Instant};

use schedlab_policy::{PolicySpec, MILLISECOND};
use schedlab_sim::{simulate, SimConfig, TaskSpec};

const RUNS: usize = 10;
const HORIZON_MS: u64 = 100_000;

/// (C, T) in ms; total utilisation 1.60 on 2 CPUs.
const SET: [(u64, u64); 10] =
    [(1, 5), (1, 7), (2, 10), (2, 12), (3, 15), (3, 20), (4, 25), (4, 30), (5, 40), (6, 50)];

fn tasks() -> Vec<TaskSpec> {
    SET.iter()
        .enumerate()
        .map(|(i, &(c, t))| TaskSpec::periodic(format!("t{i}"), c * MILLISECOND, t * MILLISECOND))
        .collect()
}

fn bench(label: &str, config: &SimConfig, tasks: &[TaskSpec]) {
    let mut best = Duration::MAX;
    let mut total = Duration::ZERO;
    let mut last = None;
    for _ in 0..RUNS {
        let start = Instant::now();
        let result = simulate(black_box(config), black_box(tasks)).expect("valid benchmark input");
        let elapsed = start.elapsed();
        best = best.min(elapsed);
        total += elapsed;
        last = Some(black_box(result));
    }
    let r = last.expect("at least one run");
    let jobs = r.total_jobs();
    let secs = best.as_secs_f64();
    println!(
        "{label:<16} jobs {jobs:>7}  events {:>7}  misses {:>5}  best {:>8.2} ms  mean {:>8.2} ms  {:>6.2} M jobs/s  {:>6.2} M events/s",
        r.events,
        r.total_misses(),
        secs * 1e3,
        total.as_secs_f64() * 1e3 / RUNS as f64,
        jobs as f64 / secs / 1e6,
        r.events as f64 / secs / 1e6,
    );
}

fn main() {
    let tasks = tasks();
    let horizon = HORIZON_MS * MILLISECOND;
    let partition = vec![0, 1, 0, 1, 0, 1, 0, 1, 0, 1];
    for (name, policy) in [("edf", PolicySpec::Edf), ("rm", PolicySpec::Rm)] {
        let global = SimConfig { skip_cycles: false, ..SimConfig::new(2, policy) }
            .with_horizon(horizon)
            .recording(false, false);
        bench(&format!("{name} global"), &global, &tasks);
        let partitioned = global.clone().partitioned(partition.clone());
        bench(&format!("{name} partitioned"), &partitioned, &tasks);
    }
    let traced = SimConfig { skip_cycles: false, ..SimConfig::new(2, PolicySpec::Edf) }
        .with_horizon(horizon);
    bench("edf global+trace", &traced, &tasks);
    // What `schedlab simulate` runs for this set under `scheduler = "deadline"`: EDF with hard
    // CBS reservations (runtime C, deadline = period T), every job's outcome kept.
    let reserved: Vec<TaskSpec> = tasks
        .iter()
        .zip(SET)
        .map(|(t, (c, p))| t.clone().reservation(c * MILLISECOND, p * MILLISECOND, p * MILLISECOND))
        .collect();
    let deadline = SimConfig::new(2, PolicySpec::Cbs { hard: true })
        .with_horizon(horizon)
        .recording(false, true);
    bench("cbs global+jobs", &SimConfig { skip_cycles: false, ..deadline.clone() }, &reserved);
    bench("cbs +jobs, skip", &deadline, &reserved);
}
