//! Task progress: releases, phase ends, I/O, job outcomes and dropped jobs.

use schedlab_policy::{Arrival, Stop, TaskId, Time};

use super::{Engine, Ev, Job, St};
use crate::config::{MissAction, Phase, Workload};
use crate::event::Class;
use crate::result::JobOutcome;

impl Engine<'_> {
    /// A task's first arrival, or the next job of a periodic task.
    pub(super) fn release(&mut self, id: TaskId, now: Time) {
        let specs = self.specs;
        let t = &mut self.tasks[id];
        t.first_release.get_or_insert(now);
        let Workload::Periodic(p) = &specs[id].workload else {
            t.released = 1;
            let job = Job { index: 0, release: now, deadline: specs[id].params.deadline.map(|d| now.saturating_add(d)), exec: 0 };
            self.start_job(id, job, now);
            return;
        };
        let index = t.released;
        t.released += 1;
        if self.cfg.record.responses {
            t.job_log.push(JobOutcome { release: now, ..Default::default() });
        }
        let exec = match p.min_exec {
            Some(min) => self.rng.range_inclusive(min, p.wcet),
            None => p.wcet,
        };
        let deadline = now.saturating_add(p.relative_deadline());
        let job = Job { index, release: now, deadline: Some(deadline), exec };
        if p.jobs.is_none_or(|n| index + 1 < n) {
            let next = now.saturating_add(p.period);
            if next <= self.horizon {
                self.events.push(next, Class::Arrival, Ev::Release(id));
            }
        }
        if p.on_miss == MissAction::Drop && deadline <= self.horizon {
            self.events.push(deadline, Class::Deadline, Ev::Deadline { task: id, job: index });
        }
        let t = &mut self.tasks[id];
        if t.job.is_none() {
            self.start_job(id, job, now);
        } else {
            t.backlog.push_back(job);
        }
    }

    fn start_job(&mut self, id: TaskId, job: Job, now: Time) {
        let t = &mut self.tasks[id];
        t.job = Some(job);
        t.announced = false;
        if matches!(self.specs[id].workload, Workload::Periodic(_)) {
            t.remaining = job.exec;
            self.make_ready(id, now);
        } else {
            t.phase = 0;
            self.enter_phase(id, now);
        }
    }

    // Starts the current phase of a task that is not on a CPU.
    fn enter_phase(&mut self, id: TaskId, now: Time) {
        match self.specs[id].workload.phase(self.tasks[id].phase) {
            Some(Phase::Compute(d)) => {
                self.tasks[id].remaining = d;
                self.make_ready(id, now);
            }
            Some(Phase::Io(service)) => {
                self.tasks[id].state = St::Blocked;
                self.device_submit(id, service, now);
            }
            None => {
                self.complete_job(id, now);
                self.tasks[id].state = St::Finished;
                self.tasks[id].ended = Some(now);
                let d = self.tasks[id].domain;
                self.domains[d].policy.retire(id, now);
            }
        }
    }

    fn make_ready(&mut self, id: TaskId, now: Time) {
        let t = &mut self.tasks[id];
        t.state = St::Ready;
        let arrival = match (t.announced, t.job) {
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
        if let Workload::Periodic(p) = &specs[id].workload {
            self.complete_job(id, now);
            if p.on_miss == MissAction::Skip {
                self.skip_missed(id, now);
            }
            let t = &mut self.tasks[id];
            if let Some(next) = t.backlog.pop_front() {
                self.stop_running(cpu, now, Stop::Done);
                self.start_job(id, next, now);
            } else if p.jobs.is_some_and(|n| t.released >= n) {
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
        t.phase += 1;
        match specs[id].workload.phase(t.phase) {
            Some(Phase::Compute(d)) => {
                t.remaining = d;
                self.arm_cpu(cpu);
            }
            Some(Phase::Io(service)) => {
                t.state = St::Blocked;
                t.blocks += 1;
                self.stop_running(cpu, now, Stop::Blocked);
                self.device_submit(id, service, now);
            }
            None => {
                t.state = St::Finished;
                t.ended = Some(now);
                self.complete_job(id, now);
                self.stop_running(cpu, now, Stop::Exited);
            }
        }
    }

    fn complete_job(&mut self, id: TaskId, now: Time) {
        let keep = self.cfg.record.responses;
        let t = &mut self.tasks[id];
        let Some(job) = t.job.take() else { return };
        t.jobs += 1;
        t.completion = Some(now);
        t.responses.push(now - job.release, keep);
        if let Some(o) = t.job_log.get_mut(job.index as usize) {
            o.finish = Some(now);
            o.met = job.deadline.is_none_or(|d| now <= d);
        }
        if let Some(d) = job.deadline {
            let missed = now > d;
            t.misses += u64::from(missed);
            t.windows.push(missed);
        }
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
                self.events.push(now + service, Class::Arrival, Ev::IoDone);
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

    /// Drops job `job` of task `id` at its deadline if it is still pending.
    pub(super) fn deadline_check(&mut self, id: TaskId, job: u64, now: Time) {
        let t = &mut self.tasks[id];
        if let Some(pos) = t.backlog.iter().position(|j| j.index == job) {
            t.backlog.remove(pos);
            self.count_drop(id);
            return;
        }
        if t.job.is_none_or(|j| j.index != job) {
            return;
        }
        t.job = None;
        let next = t.backlog.pop_front();
        match t.state {
            St::Running => {
                let cpu = t.last_cpu.expect("a running task has a CPU");
                self.account(cpu, now);
                self.stop_running(cpu, now, Stop::Aborted);
            }
            // With a next job waiting, the task stays ready: waking it again swaps the job in place.
            St::Ready if next.is_none() => {
                let dom = &mut self.domains[t.domain];
                dom.policy.cancel(id, now);
                dom.dirty = true;
            }
            _ => {}
        }
        self.count_drop(id);
        let specs = self.specs;
        let t = &mut self.tasks[id];
        if let Some(next) = next {
            self.start_job(id, next, now);
        } else if let Workload::Periodic(p) = &specs[id].workload {
            if p.jobs.is_some_and(|n| t.released >= n) {
                t.state = St::Finished;
                t.ended = Some(now);
                let dom = &mut self.domains[t.domain];
                dom.policy.retire(id, now);
            } else {
                t.state = St::Waiting;
            }
        }
    }

    /// [`MissAction::Skip`]: drops the queued jobs that could start only at or after their deadline.
    fn skip_missed(&mut self, id: TaskId, now: Time) {
        while self.tasks[id].backlog.front().is_some_and(|j| j.deadline.is_some_and(|d| d <= now)) {
            self.tasks[id].backlog.pop_front();
            self.count_drop(id);
        }
    }

    fn count_drop(&mut self, id: TaskId) {
        let t = &mut self.tasks[id];
        t.misses += 1;
        t.dropped += 1;
        t.windows.push(true);
    }
}
