//! `simulate` of the field's benchmarks: pipe and messaging as chains of wake-ups, from spec
//! text to records with the benchmark's figures; schbench refused with its reason.

use schedlab_model::{CellRecord, CellStatus};
use schedlab_simrun::{simulate_cell, unsupported, Params};
use schedlab_spec::Plan;

fn plan(workload: &str, policy: &str, processes: &str) -> Plan {
    let text = format!(
        "name = \"t\"\n[matrix]\nworkload = [\"b\"]\npolicy = [\"{policy}\"]\n{processes}[workloads.b]\n{workload}"
    );
    schedlab_spec::parse("t.toml", &text).unwrap_or_else(|e| panic!("{e}")).plan
}

/// `cpus` CPUs, a message call of `call` ns, a switch of `switch` ns, nothing else costs.
fn params(cpus: usize, call: u64, switch: u64) -> Params {
    let mut p = Params::new(cpus, 1.0, 0, 0).without_costs();
    p.ipc_call_ns = call;
    p.switch_cost_ns = switch;
    p
}

fn sim(plan: &Plan, p: &Params) -> CellRecord {
    simulate_cell(&plan.cells[0], p, schedlab_simrun::horizon(plan), false).record
}

/// A simulated worker's figures, where the measured ones go (`extra.bench`); a pipe states
/// no time of its own, so its time is the cell's makespan (one worker).
struct Figures {
    time_s: f64,
    us_per_op: Option<f64>,
    ops_per_s: Option<f64>,
}

fn figures(r: &CellRecord) -> Figures {
    let b = r.samples[0].extra.bench.clone().expect("a benchmark's figures");
    assert!(b.source == "pipe" || b.source == "messaging", "{}", b.source);
    Figures {
        time_s: b.time_s.unwrap_or(r.makespan_s),
        us_per_op: b.us_per_op,
        ops_per_s: b.ops_per_s,
    }
}

#[test]
fn a_pipe_on_one_cpu_takes_two_hops_of_two_calls_and_a_switch_per_round_trip() {
    let (call, switch, loops) = (775, 1_700, 1_000);
    for policy in ["other", "fifo"] {
        let pl = plan(&format!("kind = \"pipe\"\nloops = {loops}\n"), policy, "");
        let r = sim(&pl, &params(1, call, switch));
        assert_eq!(r.status, CellStatus::Ok, "{:?}", r.message);
        // One worker, one sample, its two tasks merged.
        assert_eq!(r.samples.len(), 1);
        // Each hop: the switch to the partner, its read and its write; then the first task
        // switches in once more to read the last reply.
        let ns = loops * 2 * (2 * call + switch) + switch;
        let f = figures(&r);
        assert_eq!(f.time_s, ns as f64 / 1e9);
        assert!((f.us_per_op.unwrap() - ns as f64 / 1e3 / loops as f64).abs() < 1e-9);
        assert!((f.ops_per_s.unwrap() - loops as f64 / (ns as f64 / 1e9)).abs() < 1e-6);
        assert_eq!(r.makespan_s, f.time_s);
        let s = &r.samples[0];
        assert!((s.user_s - (4 * call * loops) as f64 / 1e9).abs() < 1e-12);
        assert_eq!(s.voluntary_csw as u64, 2 * loops - 1);
    }
}

#[test]
fn pairs_on_two_cpus_run_side_by_side_and_a_lone_pair_keeps_to_one_cpu() {
    let pipe = "kind = \"pipe\"\nloops = 100\n";
    let one = sim(&plan(pipe, "fifo", ""), &params(2, 500, 0));
    let two = sim(&plan(pipe, "fifo", "processes = [2]\n"), &params(2, 500, 0));
    let (f1, f2) = (figures(&one), figures(&two));
    // Two pairs on two CPUs: each pair keeps to a CPU of its own, so no slower than one.
    assert_eq!(f2.time_s, f1.time_s);
    assert_eq!(f2.ops_per_s.unwrap(), 2.0 * f1.ops_per_s.unwrap());
    // A pair alone on two CPUs stays on one (the woken task takes the CPU its waker left):
    // the remote wake-up cost does not apply.
    let mut slow = params(2, 500, 0);
    slow.wakeup_ns = 50_000;
    assert_eq!(figures(&sim(&plan(pipe, "fifo", ""), &slow)).time_s, f1.time_s);
}

#[test]
fn messaging_is_all_its_messages_calls_when_the_cpu_never_idles() {
    // 1 group of 2 senders and 2 receivers, 10 loops: 40 messages, each a write and a read.
    let small = "kind = \"messaging\"\ngroups = 1\nfds = 2\nloops = 10\n";
    let call = 1_000;
    for policy in ["other", "fifo", "rr"] {
        let r = sim(&plan(small, policy, ""), &params(1, call, 0));
        assert_eq!(r.status, CellStatus::Ok, "{:?}", r.message);
        assert_eq!(r.samples.len(), 1);
        // One CPU never idles while a message is left: someone can always move it.
        assert_eq!(figures(&r).time_s, (40 * 2 * call) as f64 / 1e9, "{policy}");
        assert_eq!(figures(&r).us_per_op, None);
    }
    // 64 KiB messages fill a socket's buffer after 3: senders block on it.
    let big = format!("{small}message_bytes = 65536\n");
    assert_eq!(schedlab_simrun::bench::capacity(schedlab_spec::Ipc::Socket, 65536), 3);
    let roomy = sim(&plan(small, "fifo", ""), &params(1, call, 0));
    let full = sim(&plan(&big, "fifo", ""), &params(1, call, 0));
    assert_eq!(figures(&full).time_s, figures(&roomy).time_s);
    assert!(full.samples[0].voluntary_csw > roomy.samples[0].voluntary_csw);
    // Groups sweep with processes; on 2 CPUs they take about half the time of one CPU.
    let groups = sim(&plan(small, "other", "processes = [4]\n"), &params(2, call, 0));
    let t = figures(&groups).time_s;
    assert!((4.0 * 40e-6..4.0 * 80e-6).contains(&t), "{t}");
}

#[test]
fn the_buffer_is_the_kernels_default_in_messages() {
    use schedlab_simrun::bench::capacity;
    use schedlab_spec::Ipc;
    // hackbench's 100-byte messages: 212,992 / 676 in a socket, 16 pages of 40 in a pipe.
    assert_eq!(capacity(Ipc::Socket, 100), 315);
    assert_eq!(capacity(Ipc::Pipe, 100), 640);
    assert_eq!(capacity(Ipc::Pipe, 1 << 20), 1);
}

#[test]
fn schbench_is_refused_with_its_reason() {
    let pl = plan("kind = \"schbench\"\nruntime_s = 1\n", "other", "");
    let why = unsupported(&pl, &params(1, 1, 0));
    assert_eq!(why.len(), 1);
    assert!(why[0].reason.contains("schbench") && why[0].reason.contains("timers"), "{why:?}");
}
