//! The job loop of one periodic task, measured the way cyclictest measures.
//!
//! [`Runner::prepare`] does everything that may allocate or fault: mlockall, the job records
//! (capacity = number of jobs), the latency histogram (fixed bounds), a touch of the stack and,
//! by default, one warm-up job. [`Runner::run`] then releases job k at the absolute time
//! `start + phase + k T` on CLOCK_MONOTONIC:
//!
//! 1. if the previous job finished before the release, `clock_nanosleep(CLOCK_MONOTONIC,
//!    TIMER_ABSTIME, release)` (again on EINTR), then `clock_gettime` at once: wake-up latency
//!    = that time - release, recorded in the histogram. Nothing runs between the two calls, so
//!    under SCHED_FIFO the figure is comparable with cyclictest at the same interval and priority;
//! 2. run the body, reading the thread CPU clock around it (the measured C);
//! 3. record release, start, finish, deadline and work.
//!
//! **Overruns.** Releases stay on the grid whatever happens: a late job never shifts later
//! releases. Under [`OverrunPolicy::Queue`] (the default) every job runs: a job released while
//! its predecessor still runs starts when the predecessor finishes, without sleeping, and its
//! start delay is not a wake-up latency, so it goes into `late_starts`, not the histogram.
//! Under [`OverrunPolicy::SkipMissed`] a job whose absolute deadline has already passed when it
//! could start is not run at all: it is recorded as skipped and counts as a miss (like a late
//! packet dropped in DWCS's original setting), so the loop catches up with the grid.
//!
//! Minor and major page faults and context switches of the loop come from
//! getrusage(RUSAGE_THREAD) before and after it; with memory locked, faults should be 0.

use crate::body::JobBody;
use crate::clock::{now_ns, sleep_until, thread_cpu_ns, ThreadUsage};
use crate::hist::{new_latency_histogram, LATENCY_HIGH_NS};
use crate::summary::TaskSummary;
use hdrhistogram::Histogram;
use schedlab_plan::{TaskError, TaskParams};
use serde::{Deserialize, Serialize};
use std::io;

/// What to do with a job that cannot start before its deadline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OverrunPolicy {
    /// Run every job, late if need be; releases stay on the grid.
    #[default]
    Queue,
    /// Skip (and count as missed) a job whose deadline passed before it could start.
    SkipMissed,
}

/// How the loop is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunOptions {
    /// mlockall(MCL_CURRENT | MCL_FUTURE) before allocating anything (default true).
    pub lock_memory: bool,
    /// Run one unrecorded job in `prepare`, so code and data are faulted in (default true).
    pub warm_up: bool,
    /// What to do with jobs that cannot start before their deadline.
    pub overrun: OverrunPolicy,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions { lock_memory: true, warm_up: true, overrun: OverrunPolicy::Queue }
    }
}

/// One job as it happened; times are CLOCK_MONOTONIC nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord {
    /// Job number, from 0.
    pub index: u64,
    /// Absolute release time.
    pub release_ns: u64,
    /// Absolute deadline: release + D.
    pub deadline_ns: u64,
    /// When the job started (for a skipped job: when it was skipped).
    pub start_ns: u64,
    /// When the job finished (for a skipped job: when it was skipped).
    pub finish_ns: u64,
    /// Thread CPU time the body used.
    pub cpu_ns: u64,
    /// Work units the body reported.
    pub work: u64,
    /// The loop slept until the release (so `start - release` is a wake-up latency).
    pub slept: bool,
    /// The job was not run ([`OverrunPolicy::SkipMissed`]).
    pub skipped: bool,
}

impl JobRecord {
    /// Met its deadline: ran and finished no later than the deadline.
    pub fn met(&self) -> bool {
        !self.skipped && self.finish_ns <= self.deadline_ns
    }

    /// Response time, finish - release (None if skipped).
    pub fn response_ns(&self) -> Option<u64> {
        (!self.skipped).then(|| self.finish_ns.saturating_sub(self.release_ns))
    }

    /// Lateness, finish - deadline, negative when early (None if skipped).
    pub fn lateness_ns(&self) -> Option<i64> {
        (!self.skipped).then(|| self.finish_ns as i64 - self.deadline_ns as i64)
    }

    /// Start delay, start - release (the wake-up latency when `slept`; None if skipped).
    pub fn start_delay_ns(&self) -> Option<u64> {
        (!self.skipped).then(|| self.start_ns.saturating_sub(self.release_ns))
    }
}

/// Counters of the loop itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopStats {
    /// Minor page faults during the loop (0 expected with memory locked).
    pub minor_faults_in_loop: u64,
    /// Major page faults during the loop.
    pub major_faults_in_loop: u64,
    /// Voluntary context switches during the loop (sleeps, blocking I/O).
    pub voluntary_switches_in_loop: u64,
    /// Involuntary context switches (preemptions) during the loop.
    pub involuntary_switches_in_loop: u64,
    /// Wake-up latencies above the histogram's range.
    pub latency_overflow: u64,
}

/// Why the loop could not be set up or run.
#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    /// The task parameters are invalid.
    #[error(transparent)]
    Task(#[from] TaskError),
    /// No jobs asked for.
    #[error("jobs must be at least 1")]
    NoJobs,
    /// mlockall failed.
    #[error(
        "mlockall(MCL_CURRENT | MCL_FUTURE) failed: {0}; run as root or with CAP_IPC_LOCK, raise the locked-memory limit \
         (ulimit -l unlimited), or set lock_memory = false"
    )]
    LockMemory(io::Error),
    /// The last release would overflow the 64-bit clock.
    #[error("start {start_ns} ns + phase + {jobs} periods overflows 64-bit nanoseconds")]
    TimeOverflow {
        /// The start asked for.
        start_ns: u64,
        /// Jobs asked for.
        jobs: usize,
    },
}

/// One periodic task's job loop with everything preallocated.
pub struct Runner<B> {
    params: TaskParams,
    jobs: usize,
    body: B,
    options: RunOptions,
    records: Vec<JobRecord>,
    latency: Histogram<u64>,
    stats: LoopStats,
}

/// Touches this many bytes of stack in `prepare`, so the loop's frames are already mapped.
const STACK_PREFAULT: usize = 64 * 1024;

#[inline(never)]
fn prefault_stack() {
    let mut page = [0u8; STACK_PREFAULT];
    for b in page.iter_mut().step_by(4096) {
        *b = 1;
    }
    std::hint::black_box(&mut page);
}

/// mlockall(MCL_CURRENT | MCL_FUTURE).
pub fn lock_memory() -> io::Result<()> {
    // SAFETY: plain system call with constant flags.
    if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl<B: JobBody> Runner<B> {
    /// Validates, locks memory (if asked), preallocates `jobs` records and the histogram,
    /// touches the stack and runs the warm-up job (if asked).
    pub fn prepare(
        params: TaskParams,
        jobs: usize,
        mut body: B,
        options: RunOptions,
    ) -> Result<Self, LoopError> {
        params.validate()?;
        if jobs == 0 {
            return Err(LoopError::NoJobs);
        }
        if options.lock_memory {
            lock_memory().map_err(LoopError::LockMemory)?;
        }
        let mut records = Vec::with_capacity(jobs);
        // Writing every slot faults the pages in even without mlockall.
        records.resize(jobs, JobRecord::default());
        records.clear();
        let mut latency = new_latency_histogram();
        latency.reset(); // writes every counter: faults the (lazily zeroed) pages in
        prefault_stack();
        if options.warm_up {
            body.run_job();
        }
        Ok(Runner { params, jobs, body, options, records, latency, stats: LoopStats::default() })
    }

    /// Runs all jobs, the first released at `start_abs_ns + phase` (CLOCK_MONOTONIC). Earlier
    /// results are discarded; nothing is allocated.
    pub fn run(&mut self, start_abs_ns: u64) -> Result<LoopStats, LoopError> {
        let p = self.params;
        let overflow = LoopError::TimeOverflow { start_ns: start_abs_ns, jobs: self.jobs };
        let first = start_abs_ns.checked_add(p.phase_ns).ok_or(overflow)?;
        let span =
            (self.jobs as u64).checked_mul(p.t_ns).and_then(|s| s.checked_add(p.deadline_ns()));
        if span.and_then(|s| first.checked_add(s)).is_none() {
            return Err(LoopError::TimeOverflow { start_ns: start_abs_ns, jobs: self.jobs });
        }
        self.records.clear();
        self.latency.reset();
        let mut stats = LoopStats::default();
        let capacity = self.records.capacity();
        // getrusage(RUSAGE_THREAD) fails only on a bad pointer or flag, neither possible here.
        let usage_before = ThreadUsage::now().unwrap_or_default();

        let mut previous_finish = now_ns();
        for k in 0..self.jobs as u64 {
            let release = first + k * p.t_ns;
            let deadline = release + p.deadline_ns();
            if self.options.overrun == OverrunPolicy::SkipMissed && previous_finish >= deadline {
                let at = previous_finish;
                self.records.push(JobRecord {
                    index: k,
                    release_ns: release,
                    deadline_ns: deadline,
                    start_ns: at,
                    finish_ns: at,
                    skipped: true,
                    ..Default::default()
                });
                continue;
            }
            let slept = previous_finish < release;
            if slept {
                sleep_until(release);
            }
            let start = now_ns();
            if slept {
                let latency = start.saturating_sub(release);
                if latency > LATENCY_HIGH_NS {
                    stats.latency_overflow += 1;
                }
                self.latency.saturating_record(latency);
            }
            let cpu_before = thread_cpu_ns();
            let work = self.body.run_job();
            let cpu_ns = thread_cpu_ns().saturating_sub(cpu_before);
            let finish = now_ns();
            self.records.push(JobRecord {
                index: k,
                release_ns: release,
                deadline_ns: deadline,
                start_ns: start,
                finish_ns: finish,
                cpu_ns,
                work,
                slept,
                skipped: false,
            });
            previous_finish = finish;
        }

        let usage = ThreadUsage::now().unwrap_or_default().since(&usage_before);
        debug_assert_eq!(
            self.records.capacity(),
            capacity,
            "the record buffer must not grow in the loop"
        );
        stats.minor_faults_in_loop = usage.minor_faults;
        stats.major_faults_in_loop = usage.major_faults;
        stats.voluntary_switches_in_loop = usage.voluntary_switches;
        stats.involuntary_switches_in_loop = usage.involuntary_switches;
        self.stats = stats;
        Ok(stats)
    }

    /// The task.
    pub fn params(&self) -> &TaskParams {
        &self.params
    }

    /// The records of the last run, one per job in release order.
    pub fn records(&self) -> &[JobRecord] {
        &self.records
    }

    /// Capacity of the record buffer (the number of jobs; it never grows).
    pub fn records_capacity(&self) -> usize {
        self.records.capacity()
    }

    /// Wake-up latencies of the last run, in ns.
    pub fn latency_histogram(&self) -> &Histogram<u64> {
        &self.latency
    }

    /// Loop counters of the last run.
    pub fn stats(&self) -> LoopStats {
        self.stats
    }

    /// The body.
    pub fn body(&self) -> &B {
        &self.body
    }

    /// The per-task summary of the last run.
    pub fn summary(&self) -> TaskSummary {
        TaskSummary::new(
            &self.params,
            &self.records,
            &self.latency,
            &self.stats,
            self.body.errors(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::SpinBody;

    /// A body that takes a scripted wall time per job (sleeping, so the test costs no CPU).
    struct Scripted {
        durations_ns: Vec<u64>,
        next: usize,
    }

    impl JobBody for Scripted {
        fn run_job(&mut self) -> u64 {
            let d = self.durations_ns.get(self.next).copied().unwrap_or(0);
            self.next += 1;
            sleep_until(now_ns() + d);
            1
        }
    }

    fn no_lock(overrun: OverrunPolicy) -> RunOptions {
        RunOptions { lock_memory: false, warm_up: false, overrun }
    }

    #[test]
    fn prepare_refuses_bad_input() {
        let body = SpinBody::new(1);
        assert!(matches!(
            Runner::prepare(TaskParams::new(0, 10), 1, body.clone(), no_lock(OverrunPolicy::Queue)),
            Err(LoopError::Task(_))
        ));
        assert!(matches!(
            Runner::prepare(TaskParams::new(1, 10), 0, body.clone(), no_lock(OverrunPolicy::Queue)),
            Err(LoopError::NoJobs)
        ));
        let mut r =
            Runner::prepare(TaskParams::new(1, 1 << 40), 2, body, no_lock(OverrunPolicy::Queue))
                .unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(r.run(u64::MAX - 5), Err(LoopError::TimeOverflow { .. })));
    }

    #[test]
    fn lock_error_says_what_to_do() {
        let msg = LoopError::LockMemory(io::Error::from_raw_os_error(libc::EPERM)).to_string();
        assert!(msg.contains("ulimit -l") && msg.contains("lock_memory = false"), "{msg}");
    }

    #[test]
    fn queue_policy_runs_late_jobs_without_sleeping() {
        // T = 20 ms; job 1 takes 50 ms, so jobs 2 and 3 are released while it runs.
        let t = 20_000_000;
        let body = Scripted {
            durations_ns: vec![1_000_000, 50_000_000, 1_000_000, 1_000_000, 1_000_000],
            next: 0,
        };
        let mut r =
            Runner::prepare(TaskParams::new(1_000_000, t), 5, body, no_lock(OverrunPolicy::Queue))
                .unwrap();
        let start = now_ns() + 5_000_000;
        r.run(start).unwrap();
        let recs = r.records();
        assert_eq!(recs.len(), 5);
        for (k, rec) in recs.iter().enumerate() {
            assert_eq!(rec.release_ns, start + k as u64 * t, "releases stay on the grid");
            assert!(
                !rec.skipped && rec.start_ns >= rec.release_ns && rec.finish_ns >= rec.start_ns
            );
        }
        assert!(!recs[1].met(), "50 ms in a 20 ms period");
        assert!(
            !recs[2].slept && recs[2].start_ns >= recs[1].finish_ns,
            "job 2 queued behind job 1"
        );
        let slept = recs.iter().filter(|r| r.slept).count() as u64;
        assert_eq!(r.latency_histogram().len(), slept, "only real wake-ups are latencies");
        let s = r.summary();
        assert_eq!((s.jobs, s.skipped), (5, 0));
        assert_eq!(s.late_starts, 5 - slept);
    }

    #[test]
    fn skip_policy_drops_jobs_past_their_deadline() {
        let t = 20_000_000;
        let body = Scripted {
            durations_ns: vec![1_000_000, 50_000_000, 1_000_000, 1_000_000, 1_000_000, 1_000_000],
            next: 0,
        };
        let mut r = Runner::prepare(
            TaskParams::new(1_000_000, t),
            6,
            body,
            no_lock(OverrunPolicy::SkipMissed),
        )
        .unwrap();
        let start = now_ns() + 5_000_000;
        r.run(start).unwrap();
        let recs = r.records();
        assert_eq!(recs.len(), 6, "skipped jobs keep their place");
        // Job 1 ends after 21 + 50 = 71 ms (or later): jobs 2 (deadline 60 ms) must be skipped.
        assert!(recs[2].skipped && !recs[2].met() && recs[2].response_ns().is_none());
        assert!(recs.iter().all(|r| r.skipped || r.finish_ns > r.start_ns));
        assert_eq!(
            r.body().next,
            6 - recs.iter().filter(|r| r.skipped).count(),
            "skipped jobs ran no body"
        );
        assert!(r.summary().misses >= 2);
    }

    #[test]
    fn run_can_be_repeated_without_growing() {
        let mut r = Runner::prepare(
            TaskParams::new(100_000, 2_000_000),
            4,
            SpinBody::new(100_000),
            no_lock(OverrunPolicy::Queue),
        )
        .unwrap();
        let cap = r.records_capacity();
        for _ in 0..2 {
            r.run(now_ns() + 1_000_000).unwrap();
            assert_eq!(r.records().len(), 4);
            assert_eq!(r.records_capacity(), cap);
            assert!(r.records().iter().all(|j| j.cpu_ns >= 100_000), "spin burns C of CPU");
        }
    }

    #[test]
    fn record_arithmetic() {
        let rec = JobRecord {
            release_ns: 100,
            deadline_ns: 200,
            start_ns: 110,
            finish_ns: 250,
            ..Default::default()
        };
        assert_eq!(
            (rec.met(), rec.response_ns(), rec.lateness_ns(), rec.start_delay_ns()),
            (false, Some(150), Some(50), Some(10))
        );
        let early = JobRecord { finish_ns: 150, ..rec };
        assert_eq!((early.met(), early.lateness_ns()), (true, Some(-50)));
        let on_time = JobRecord { finish_ns: 200, ..rec };
        assert!(on_time.met(), "finishing at the deadline meets it");
    }
}
