//! Task progress: releases, phase ends, I/O, job outcomes and dropped jobs.

use schedlab_policy::{Arrival, Duration, SchedPolicy, Stop, TaskId, Time};

use super::{Ev, SimJob, Simulator, St};
use crate::config::{MissAction, Phase, WorkSpec};
use crate::event::EventClass;
use crate::result::JobOutcome;

/// What a task's phase needs once the messages it could pass are passed.
enum Step {
    Compute(Duration),
    Io(Duration),
    /// Waiting on a channel.
    Blocked,
    /// No phase left.
    End,
}

impl<P: SchedPolicy> Simulator<'_, P> {
    /// A task's first arrival, or the next job of a periodic task.
    pub(super) fn release(&mut self, id: TaskId, now: Time) {
        let specs = self.specs;
        let periodic = match &specs[id].workload {
            WorkSpec::Periodic(p) => Some(p),
            _ => None,
        };
        let exec = match periodic {
            Some(p) => match p.min_exec {
                Some(min) => self.rng.range_inclusive(min, p.wcet),
                None => p.wcet,
            },
            None => 0,
        };
        let t = &mut self.tasks[id];
        t.first_release.get_or_insert(now);
        let Some(r) = t.jobs.release(now, exec) else { return };
        if periodic.is_some() && self.cfg.record.responses {
            t.job_log.push(JobOutcome { release: now, ..Default::default() });
        }
        let next = t.jobs.next_release();
        if let Some(next) = next {
            self.asked(next);
            if next <= self.horizon {
                self.events.push(next, EventClass::Arrival, Ev::Release(id as u32));
            }
        }
        if let Some(deadline) =
            r.job.deadline.filter(|_| periodic.is_some_and(|p| p.on_miss == MissAction::Drop))
        {
            self.asked(deadline);
            if deadline <= self.horizon {
                self.events.push(deadline, EventClass::Deadline, Ev::Deadline(id as u32));
            }
        }
        let release = self.cfg.costs.release;
        if periodic.is_some() && release > 0 {
            self.interrupt(self.release_cpu(id), now, release);
        }
        if r.started {
            self.start_job(id, r.job, now);
        }
    }

    /// The CPU a task's release interrupt is taken on: its partition's; under global
    /// scheduling the one it last ran on, else its ready queue's first.
    fn release_cpu(&self, id: TaskId) -> usize {
        let cpus = &self.domains[self.tasks[id].domain].cpus;
        match cpus.as_slice() {
            [only] => *only,
            _ => self.tasks[id].last_cpu.unwrap_or(cpus[0]),
        }
    }

    /// A periodic job's release latency is over: it becomes ready, unless it is no longer
    /// the task's current job (dropped at its deadline meanwhile).
    pub(super) fn latency_over(&mut self, id: TaskId, now: Time) {
        let latency = self.cfg.costs.release_latency;
        let t = &self.tasks[id];
        if t.state == St::Waiting && t.jobs.current().is_some_and(|j| j.release + latency == now) {
            self.make_ready(id, now);
        }
    }

    fn start_job(&mut self, id: TaskId, job: SimJob, now: Time) {
        let t = &mut self.tasks[id];
        t.announced = false;
        if matches!(self.specs[id].workload, WorkSpec::Periodic(_)) {
            t.remaining = job.payload;
            let ready = job.release + self.cfg.costs.release_latency;
            if ready <= now {
                self.make_ready(id, now);
                return;
            }
            // Not ready before its release latency is over.
            t.state = St::Waiting;
            self.asked(ready);
            if ready <= self.horizon {
                self.events.push(ready, EventClass::Arrival, Ev::Ready(id as u32));
            }
        } else {
            t.phase = 0;
            self.enter_phase(id, now);
        }
    }

    // Starts the current phase of a task that is not on a CPU.
    fn enter_phase(&mut self, id: TaskId, now: Time) {
        match self.step(id, now) {
            Step::Compute(d) => {
                self.tasks[id].remaining = d;
                self.make_ready(id, now);
            }
            Step::Io(service) => {
                self.tasks[id].state = St::Blocked;
                self.device_submit(id, service, now);
            }
            Step::Blocked => self.tasks[id].state = St::Blocked,
            Step::End => {
                self.complete_job(id, now);
                self.tasks[id].state = St::Finished;
                self.tasks[id].ended = Some(now);
                let d = self.tasks[id].domain;
                self.domains[d].policy.retire(id, now);
            }
        }
    }

    /// Passes the messages of task `id`'s phases from its current one on, as far as its
    /// channels let it, and says what the phase it stopped at needs.
    fn step(&mut self, id: TaskId, now: Time) -> Step {
        loop {
            let passed = match self.specs[id].workload.phase(self.tasks[id].phase) {
                Some(Phase::Compute(d)) => return Step::Compute(d),
                Some(Phase::Io(service)) => return Step::Io(service),
                None => return Step::End,
                Some(Phase::Send(c)) => self.send(c as usize, id, now),
                Some(Phase::Recv(c)) => self.recv(c as usize, id, now),
            };
            if !passed {
                return Step::Blocked;
            }
            self.tasks[id].phase += 1;
        }
    }

    /// Puts a message into channel `c` for task `id`, or queues `id` on the full channel.
    fn send(&mut self, c: usize, id: TaskId, now: Time) -> bool {
        let ch = &mut self.channels[c];
        if ch.held == ch.capacity {
            ch.senders.push_back(id);
            return false;
        }
        ch.held += 1;
        if let Some(r) = ch.receivers.pop_front() {
            self.wake(r, id, now);
        }
        true
    }

    /// Takes a message from channel `c` for task `id`, or queues `id` on the empty channel.
    fn recv(&mut self, c: usize, id: TaskId, now: Time) -> bool {
        let ch = &mut self.channels[c];
        if ch.held == 0 {
            ch.receivers.push_back(id);
            return false;
        }
        ch.held -= 1;
        if let Some(s) = ch.senders.pop_front() {
            self.wake(s, id, now);
        }
        true
    }

    /// Task `by` unblocked `target`: it tries its phase again now, or after the remote
    /// wake-up cost when it last ran on another CPU than `by`.
    fn wake(&mut self, target: TaskId, by: TaskId, now: Time) {
        let remote = matches!(
            (self.tasks[target].last_cpu, self.tasks[by].last_cpu),
            (Some(a), Some(b)) if a != b
        );
        let at = now + if remote { self.cfg.costs.wakeup } else { 0 };
        self.asked(at);
        if at <= self.horizon {
            self.events.push(at, EventClass::Arrival, Ev::Wake(target as u32));
        }
    }

    /// A task blocked on a channel becomes ready; it tries its phase again once it runs
    /// (a message is taken, or room used, by a task on a CPU, not by one waiting for it).
    pub(super) fn woken(&mut self, id: TaskId, now: Time) {
        debug_assert_eq!(self.tasks[id].state, St::Blocked);
        let t = &mut self.tasks[id];
        t.remaining = 0;
        t.retry = true;
        self.make_ready(id, now);
    }

    fn make_ready(&mut self, id: TaskId, now: Time) {
        let t = &mut self.tasks[id];
        t.state = St::Ready;
        t.ready_since = now;
        let arrival = match (t.announced, t.jobs.current()) {
            (false, Some(job)) => Arrival::Job { release: job.release, deadline: job.deadline },
            _ => Arrival::Resume,
        };
        t.announced = true;
        let dom = &mut self.domains[t.domain];
        dom.policy.wake(id, now, arrival);
        dom.dirty = true;
    }

    /// The running task's phase ended or its run limit was reached.
    pub(super) fn cpu_timer(&mut self, cpu: usize, now: Time) {
        let id = self.cpus[cpu].running.expect("timer of an idle CPU");
        self.account(cpu, now);
        if self.tasks[id].remaining > 0 {
            self.stop_running(cpu, now, Stop::Expired);
            return;
        }
        let specs = self.specs;
        if let WorkSpec::Periodic(_) = &specs[id].workload {
            let next = self.complete_job(id, now);
            let t = &mut self.tasks[id];
            if let Some(next) = next {
                self.stop_running(cpu, now, Stop::Done);
                self.start_job(id, next, now);
            } else if t.jobs.next_release().is_none() {
                t.state = St::Finished;
                t.ended = Some(now);
                self.stop_running(cpu, now, Stop::Exited);
            } else {
                t.state = St::Waiting;
                t.blocks += 1;
                self.stop_running(cpu, now, Stop::Done);
            }
            return;
        }
        let t = &mut self.tasks[id];
        if !std::mem::take(&mut t.retry) {
            t.phase += 1;
        }
        let step = self.step(id, now);
        let t = &mut self.tasks[id];
        match step {
            Step::Compute(d) => {
                t.remaining = d;
                self.arm_cpu(cpu);
            }
            Step::Io(service) => {
                t.state = St::Blocked;
                t.blocks += 1;
                self.stop_running(cpu, now, Stop::Blocked);
                self.device_submit(id, service, now);
            }
            Step::Blocked => {
                t.state = St::Blocked;
                t.blocks += 1;
                self.stop_running(cpu, now, Stop::Blocked);
            }
            Step::End => {
                t.state = St::Finished;
                t.ended = Some(now);
                self.complete_job(id, now);
                self.stop_running(cpu, now, Stop::Exited);
            }
        }
    }

    /// The current job finished; returns the queued job that follows it, if any.
    fn complete_job(&mut self, id: TaskId, now: Time) -> Option<SimJob> {
        let keep = self.cfg.record.responses;
        let t = &mut self.tasks[id];
        let done = t.jobs.complete(now)?;
        t.completion = Some(now);
        t.responses.push(now - done.job.release, keep);
        if let Some(o) = t.job_log.get_mut(done.job.index as usize) {
            o.finish = Some(now);
            o.met = done.met;
        }
        done.next
    }

    fn device_submit(&mut self, id: TaskId, service: Time, now: Time) {
        self.device.queue.push_back((id, service));
        if !self.device.busy {
            self.device_start(now);
        }
    }

    fn device_start(&mut self, now: Time) {
        match self.device.queue.front() {
            Some(&(_, service)) => {
                self.device.busy = true;
                self.asked(now + service);
                self.events.push(now + service, EventClass::Arrival, Ev::IoDone);
            }
            None => self.device.busy = false,
        }
    }

    /// The device finished the request at the head of its queue.
    pub(super) fn io_done(&mut self, now: Time) {
        let (id, _) = self.device.queue.pop_front().expect("I/O completion with an empty queue");
        self.device_start(now);
        self.tasks[id].phase += 1;
        self.enter_phase(id, now);
    }

    /// Drops task `id`'s jobs unfinished at their deadline (`now`).
    pub(super) fn deadline_check(&mut self, id: TaskId, now: Time) {
        let t = &mut self.tasks[id];
        let expired = t.jobs.expire(now);
        if expired.current.is_none() {
            return;
        }
        match t.state {
            St::Running => {
                let cpu = t.last_cpu.expect("a running task has a CPU");
                self.account(cpu, now);
                self.stop_running(cpu, now, Stop::Aborted);
            }
            // With a next job waiting, the task stays ready: waking it again swaps the job in place.
            St::Ready if expired.next.is_none() => {
                let dom = &mut self.domains[t.domain];
                dom.policy.cancel(id, now);
                dom.dirty = true;
            }
            _ => {}
        }
        let t = &mut self.tasks[id];
        if let Some(next) = expired.next {
            self.start_job(id, next, now);
        } else if t.jobs.next_release().is_none() {
            t.state = St::Finished;
            t.ended = Some(now);
            let dom = &mut self.domains[t.domain];
            dom.policy.retire(id, now);
        } else {
            t.state = St::Waiting;
        }
    }
}
