//! What the loop shows: live status in the region, and the metrics at the end.

use super::decide::Core;
use super::tick::Loop;
use crate::metrics::{Latency, Metrics, PolicyView, TaskMetrics, METRICS_SCHEMA};
use crate::status::TaskState;
use schedlab_model::jobs::JobLog;
use std::sync::atomic::Ordering::*;

impl Loop<'_> {
    /// Publishes the live counters and every task's status (seqlock-consistent).
    pub(super) fn publish(&self, now: u64) {
        let h = self.region.header();
        h.live.seq.write(|| {
            let l = &h.live;
            l.running.store(self.on_cpu.map_or(0, |i| i as u32 + 1), Relaxed);
            l.heartbeat_ns.store(now, Relaxed);
            l.ticks.store(self.ticks, Relaxed);
            l.decisions.store(self.decisions, Relaxed);
            l.switches.store(self.switches, Relaxed);
            l.overruns.store(self.overruns, Relaxed);
            l.lat_p50_ns.store(self.lat_cache[0], Relaxed);
            l.lat_p99_ns.store(self.lat_cache[1], Relaxed);
            l.lat_max_ns.store(self.lat_cache[2], Relaxed);
        });
        for (i, task) in self.decider.tasks.iter().enumerate() {
            let st = &self.region.slot(i).status;
            let live = task.jobs.current();
            let counts = task.jobs.counts();
            let state = if task.exited {
                TaskState::Exited
            } else if self.on_cpu == Some(i) {
                TaskState::Running
            } else if live.is_some() {
                TaskState::Ready
            } else {
                TaskState::Idle
            };
            let job_deadline = live.and_then(|j| j.deadline).unwrap_or(0);
            let sliding = task.jobs.windows().sliding;
            let (cur, deadline, violations) = match &self.decider.core {
                Core::Dwcs(d) => match d.view(i) {
                    Some(v) => (
                        (v.current.x, v.current.y, v.current.tagged),
                        v.deadline.unwrap_or(0),
                        v.violations,
                    ),
                    None => ((0, 0, false), 0, 0),
                },
                Core::Edf(_) => ((0, 0, false), job_deadline, sliding.violations),
            };
            st.seq.write(|| {
                st.state.store(state.as_u32(), Relaxed);
                st.x_cur.store(cur.0, Relaxed);
                st.y_cur.store(cur.1, Relaxed);
                st.tagged.store(u32::from(cur.2), Relaxed);
                st.deadline_ns.store(deadline, Relaxed);
                st.job_deadline_ns.store(job_deadline, Relaxed);
                st.released.store(counts.released, Relaxed);
                st.completed.store(counts.met, Relaxed);
                st.missed.store(counts.missed(), Relaxed);
                st.violations.store(violations, Relaxed);
                st.windows.store(sliding.windows, Relaxed);
                st.window_violations.store(sliding.violations, Relaxed);
                st.dispatches.store(task.dispatches, Relaxed);
                st.last_decision_ns.store(now, Relaxed);
            });
        }
    }

    /// Counts jobs already due at the end as missed and builds the record (allocating is fine here).
    pub(super) fn finish(&mut self, now: u64, faults: (u64, u64)) -> Metrics {
        self.decider.finish(now);
        self.apply(now);
        self.publish(now);
        let tasks = self
            .cfg
            .tasks
            .iter()
            .zip(&self.decider.tasks)
            .enumerate()
            .map(|(i, (c, t))| (i, c, t, t.jobs.counts(), t.jobs.windows()))
            .map(|(i, c, t, n, w)| TaskMetrics {
                slot: i,
                pid: c.pid,
                c_ns: c.c_ns,
                t_ns: c.t_ns,
                d_ns: c.deadline(),
                window: c.window(),
                released: n.released,
                completed: n.met,
                missed: n.missed(),
                late_completions: n.late,
                dispatches: t.dispatches,
                windows: w.sliding.windows,
                window_violations: w.sliding.violations,
                fixed_windows: w.fixed.windows,
                fixed_window_violations: w.fixed.violations,
                periods_in_violation: w.periods_in_violation,
                policy: match &self.decider.core {
                    Core::Dwcs(d) => d.view(i).map(|v| PolicyView {
                        x_cur: v.current.x,
                        y_cur: v.current.y,
                        tagged: v.current.tagged,
                        serviced: v.serviced,
                        missed: v.missed,
                        violations: v.violations,
                    }),
                    Core::Edf(_) => None,
                },
                exited: t.exited,
            })
            .collect();
        Metrics {
            schema: METRICS_SCHEMA.into(),
            policy: self.cfg.policy.name().into(),
            cpu: self.cfg.cpu,
            quantum_ns: self.q,
            start_ns: self.start,
            elapsed_ns: now.saturating_sub(self.start),
            ticks: self.ticks,
            decisions: self.decisions,
            completion_wakeups: self.completion_wakeups,
            switches: self.switches,
            dispatch_latency: Latency::of(&self.latency),
            decision_cost: Latency::of(&self.cost),
            overruns: self.overruns,
            skipped_ticks: self.skipped,
            minor_faults: faults.0,
            major_faults: faults.1,
            control_errors: self.control_errors,
            offcpu_completions: self.decider.offcpu,
            tasks,
            job_logs: self
                .cfg
                .tasks
                .iter()
                .zip(&self.decider.tasks)
                .map(|(c, t)| JobLog {
                    source: "dispatcher".into(),
                    d_ns: c.deadline(),
                    jobs: t.trace.clone(),
                    unrecorded: t.unrecorded,
                })
                .collect(),
        }
    }
}
