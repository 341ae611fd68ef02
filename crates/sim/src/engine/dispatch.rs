//! Decisions: filling free CPUs, preemption, dispatch costs and CPU accounting.

use schedlab_policy::{Duration, SchedPolicy, Stop, TaskId, Time};

use super::{Ev, Simulator, St};
use crate::event::EventClass;
use crate::result::Slice;

impl<P: SchedPolicy> Simulator<'_, P> {
    /// Lets domain `d`'s policy fill its free CPUs and preempt where it wants to.
    pub(super) fn resched(&mut self, d: usize, now: Time) {
        self.changed.clear();
        let ncpu = self.domains[d].cpus.len();
        for i in 0..ncpu {
            let cpu = self.domains[d].cpus[i];
            if self.cpus[cpu].running.is_some() {
                continue;
            }
            match self.domains[d].policy.pick_next(now) {
                Some(id) => {
                    self.cpus[cpu].running = Some(id);
                    self.changed.push(cpu);
                }
                None => break,
            }
        }
        while self.domains[d].policy.has_ready() {
            let Some((vc, vid)) = self.lowest_running(d, now) else {
                break;
            };
            if !self.domains[d].policy.should_preempt(vid, now) {
                break;
            }
            if self.changed.contains(&vc) {
                // Picked in this very pass and not started: hand it back, no preemption happened.
                self.cpus[vc].running = None;
                self.domains[d].policy.stop(vid, now, Stop::Preempted);
            } else {
                self.account(vc, now);
                self.stop_running(vc, now, Stop::Preempted);
                self.changed.push(vc);
            }
            match self.domains[d].policy.pick_next(now) {
                Some(id) => self.cpus[vc].running = Some(id),
                None => {
                    self.changed.retain(|&c| c != vc);
                    break;
                }
            }
        }
        self.keep_affinity(d);
        for i in 0..self.changed.len() {
            let cpu = self.changed[i];
            let id = self.cpus[cpu].running.expect("assigned above");
            self.dispatch(cpu, id, now);
        }
        for i in 0..ncpu {
            let cpu = self.domains[d].cpus[i];
            if let Some(p) = self.cpus[cpu].stopped.take() {
                if self.cpus[cpu].running != Some(p) {
                    self.tasks[p].preemptions += 1;
                }
            }
        }
        // Stops made by this pass were decided here; nothing is left to reconsider.
        self.domains[d].dirty = false;
        self.arm_policy_timer(d, now);
    }

    fn lowest_running(&self, d: usize, now: Time) -> Option<(usize, TaskId)> {
        let dom = &self.domains[d];
        let mut victim: Option<(usize, TaskId)> = None;
        for &cpu in &dom.cpus {
            if let Some(id) = self.cpus[cpu].running {
                victim = match victim {
                    Some((_, v)) if dom.policy.precedes(v, id, now) => Some((cpu, id)),
                    None => Some((cpu, id)),
                    keep => keep,
                };
            }
        }
        victim
    }

    // Sends a newly picked task back to the CPU it last ran on when that CPU is idle
    // or is also taking a task that has no claim on it: fewer needless migrations.
    fn keep_affinity(&mut self, d: usize) {
        for i in 0..self.changed.len() {
            let ci = self.changed[i];
            let ti = self.cpus[ci].running.expect("assigned");
            let Some(home) = self.tasks[ti].last_cpu else {
                continue;
            };
            if home == ci || self.cpus[home].domain != d {
                continue;
            }
            match self.cpus[home].running {
                None => {
                    self.cpus[home].running = Some(ti);
                    self.cpus[ci].running = None;
                    self.changed[i] = home;
                }
                Some(tj)
                    if self.changed.contains(&home) && self.tasks[tj].last_cpu != Some(home) =>
                {
                    self.cpus[ci].running = Some(tj);
                    self.cpus[home].running = Some(ti);
                }
                Some(_) => {}
            }
        }
    }

    fn dispatch(&mut self, cpu: usize, id: TaskId, now: Time) {
        let costs = self.cfg.costs;
        let limit = self.domains[self.cpus[cpu].domain].policy.run_limit(id, now);
        let c = &mut self.cpus[cpu];
        let t = &mut self.tasks[id];
        let mut overhead = 0;
        if c.last_task != Some(id) {
            overhead += costs.context_switch;
            c.result.switches += 1;
        }
        if t.last_cpu.is_some_and(|prev| prev != cpu) {
            t.migrations += 1;
            overhead += costs.migration;
        }
        c.result.overhead += overhead;
        if t.state == St::Ready {
            t.runnable += now - t.ready_since;
        }
        t.dispatches += 1;
        t.last_cpu = Some(cpu);
        t.state = St::Running;
        c.last_task = Some(id);
        c.running = Some(id);
        // The switch waits for the interrupt handlers in progress.
        c.work_start = now.max(c.irq_until) + overhead;
        t.first_run.get_or_insert(c.work_start);
        if let Some(o) = t.jobs.current().and_then(|j| t.job_log.get_mut(j.index as usize)) {
            o.start.get_or_insert(c.work_start);
        }
        // The limit runs from when the task makes progress, so a cost can never starve it.
        c.limit_end = limit.map(|l| c.work_start + l.max(1));
        self.arm_cpu(cpu);
    }

    /// An interrupt handler of `cost` on `cpu` at `now`, after those in progress there: the
    /// running task (or its switch) is held up as long, on its CPU, its run limit moved as
    /// far; a task whose work is done by `now` finishes at `now`.
    pub(super) fn interrupt(&mut self, cpu: usize, now: Time, cost: Duration) {
        self.account(cpu, now);
        let c = &mut self.cpus[cpu];
        c.irq_until = c.irq_until.max(now) + cost;
        c.result.interrupts += cost;
        let Some(id) = c.running else { return };
        if self.tasks[id].remaining == 0 && c.work_start <= now {
            return;
        }
        // Running: work_start is at least now (just accounted) and after earlier handlers.
        c.work_start += cost;
        if let Some(l) = &mut c.limit_end {
            *l += cost;
        }
        self.arm_cpu(cpu);
    }

    /// The tick on every CPU, and the next one while any task is unfinished.
    pub(super) fn tick(&mut self, now: Time) {
        let costs = self.cfg.costs;
        for cpu in 0..self.cpus.len() {
            self.interrupt(cpu, now, costs.tick);
        }
        let next = now + costs.tick_period;
        if next <= self.horizon && self.tasks.iter().any(|t| t.state != St::Finished) {
            self.asked(next);
            self.events.push(next, EventClass::Arrival, Ev::Tick);
        }
    }

    /// (Re)arms the CPU timer for the running task's phase end or run limit.
    pub(super) fn arm_cpu(&mut self, cpu: usize) {
        let c = &self.cpus[cpu];
        let Some(id) = c.running else { return };
        let done = c.work_start + self.tasks[id].remaining;
        let at = c.limit_end.map_or(done, |l| l.min(done));
        self.asked(at);
        let replaced = if at <= self.horizon {
            self.events.arm(cpu, at, EventClass::Cpu, Ev::Cpu { cpu: cpu as u32 })
        } else {
            self.events.disarm(cpu)
        };
        self.dropped(replaced);
    }

    /// Credits the running task with its progress up to `now`.
    pub(super) fn account(&mut self, cpu: usize, now: Time) {
        let c = &mut self.cpus[cpu];
        let Some(id) = c.running else { return };
        if now <= c.work_start {
            return;
        }
        let t = &mut self.tasks[id];
        let ran = (now - c.work_start).min(t.remaining);
        t.remaining -= ran;
        t.cpu_time += ran;
        c.result.busy += ran;
        let start = c.work_start;
        c.work_start = now;
        if self.cfg.record.trace {
            self.record_slice(cpu, id, start, now);
        }
    }

    fn record_slice(&mut self, cpu: usize, task: TaskId, start: Time, end: Time) {
        if let Some(i) = self.cpus[cpu].last_slice {
            let s = &mut self.trace[i];
            if s.task == task && s.end == start {
                s.end = end;
                s.stop = None;
                return;
            }
        }
        self.cpus[cpu].last_slice = Some(self.trace.len());
        self.trace.push(Slice { cpu, task, start, end, stop: None });
    }

    /// Takes the running task off `cpu` and tells its policy why.
    pub(super) fn stop_running(&mut self, cpu: usize, now: Time, why: Stop) {
        if let Some(s) = self.cpus[cpu].last_slice.map(|i| &mut self.trace[i]) {
            if Some(s.task) == self.cpus[cpu].running && s.end == now {
                s.stop = Some(why);
            }
        }
        let c = &mut self.cpus[cpu];
        let Some(id) = c.running.take() else { return };
        c.limit_end = None;
        if why.stays_ready() {
            c.stopped = Some(id);
            self.tasks[id].state = St::Ready;
            self.tasks[id].ready_since = now;
        }
        let dom = &mut self.domains[c.domain];
        dom.policy.stop(id, now, why);
        dom.dirty = true;
        let cancelled = self.events.disarm(cpu);
        self.dropped(cancelled);
    }

    /// Notes the time of a timer dropped before it was due (see `run`).
    fn dropped(&mut self, at: Option<Time>) {
        if let Some(at) = at {
            self.dropped_until = self.dropped_until.max(at);
        }
    }

    fn arm_policy_timer(&mut self, d: usize, now: Time) {
        let dom = &mut self.domains[d];
        let Some(at) = dom.policy.next_timer() else {
            return;
        };
        self.asked(at);
        let dom = &mut self.domains[d];
        if at > now && at <= self.horizon && dom.timer != Some(at) {
            dom.timer = Some(at);
            let replaced = self.events.arm(
                self.cfg.cpus + d,
                at,
                EventClass::Arrival,
                Ev::Timer { domain: d as u32 },
            );
            self.dropped(replaced);
        }
    }
}
