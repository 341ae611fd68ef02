//! Tasks passing messages over channels: wake-up chains and full buffers.

use schedlab_policy::PolicySpec;
use schedlab_sim::{Phase, SimConfig, TaskSpec, WorkSpec};

use crate::run;

/// perf's pipe ping-pong: `a` computes `burst`, sends on 0 and waits on 1; `b` waits on 0,
/// computes `burst` and sends on 1; `n` round trips.
fn ping_pong(n: u64, burst: u64) -> [TaskSpec; 2] {
    let a = vec![Phase::Compute(burst), Phase::Send(0), Phase::Recv(1)];
    let b = vec![Phase::Recv(0), Phase::Compute(burst), Phase::Send(1)];
    [
        TaskSpec::new("a", WorkSpec::Repeat { phases: a, rounds: n }),
        TaskSpec::new("b", WorkSpec::Repeat { phases: b, rounds: n }),
    ]
}

#[test]
fn a_ping_pong_on_one_cpu_takes_two_hops_of_burst_and_switch_per_round_trip() {
    for policy in [PolicySpec::Fair { base_slice: 1000 }, PolicySpec::Fifo] {
        for (n, burst, switch) in [(1, 5, 0), (10, 5, 3), (1000, 7, 2)] {
            let config = SimConfig::new(1, policy.clone())
                .with_costs(switch, 100)
                .with_wakeup(1_000_000)
                .with_channels(vec![1, 1]);
            let r = run(&config, &ping_pong(n, burst));
            // Every hop: the switch to the woken partner, then its burst; a partner on the
            // same CPU is woken at once, whatever the remote wake-up cost. Then a is switched
            // in once more to read the last reply.
            assert_eq!(r.end, n * 2 * (burst + switch) + switch, "{policy:?} n {n}");
            assert!(r.tasks.iter().all(|t| t.finished && t.cpu_time == n * burst));
            assert_eq!(r.cpus[0].switches, 2 * n + 1);
            // a blocks once per round trip, b once per round trip but the last (it ends).
            assert_eq!((r.tasks[0].blocks, r.tasks[1].blocks), (n, n - 1));
            assert_eq!(r.tasks[0].ended, Some(r.end));
        }
    }
}

#[test]
fn a_ping_pong_across_cpus_pays_the_remote_wake_up_per_hop() {
    let (n, burst, wakeup) = (50, 4, 9);
    let config = SimConfig::new(2, PolicySpec::Fifo)
        .partitioned(vec![0, 1])
        .with_costs(0, 0)
        .with_wakeup(wakeup)
        .with_channels(vec![1, 1]);
    let r = run(&config, &ping_pong(n, burst));
    // 2n hops of a burst, each followed by a wake-up; the first wakes a task that never ran
    // (nowhere to be remote from), every later one crosses CPUs.
    assert_eq!(r.end, 2 * n * burst + (2 * n - 1) * wakeup);
    assert_eq!(r.tasks[0].ended, Some(r.end));
    assert_eq!((r.tasks[0].migrations, r.tasks[1].migrations), (0, 0));
}

/// A writer of `n` messages of `burst` each into channel 0 and its reader, `burst` per message.
fn writer_reader(n: u64, burst: u64) -> [TaskSpec; 2] {
    [
        TaskSpec::new(
            "writer",
            WorkSpec::Repeat { phases: vec![Phase::Compute(burst), Phase::Send(0)], rounds: n },
        )
        .priority(20),
        TaskSpec::new(
            "reader",
            WorkSpec::Repeat { phases: vec![Phase::Recv(0), Phase::Compute(burst)], rounds: n },
        )
        .priority(10),
    ]
}

#[test]
fn a_full_channel_blocks_its_writer_until_the_reader_takes_a_message() {
    // The writer has the higher priority: it runs until the channel is full.
    let (n, burst) = (6, 1);
    let roomy = SimConfig::new(1, PolicySpec::Fifo).with_channels(vec![6]);
    let r = run(&roomy, &writer_reader(n, burst));
    assert_eq!(r.tasks[0].blocks, 0);
    assert_eq!((r.tasks[0].ended, r.tasks[1].ended), (Some(6), Some(12)));
    // Room for 2: the writer blocks on the third message until the reader took one, then
    // preempts it; every later message finds the channel full again.
    let tight = SimConfig::new(1, PolicySpec::Fifo).with_channels(vec![2]);
    let r = run(&tight, &writer_reader(n, burst));
    assert!(r.tasks[0].blocks >= 3, "{:?}", r.tasks[0]);
    // The CPU never idles (a full channel has a reader with work), so the total is the same.
    assert_eq!(r.end, 12);
    assert!(r.tasks.iter().all(|t| t.finished));
    // The writer's 5th message goes in only after the reader took its 3rd.
    assert!(r.tasks[0].ended.unwrap() > 6);
}

#[test]
fn tasks_waiting_on_each_other_never_finish_and_the_run_ends() {
    let a = TaskSpec::new("a", WorkSpec::Mixed { phases: vec![Phase::Recv(0), Phase::Compute(1)] });
    let b = TaskSpec::new("b", WorkSpec::Mixed { phases: vec![Phase::Recv(1), Phase::Send(0)] });
    let r = run(&SimConfig::new(1, PolicySpec::Fifo).with_channels(vec![1, 1]), &[a, b]);
    assert!(r.tasks.iter().all(|t| !t.finished && t.cpu_time == 0));
}

#[test]
fn channels_are_checked() {
    let t = TaskSpec::new("t", WorkSpec::Mixed { phases: vec![Phase::Send(2)] });
    let e =
        schedlab_sim::simulate(&SimConfig::new(1, PolicySpec::Fifo).with_channels(vec![1]), &[t])
            .unwrap_err();
    assert!(e.to_string().contains("channel 2 does not exist"), "{e}");
    let t = TaskSpec::new("t", WorkSpec::Mixed { phases: vec![Phase::Compute(1)] });
    let e =
        schedlab_sim::simulate(&SimConfig::new(1, PolicySpec::Fifo).with_channels(vec![0]), &[t])
            .unwrap_err();
    assert!(e.to_string().contains("capacity"), "{e}");
    let r = TaskSpec::new("r", WorkSpec::Repeat { phases: vec![Phase::Compute(1)], rounds: 0 });
    assert!(schedlab_sim::simulate(&SimConfig::new(1, PolicySpec::Fifo), &[r]).is_err());
}
