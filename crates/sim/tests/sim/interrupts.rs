//! The calibrated overheads (`Costs`): release latency, release interrupts and the tick,
//! each pinned on a set small enough to schedule by hand.

use schedlab_policy::PolicySpec;
use schedlab_sim::{simulate, Costs, SimConfig, SimError, TaskSpec};

use crate::{run, spans, uni};

fn with(config: SimConfig, costs: Costs) -> SimConfig {
    SimConfig { costs, ..config }
}

#[test]
fn the_tick_takes_the_cpu_from_the_running_task() {
    // C = 5, T = 10, a tick of 1 every 5: tick [0, 1), run [1, 5), tick [5, 6), run [6, 7):
    // R = 7 for both jobs; the ticks stop once the task is done (0, 5, 10, 15 and the one at
    // 20 that finds it done).
    let costs = Costs { tick: 1, tick_period: 5, ..Costs::default() };
    let r = run(&with(uni(PolicySpec::Rm, 100), costs), &[TaskSpec::periodic("t", 5, 10).jobs(2)]);
    assert_eq!(spans(&r, 0), [(1, 5), (6, 7), (11, 15), (16, 17)]);
    assert_eq!(r.tasks[0].response.all, [7, 7]);
    assert_eq!(r.tasks[0].preemptions, 0, "an interrupt is not a preemption");
    assert_eq!(r.cpus[0].interrupts, 5);
    assert_eq!((r.cpus[0].busy, r.cpus[0].switches), (10, 1));
}

#[test]
fn a_switch_waits_for_the_tick() {
    // C = 2, T = 10, a tick of 1 every 5 and a switch cost of 1: the tick [0, 1), the switch
    // [1, 2), the job [2, 4): R = 4 (3 without the switch). The next job's tick at 10, no
    // switch (the same task): R = 3.
    let costs = Costs { tick: 1, tick_period: 5, context_switch: 1, ..Costs::default() };
    let r = run(&with(uni(PolicySpec::Edf, 20), costs), &[TaskSpec::periodic("t", 2, 10)]);
    assert_eq!(spans(&r, 0), [(2, 4), (11, 13)]);
    assert_eq!(r.tasks[0].response.all, [4, 3]);
    let no_switch = Costs { context_switch: 0, ..costs };
    let r = run(&with(uni(PolicySpec::Edf, 20), no_switch), &[TaskSpec::periodic("t", 2, 10)]);
    assert_eq!(r.tasks[0].response.all, [3, 3]);
}

#[test]
fn a_job_is_ready_its_release_latency_after_its_arrival_and_due_from_the_arrival() {
    // C = 2, T = 10, D = 5: ready at 3, done at 5, the deadline met exactly; ready at 4, done
    // at 6: a miss.
    let task = [TaskSpec::periodic("t", 2, 10).deadline(5).jobs(1)];
    for (latency, response, misses) in [(3, 5, 0), (4, 6, 1)] {
        let costs = Costs { release_latency: latency, ..Costs::default() };
        let r = run(&with(uni(PolicySpec::Dm, 20), costs), &task);
        assert_eq!(spans(&r, 0), [(latency, latency + 2)]);
        assert_eq!(r.tasks[0].response.max, Some(response));
        assert_eq!(r.tasks[0].deadline_misses, misses);
        assert_eq!(r.tasks[0].job_log[0].release, 0);
    }
}

#[test]
fn release_interrupts_come_first_and_hold_up_what_runs() {
    // RM, (1, 4) and (2, 8), a release interrupt of 1 per arrival: both arrive at 0, the
    // handlers take [0, 2), t1 runs [2, 3), t2 [3, 4). At 4 t1's handler holds t2 up, then t1
    // preempts it [5, 6) and t2 ends [6, 7): R1 = 3, 2 and R2 = 7.
    let costs = Costs { release: 1, ..Costs::default() };
    let tasks = [TaskSpec::periodic("t1", 1, 4), TaskSpec::periodic("t2", 2, 8)];
    let r = run(&with(uni(PolicySpec::Rm, 7), costs), &tasks);
    assert_eq!(spans(&r, 0), [(2, 3), (5, 6)]);
    assert_eq!(spans(&r, 1), [(3, 4), (6, 7)]);
    assert_eq!(r.tasks[0].response.all, [3, 2]);
    assert_eq!(r.tasks[1].response.all, [7]);
    assert_eq!(r.tasks[1].preemptions, 1);
    assert_eq!(r.cpus[0].interrupts, 3);
}

#[test]
fn the_zero_costs_change_nothing_and_a_tick_needs_room_and_a_horizon() {
    let tasks = [TaskSpec::periodic("t1", 1, 4), TaskSpec::periodic("t2", 2, 8)];
    let plain = run(&uni(PolicySpec::Rm, 40), &tasks);
    let zero = Costs { tick_period: 5, ..Costs::default() };
    assert_eq!(run(&with(uni(PolicySpec::Rm, 40), zero), &tasks), plain);
    let full = Costs { tick: 5, tick_period: 5, ..Costs::default() };
    let e = simulate(&with(uni(PolicySpec::Rm, 40), full), &tasks).unwrap_err();
    assert_eq!(e, SimError::TickTooLong { tick: 5, period: 5 });
    let forever = Costs { tick: 1, tick_period: 5, ..Costs::default() };
    let once = [TaskSpec::burst("b", 3)];
    let e = simulate(&with(SimConfig::new(1, PolicySpec::Fifo), forever), &once).unwrap_err();
    assert_eq!(e, SimError::TickWithoutHorizon);
}
