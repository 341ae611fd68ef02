//! The periodic job lifecycle of one task: releases on the grid phase + k x T, absolute
//! deadlines, job numbering, what a job unfinished at its deadline does, and the outcome of
//! every job (fed to the task's [`WindowCounter`]).
//!
//! One implementation for both drivers: the simulator calls it at virtual times, the live
//! dispatcher at CLOCK_MONOTONIC times. Like a policy it reads no clock and makes no system
//! call; the driver says when things happen and acts on what comes back (waking, stopping or
//! cancelling the task in its policy).
//!
//! After [`new`](JobLifecycle::new) nothing allocates as long as the backlog stays within the
//! capacity given there, so a real-time loop may drive it.
//!
//! ```
//! use schedlab_policy::jobs::{JobLifecycle, JobSpec, LateJob};
//!
//! let spec = JobSpec { period: Some(10), deadline: Some(10), late: LateJob::Drop, limit: None };
//! let mut jobs = JobLifecycle::new(spec, 0, 1);
//! assert!(jobs.release(0, ()).unwrap().started);
//! let done = jobs.complete(7).unwrap();
//! assert!(done.met);
//! assert_eq!(jobs.next_release(), Some(10));
//! jobs.release(10, ());
//! // Unfinished at its deadline 20: dropped under LateJob::Drop.
//! assert_eq!(jobs.expire(20).dropped, 1);
//! assert_eq!((jobs.counts().met, jobs.counts().dropped), (1, 1));
//! ```

use std::collections::VecDeque;

use crate::cycle::{self, StateWriter};
use crate::{Duration, Time, Window, WindowCounter, WindowReport};

/// What happens to a job still unfinished at its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LateJob {
    /// It runs on until done (soft deadlines); later jobs queue behind it.
    #[default]
    Continue,
    /// It is dropped at its deadline (firm deadlines, DWCS's lost packets).
    Drop,
    /// It runs on until done, but a queued job whose deadline passed by then is skipped.
    Skip,
}

/// A task's job parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JobSpec {
    /// Period T; `None` for a task with a single job.
    pub period: Option<Duration>,
    /// Relative deadline D; `None` for jobs without a deadline.
    pub deadline: Option<Duration>,
    /// What a job unfinished at its deadline does.
    pub late: LateJob,
    /// How many jobs are released at most (`None`: no limit).
    pub limit: Option<u64>,
}

/// One job. `P` is the driver's own data about it (work to do, a record index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Job<P> {
    /// Its number among the task's jobs, from 0.
    pub index: u64,
    /// When it was released.
    pub release: Time,
    /// Its absolute deadline, if it has one.
    pub deadline: Option<Time>,
    /// The driver's data.
    pub payload: P,
}

impl<P> Job<P> {
    fn due_by(&self, now: Time) -> bool {
        self.deadline.is_some_and(|d| d <= now)
    }
}

/// What [`release`](JobLifecycle::release) did with the new job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Released<P> {
    /// The job.
    pub job: Job<P>,
    /// It became the current job (the task has work to announce).
    pub started: bool,
    /// It was already due when released (a late driver, under [`LateJob::Drop`]): dropped.
    pub dropped: bool,
}

/// What [`complete`](JobLifecycle::complete) found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completed<P> {
    /// The job that finished.
    pub job: Job<P>,
    /// Finished by its deadline (or it has none).
    pub met: bool,
    /// Queued jobs skipped because they could start only at or after their deadline.
    pub skipped: u64,
    /// The queued job that became current, if any.
    pub next: Option<Job<P>>,
}

/// What [`expire`](JobLifecycle::expire) dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expired<P> {
    /// Jobs dropped, current or queued.
    pub dropped: u64,
    /// The current job, if it was among them.
    pub current: Option<Job<P>>,
    /// The queued job that became current in its place, if any.
    pub next: Option<Job<P>>,
}

/// How the task's jobs ended so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JobCounts {
    /// Jobs released.
    pub released: u64,
    /// Jobs finished by their deadline.
    pub met: u64,
    /// Jobs finished after their deadline.
    pub late: u64,
    /// Jobs dropped unfinished (at their deadline, or skipped).
    pub dropped: u64,
    /// Jobs unfinished and due when the run ended ([`finish`](JobLifecycle::finish)).
    pub unfinished: u64,
}

impl JobCounts {
    /// Jobs that finished, on time or late.
    pub fn completed(&self) -> u64 {
        self.met + self.late
    }

    /// Deadlines missed: late, dropped, or due and unfinished at the end.
    pub fn missed(&self) -> u64 {
        self.late + self.dropped + self.unfinished
    }
}

/// The jobs of one task: the current one, the queue behind it, and the outcomes so far.
#[derive(Debug, Clone)]
pub struct JobLifecycle<P> {
    spec: JobSpec,
    next_release: Option<Time>,
    current: Option<Job<P>>,
    backlog: VecDeque<Job<P>>,
    counts: JobCounts,
    windows: WindowCounter,
}

impl<P: Copy> JobLifecycle<P> {
    /// The first job is due at `first_release`; room for `backlog` queued jobs is reserved.
    pub fn new(spec: JobSpec, first_release: Time, backlog: usize) -> Self {
        Self::judged(spec, first_release, backlog, Window::HARD)
    }

    /// As [`new`](Self::new), with the task's window constraint for [`windows`](Self::windows).
    pub fn judged(spec: JobSpec, first_release: Time, backlog: usize, window: Window) -> Self {
        Self {
            spec,
            next_release: (spec.limit != Some(0)).then_some(first_release),
            current: None,
            backlog: VecDeque::with_capacity(backlog),
            counts: JobCounts::default(),
            windows: WindowCounter::new(window),
        }
    }

    /// When the next job is due, or `None` when no job is left to release.
    pub fn next_release(&self) -> Option<Time> {
        self.next_release
    }

    /// The job being worked on.
    pub fn current(&self) -> Option<Job<P>> {
        self.current
    }

    /// Jobs released and queued behind the current one.
    pub fn queued(&self) -> usize {
        self.backlog.len()
    }

    /// Outcomes so far.
    pub fn counts(&self) -> JobCounts {
        self.counts
    }

    /// The deadlines judged so far against the window constraint.
    pub fn windows(&self) -> WindowReport {
        self.windows.report()
    }

    /// Releases the job due at [`next_release`](Self::next_release), which must be `<= now`
    /// (`None` when no job is left). It becomes current when there is none, is queued
    /// otherwise, and under [`LateJob::Drop`] is dropped at once if already due at `now`.
    pub fn release(&mut self, now: Time, payload: P) -> Option<Released<P>> {
        let release = self.next_release.filter(|&r| r <= now)?;
        let index = self.counts.released;
        self.counts.released += 1;
        let more = self.spec.limit.is_none_or(|n| index + 1 < n);
        self.next_release = match self.spec.period {
            Some(t) if more => Some(release.saturating_add(t)),
            _ => None,
        };
        let job = Job {
            index,
            release,
            deadline: self.spec.deadline.map(|d| release.saturating_add(d)),
            payload,
        };
        if self.spec.late == LateJob::Drop && job.due_by(now) {
            self.drop_one();
            return Some(Released { job, started: false, dropped: true });
        }
        let started = self.current.is_none();
        if started {
            self.current = Some(job);
        } else {
            self.backlog.push_back(job);
        }
        Some(Released { job, started, dropped: false })
    }

    /// The current job finished at `now`; under [`LateJob::Skip`] queued jobs already due are
    /// skipped, then the next queued job becomes current.
    pub fn complete(&mut self, now: Time) -> Option<Completed<P>> {
        let job = self.current.take()?;
        let met = job.deadline.is_none_or(|d| now <= d);
        if met {
            self.counts.met += 1;
        } else {
            self.counts.late += 1;
        }
        if job.deadline.is_some() {
            self.windows.push(!met);
        }
        let mut skipped = 0;
        if self.spec.late == LateJob::Skip {
            while self.backlog.front().is_some_and(|j| j.due_by(now)) {
                self.backlog.pop_front();
                self.drop_one();
                skipped += 1;
            }
        }
        self.current = self.backlog.pop_front();
        Some(Completed { job, met, skipped, next: self.current })
    }

    /// Under [`LateJob::Drop`], drops every job unfinished at its deadline (`<= now`); the
    /// next queued job becomes current in place of a dropped current one.
    pub fn expire(&mut self, now: Time) -> Expired<P> {
        let mut out = Expired { dropped: 0, current: None, next: None };
        if self.spec.late != LateJob::Drop {
            return out;
        }
        while self.backlog.front().is_some_and(|j| j.due_by(now)) {
            self.backlog.pop_front();
            self.drop_one();
            out.dropped += 1;
        }
        if self.current.is_some_and(|j| j.due_by(now)) {
            out.current = self.current.take();
            self.drop_one();
            out.dropped += 1;
            self.current = self.backlog.pop_front();
            out.next = self.current;
        }
        out
    }

    /// The earliest deadline at which [`expire`](Self::expire) would drop a job.
    pub fn next_expiry(&self) -> Option<Time> {
        if self.spec.late != LateJob::Drop {
            return None;
        }
        self.current.iter().chain(self.backlog.iter()).filter_map(|j| j.deadline).min()
    }

    /// The run ended at `end`: unfinished jobs already due count as missed. Returns the
    /// current job if it was neither met nor missed (not yet due), which is left out.
    pub fn finish(&mut self, end: Time) -> Option<Job<P>> {
        let current = self.current.take();
        let mut pending = None;
        for job in current.iter().chain(self.backlog.iter()) {
            if job.due_by(end) {
                self.counts.unfinished += 1;
                self.windows.push(true);
            } else if pending.is_none() {
                pending = Some(*job);
            }
        }
        self.backlog.clear();
        pending.filter(|j| current.is_some_and(|c| c.index == j.index))
    }

    /// Stops releasing: the task is gone. Its current job is abandoned, unjudged.
    pub fn retire(&mut self) {
        self.next_release = None;
        self.current = None;
        self.backlog.clear();
    }

    /// With no job current or queued, writes what decides the coming jobs (see
    /// [`cycle`](crate::cycle)), times relative to `origin`, and returns true. The job
    /// limit is left to [`cycles_left`](Self::cycles_left).
    pub fn cycle_state(&self, origin: Time, out: &mut Vec<u64>) -> bool {
        if self.current.is_some() || !self.backlog.is_empty() {
            return false;
        }
        StateWriter::new(out, origin).opt_time(self.next_release);
        self.windows.cycle_state(out);
        true
    }

    /// How many more cycles like the one since `earlier` can pass before the job limit
    /// changes what a release does (`None`: as many as wanted).
    pub fn cycles_left(&self, earlier: &JobLifecycle<P>) -> Option<u64> {
        let limit = self.spec.limit?;
        let per = self.counts.released - earlier.counts.released;
        // Cycle j releases the jobs numbered released + (j - 1) per .. released + j per - 1,
        // and each must leave a next one: index + 1 < limit.
        (per > 0).then(|| limit.saturating_sub(self.counts.released + 1) / per)
    }

    /// Repeats `k` more times what happened since `earlier`, a copy of this lifecycle whose
    /// [`cycle_state`](Self::cycle_state) a cycle ago was the same as its own now, and
    /// moves the next release `by` later (k cycles).
    pub fn repeat(&mut self, earlier: &JobLifecycle<P>, k: u64, by: Duration) {
        let (c, e) = (&mut self.counts, earlier.counts);
        for (now, then) in [
            (&mut c.released, e.released),
            (&mut c.met, e.met),
            (&mut c.late, e.late),
            (&mut c.dropped, e.dropped),
        ] {
            *now += k * (*now - then);
        }
        self.windows.repeat(&earlier.windows, k);
        cycle::shift_opt(&mut self.next_release, by);
    }

    fn drop_one(&mut self) {
        self.counts.dropped += 1;
        self.windows.push(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(late: LateJob) -> JobSpec {
        JobSpec { period: Some(10), deadline: Some(10), late, limit: None }
    }

    #[test]
    fn releases_follow_the_grid_and_number_jobs() {
        let mut j = JobLifecycle::new(spec(LateJob::Continue), 5, 4);
        assert_eq!(j.release(4, ()), None, "not yet due");
        let r = j.release(5, ()).unwrap();
        assert_eq!((r.job.index, r.job.release, r.job.deadline, r.started), (0, 5, Some(15), true));
        // A late driver still releases on the grid, not at its own time.
        let r = j.release(27, ()).unwrap();
        assert_eq!((r.job.index, r.job.release, r.started), (1, 15, false));
        assert_eq!(j.next_release(), Some(25));
    }

    #[test]
    fn continue_queues_late_jobs_and_judges_them_late() {
        let mut j = JobLifecycle::new(spec(LateJob::Continue), 0, 4);
        j.release(0, ());
        j.release(10, ());
        assert_eq!(j.expire(10).dropped, 0, "never dropped under Continue");
        let c = j.complete(12).unwrap();
        assert!(!c.met);
        assert_eq!(c.next.map(|n| n.index), Some(1));
        assert!(j.complete(15).unwrap().met);
        assert_eq!(
            j.counts(),
            JobCounts { released: 2, met: 1, late: 1, dropped: 0, unfinished: 0 }
        );
    }

    #[test]
    fn drop_removes_a_job_at_its_deadline_and_promotes_the_next() {
        let s = JobSpec { deadline: Some(15), ..spec(LateJob::Drop) };
        let mut j = JobLifecycle::new(s, 0, 4);
        j.release(0, ());
        j.release(10, ());
        assert_eq!(j.next_expiry(), Some(15));
        let e = j.expire(15);
        assert_eq!(
            (e.dropped, e.current.map(|c| c.index), e.next.map(|n| n.index)),
            (1, Some(0), Some(1))
        );
        assert_eq!(j.counts().missed(), 1);
    }

    #[test]
    fn drop_counts_a_job_due_at_its_release_as_dropped_unannounced() {
        let mut j = JobLifecycle::new(spec(LateJob::Drop), 0, 1);
        let r = j.release(30, ()).unwrap();
        assert!(r.dropped && !r.started);
        assert_eq!(j.current(), None);
        assert_eq!(j.counts().dropped, 1);
    }

    #[test]
    fn skip_drops_queued_jobs_already_due_at_completion() {
        let mut j = JobLifecycle::new(spec(LateJob::Skip), 0, 4);
        for t in [0, 10, 20] {
            j.release(t, ());
        }
        let c = j.complete(25).unwrap();
        assert_eq!((c.met, c.skipped, c.next.map(|n| n.index)), (false, 1, Some(2)));
        assert_eq!(
            j.counts(),
            JobCounts { released: 3, met: 0, late: 1, dropped: 1, unfinished: 0 }
        );
    }

    #[test]
    fn the_limit_stops_releases() {
        let mut j = JobLifecycle::new(JobSpec { limit: Some(2), ..spec(LateJob::Continue) }, 0, 2);
        j.release(0, ());
        j.release(10, ());
        assert_eq!(j.next_release(), None);
        assert_eq!(j.release(100, ()), None);
        let single =
            JobLifecycle::<()>::new(JobSpec { period: None, ..spec(LateJob::Continue) }, 3, 0);
        assert_eq!(single.next_release(), Some(3));
    }

    #[test]
    fn finish_counts_due_jobs_missed_and_returns_the_pending_one() {
        let mut j = JobLifecycle::new(spec(LateJob::Continue), 0, 4);
        j.release(0, ());
        j.release(10, ());
        assert_eq!(j.finish(12).map(|p| p.index), None, "the current job was due: missed");
        assert_eq!(j.counts().unfinished, 1);
        let mut j = JobLifecycle::new(spec(LateJob::Continue), 0, 4);
        j.release(0, ());
        assert_eq!(j.finish(5).map(|p| p.index), Some(0));
        assert_eq!(j.counts().missed(), 0);
    }

    #[test]
    fn windows_judge_every_deadline_outcome() {
        let mut j = JobLifecycle::judged(spec(LateJob::Drop), 0, 1, Window::new(0, 2));
        j.release(0, ());
        j.expire(10);
        j.release(10, ());
        j.complete(12);
        let w = j.windows();
        assert_eq!((w.deadlines, w.sliding.violations), (2, 1));
    }
}
