//! Textbook schedules through the whole mapping: spec text -> plan -> simulation -> records.

use schedlab_model::{CellRecord, CellStatus};
use schedlab_spec::Plan;

use schedlab_simrun::{gantt, simulate_cell, simulate_plan, unsupported, Params};

fn plan(body: &str) -> Plan {
    let text = format!("name = \"t\"\n{body}");
    schedlab_spec::parse("t.toml", &text).unwrap_or_else(|e| panic!("{e}")).plan
}

fn ms(x: f64) -> f64 {
    x / 1e3
}

fn us(x: f64) -> f64 {
    x / 1e6
}

/// 1 ns per iteration, no costs: iterations are nanoseconds.
fn params(cpus: usize) -> Params {
    Params::new(cpus, 1.0, 0, 0).without_costs()
}

fn sim(plan: &Plan, p: &Params) -> CellRecord {
    simulate_cell(&plan.cells[0], p, schedlab_simrun::horizon(plan), false).record
}

fn field(r: &CellRecord, f: impl Fn(&schedlab_model::Sample) -> f64) -> Vec<f64> {
    r.samples.iter().map(f).collect()
}

fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
}

const CPU4: &str =
    "[matrix]\nworkload = [\"cpu\"]\npolicy = [\"fifo\"]\nprocesses = [4]\n[workloads.cpu]\nkind = \"pi\"\niterations = 10_000_000\n";

#[test]
fn four_fifo_bursts_on_two_cpus_take_two_bursts() {
    let r = sim(&plan(CPU4), &params(2));
    assert_eq!(r.status, CellStatus::Ok);
    assert_eq!(r.makespan_s, ms(20.0));
    // Turnaround (release to completion): two run at once, two wait one burst.
    assert!(
        close(&field(&r, |s| s.engine_wall_s), &[ms(10.0), ms(10.0), ms(20.0), ms(20.0)]),
        "{:?}",
        r.samples
    );
    // The worker's own clock starts at its first dispatch, as a measured worker's does.
    assert!(close(&field(&r, |s| s.start_offset_s), &[0.0, 0.0, ms(10.0), ms(10.0)]));
    assert!(close(&field(&r, |s| s.wall_s), &[ms(10.0); 4]));
    assert!(close(&field(&r, |s| s.user_s), &[ms(10.0); 4]));
    assert!(close(&field(&r, |s| s.cpu_pct), &[100.0; 4]));
    assert!(r
        .samples
        .iter()
        .all(|s| s.involuntary_csw == 0 && s.voluntary_csw == 0 && s.exit_code == Some(0)));
    assert!(r
        .samples
        .iter()
        .all(|s| s.work_units == 10_000_000.0 && s.extra.policy.as_deref() == Some("fifo")));
}

#[test]
fn switch_costs_delay_every_dispatch() {
    let p = Params { switch_cost_ns: 1000, ..params(2) };
    let r = sim(&plan(CPU4), &p);
    // Each CPU: switch, burst, switch, burst.
    assert!(r.makespan_s == 20_002_000.0 / 1e9, "{}", r.makespan_s);
    assert!(close(
        &field(&r, |s| s.start_offset_s),
        &[us(1.0), us(1.0), ms(10.0) + us(2.0), ms(10.0) + us(2.0)]
    ));
}

#[test]
fn round_robin_on_one_cpu_rotates_by_quantum() {
    let spec =
        "[matrix]\nworkload = [\"cpu\"]\npolicy = [\"rr\"]\nprocesses = [3]\n[workloads.cpu]\nkind = \"pi\"\niterations = 10_000_000\n";
    let p = Params { rr_quantum_ns: 4_000_000, ..params(1) };
    let r = sim(&plan(spec), &p);
    // 0-4 w0, 4-8 w1, 8-12 w2, 12-16 w0, 16-20 w1, 20-24 w2, 24-26 w0, 26-28 w1, 28-30 w2.
    assert!(close(&field(&r, |s| s.end_offset_s), &[ms(26.0), ms(28.0), ms(30.0)]));
    assert!(close(&field(&r, |s| s.start_offset_s), &[0.0, ms(4.0), ms(8.0)]));
    assert!(
        r.samples.iter().all(|s| s.involuntary_csw == 2),
        "{:?}",
        field(&r, |s| s.involuntary_csw as f64)
    );
    assert_eq!(r.makespan_s, ms(30.0));
}

#[test]
fn fair_classes_share_the_cpu_and_idle_uses_its_own_weight() {
    let spec = |class: &str| {
        format!("[matrix]\nworkload = [\"cpu\"]\npolicy = [\"{class}\"]\nprocesses = [2]\n[workloads.cpu]\nkind = \"pi\"\niterations = 10_000_000\n")
    };
    let p = Params { fair_slice_ns: 1_000_000, ..params(1) };
    let other = sim(&plan(&spec("other")), &p);
    // Two equal tasks alternate by slice: both end near the end, neither runs to completion first.
    assert_eq!(other.makespan_s, ms(20.0));
    assert!(
        other.samples.iter().all(|s| s.end_offset_s >= ms(19.0) && s.involuntary_csw >= 9),
        "{:?}",
        other.samples
    );
    // Equal weights of 3 give the same shares; the record says which class was modelled.
    let idle = sim(&plan(&spec("idle")), &p);
    assert_eq!(idle.makespan_s, ms(20.0));
    assert_eq!(idle.samples[0].extra.policy.as_deref(), Some("idle"));
    assert_eq!(idle.samples[0].extra.sim.as_ref().unwrap().policy, "fair");
}

#[test]
fn copy_workers_queue_on_one_device() {
    let spec = "[matrix]\nworkload = [\"io\"]\npolicy = [\"fifo\"]\nprocesses = [2]\n[workloads.io]\nkind = \"copy\"\ntransfer_bytes = 3072\nblock_bytes = 1024\n";
    let p = Params { write_cpu_ns: 1_000, write_service_ns: 10_000, ..params(1) };
    let r = sim(&plan(spec), &p);
    // w0: cpu 0-1, write 1-11, cpu 11-12, write 21-31, cpu 31-32, write 41-51.
    // w1: cpu 1-2, write 11-21, cpu 21-22, write 31-41, cpu 41-42, write 51-61.
    assert!(close(&field(&r, |s| s.end_offset_s), &[us(51.0), us(61.0)]), "{:?}", r.samples);
    assert!(close(&field(&r, |s| s.user_s), &[us(3.0), us(3.0)]));
    assert!(r.samples.iter().all(|s| s.voluntary_csw == 3
        && s.extra.detail.as_ref().and_then(schedlab_model::Detail::sync_writes) == Some(3)));
}

#[test]
fn mixed_writes_every_so_many_iterations_then_finishes_the_rest() {
    let spec =
        "[matrix]\nworkload = [\"m\"]\npolicy = [\"fifo\"]\n[workloads.m]\nkind = \"mixed\"\niterations = 10_000\nwrite_every = 4_000\n";
    let p = Params { write_cpu_ns: 500, write_service_ns: 2_000, ..params(1) };
    let r = sim(&plan(spec), &p);
    // (4 + 0.5) + 2 + (4 + 0.5) + 2 + 2 us.
    assert!((r.makespan_s - us(15.0)).abs() < 1e-12, "{}", r.makespan_s);
    assert_eq!(r.samples[0].voluntary_csw, 2);
    assert!((r.samples[0].user_s - us(11.0)).abs() < 1e-12);
}

#[test]
fn command_cells_are_refused_with_the_reason() {
    let spec = "[matrix]\nworkload = [\"c\", \"pi\"]\n[workloads.c]\nkind = \"command\"\nargv = [\"true\"]\n";
    let pl = plan(spec);
    let why = unsupported(&pl, &params(1));
    assert_eq!(why.len(), 1);
    assert!(why[0].to_string().contains("command workload"), "{}", why[0]);
    let r = sim(&pl, &params(1));
    assert_eq!(r.status, CellStatus::Failed);
    assert!(r.message.as_deref().unwrap_or("").contains("cannot be simulated"));
    assert!(r.samples.is_empty());
}

#[test]
fn deadline_cells_pass_admission_and_are_throttled_to_their_budget() {
    let spec = |n: u32| {
        format!("[matrix]\nworkload = [\"cpu\"]\npolicy = [\"dl\"]\nprocesses = [{n}]\n[workloads.cpu]\nkind = \"pi\"\niterations = 10_000_000\n[policies.dl]\nclass = \"deadline\"\nruntime_us = 5000\nperiod_us = 100000\n")
    };
    // 5 ms of every 100 ms: 0-5, throttled, 100-105.
    let r = sim(&plan(&spec(1)), &params(1));
    assert_eq!(r.makespan_s, ms(105.0));
    assert_eq!(r.samples[0].wall_s, ms(105.0));
    // 50 x 0.05 = 2.5 > 2 x 0.95: refused, as the kernel would.
    let r = sim(&plan(&spec(50)), &params(2));
    assert_eq!(r.status, CellStatus::Failed);
    assert!(r.message.as_deref().unwrap_or("").contains("admission refused"), "{:?}", r.message);
}

#[test]
fn the_watchdog_stops_a_cell_at_its_timeout() {
    let spec = "timeout_s = 1\n[matrix]\nworkload = [\"cpu\"]\npolicy = [\"fifo\"]\nprocesses = [3]\n[workloads.cpu]\nkind = \"pi\"\niterations = 600_000_000\n";
    let r = sim(&plan(spec), &params(1));
    assert_eq!(r.status, CellStatus::TimedOut);
    assert_eq!(r.makespan_s, 1.0);
    let timed_out: Vec<bool> = r.samples.iter().map(|s| s.timed_out).collect();
    assert_eq!(timed_out, [false, true, true]);
    assert_eq!(r.samples[2].work_units, 0.0);
    assert!(r.message.as_deref().unwrap_or("").contains("2 of 3 workers"));
}

#[test]
fn every_step_is_stored_and_repetitions_are_identical() {
    let spec = "repetitions = 3\nwarmup = 1\norder = \"random\"\n[matrix]\nworkload = [\"cpu\"]\npolicy = [\"other\", \"rr\"]\nprocesses = [3, 5]\n[workloads.cpu]\nkind = \"pi\"\niterations = 7_000_000\n";
    let pl = plan(spec);
    let p = Params::new(2, 1.3, 0, 0);
    let mut recs = Vec::new();
    let traced = simulate_plan(&pl, &p, Some(2), |r| -> Result<(), ()> {
        recs.push(r);
        Ok(())
    })
    .unwrap();
    assert_eq!(recs.len(), 4 * (3 + 1));
    let ordinals: Vec<u32> = recs.iter().map(|r| r.ordinal).collect();
    assert_eq!(ordinals, (0..16).collect::<Vec<u32>>());
    for cell in 0..4 {
        let of: Vec<&CellRecord> = recs.iter().filter(|r| r.params.cell_id == cell).collect();
        assert_eq!(of.len(), 4);
        assert!(of
            .iter()
            .all(|r| r.samples == of[0].samples
                && r.samples.len() == of[0].params.processes as usize));
    }
    let traced = traced.expect("cell 2 was traced");
    assert!(!traced.trace.is_empty());
    // The same inputs give the same records, bit for bit.
    let mut again = Vec::new();
    simulate_plan(&pl, &p, None, |r| -> Result<(), ()> {
        again.push(r);
        Ok(())
    })
    .unwrap();
    assert_eq!(recs, again);
}

#[test]
fn gantt_draws_one_bar_per_slice_in_range() {
    let pl = plan(CPU4);
    let traced = simulate_cell(&pl.cells[0], &params(2), schedlab_simrun::horizon(&pl), true)
        .traced
        .expect("trace");
    let svg = gantt::svg(&traced, "cpu/fifo/n4", 0, 20_000_000).unwrap();
    assert!(
        svg.starts_with("<svg")
            && svg.contains("CPU 0")
            && svg.contains("CPU 1")
            && svg.contains("w3"),
        "{svg}"
    );
    // Only the first two workers ran in the first 5 ms.
    let early = gantt::svg(&traced, "t", 0, 5_000_000).unwrap();
    assert!(early.contains("w1") && !early.contains("w2"));
    assert!(matches!(gantt::svg(&traced, "t", 5, 5), Err(gantt::GanttError::EmptyRange { .. })));
    assert!(matches!(
        gantt::svg(&traced, "t", 30_000_000, 40_000_000),
        Err(gantt::GanttError::NothingRan { .. })
    ));
}

#[test]
fn pinned_workers_are_partitioned_and_unmodelled_groups_are_refused() {
    let pinned = plan("[matrix]\nworkload = [\"cpu\"]\npolicy = [\"fifo\"]\nprocesses = [4]\naffinity = [\"spread\"]\n[workloads.cpu]\nkind = \"pi\"\niterations = 10_000_000\n");
    let r = sim(&pinned, &params(2));
    // Spread: workers 0 and 2 on CPU 0, 1 and 3 on CPU 1, each CPU runs its two in turn.
    let cpus: Vec<Vec<u32>> = r.samples.iter().map(|s| s.allowed_cpus.clone()).collect();
    assert_eq!(cpus, [vec![0], vec![1], vec![0], vec![1]]);
    assert!(close(&field(&r, |s| s.end_offset_s), &[ms(10.0), ms(10.0), ms(20.0), ms(20.0)]));
    assert!(r.samples.iter().all(|s| s.extra.migrations == Some(0)));
    let bg = "[matrix]\nworkload = [\"pi\"]\n[matrix.groups.bg]\nprocesses = [2]\n[groups.bg]\nworkload = \"pi\"\nbackground = true\n";
    let weighted = "[matrix]\nworkload = [\"pi\"]\ncpu_weight = [200]\n";
    for (spec, want) in [(bg, "background group"), (weighted, "cgroup")] {
        let why = unsupported(&plan(spec), &params(2));
        assert_eq!(why.len(), 1, "{spec}");
        assert!(why[0].reason.contains(want), "{}", why[0]);
    }
}

#[test]
fn disturbance_workloads_are_refused_with_the_reason() {
    for kind in ["udp_flood", "io_interrupts"] {
        let pl = plan(&format!(
            "[matrix]\nworkload = [\"d\", \"pi\"]\n[workloads.d]\nkind = \"{kind}\"\n"
        ));
        let why = unsupported(&pl, &params(2));
        assert_eq!(why.len(), 1, "{kind}: only the disturbance cell is refused");
        assert!(why[0].reason.contains(kind) && why[0].reason.contains("interrupts"), "{}", why[0]);
        let r = sim(&pl, &params(2));
        assert_eq!(r.status, CellStatus::Failed);
        assert!(r.samples.is_empty());
    }
    // As a background group (their use), the group is refused before its workload is looked at.
    let bg = plan("[matrix]\nworkload = [\"pi\"]\n[groups.net]\nworkload = \"udp_flood\"\nbackground = true\n");
    assert!(unsupported(&bg, &params(2))[0].reason.contains("background group"));
}
