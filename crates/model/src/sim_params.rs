//! The model's parameters: rates, costs and policy settings, in one serialisable struct
//! that is stored with every simulated sample.

use serde::{Deserialize, Serialize};

use schedlab_policy::{Duration, MICROSECOND};

/// Context-switch cost: half a pipe round trip between two processes on one CPU, measured on
/// the development machine (`cargo run --release -p schedlab-simrun --example costs`, and
/// `taskset -c 0 perf bench sched pipe` agrees; see docs/BENCHMARKS.md).
pub const DEFAULT_SWITCH_COST_NS: Duration = 1_700;

/// Extra cost of running on another CPU than last time: a forced move between CPUs 0 and 1
/// with a 32 KiB working set, measured on the development machine (same example); an upper
/// bound for a task the scheduler pulls from a queue, which needs no stopper thread.
pub const DEFAULT_MIGRATION_COST_NS: Duration = 15 * MICROSECOND;

/// CPU time of one write or one read of a message on a pipe or socket (the syscall and the
/// copy): half of what a pipe hop costs on top of the switch. `taskset -c 0 perf bench sched
/// pipe -l 200000` took 1.30 s of CPU (docs/BENCHMARKS.md, trace clocks), 6.5 us per round
/// trip of two hops; less the measured switch ([`DEFAULT_SWITCH_COST_NS`]) a hop is 1.55 us
/// for its write and its read.
pub const DEFAULT_IPC_CALL_NS: Duration = 775;

/// Delay of a remote wake-up (the partner last ran on the other CPU: the IPI and the idle
/// exit): the idle exit measured on the development machine, a timer wake-up 57.0 us late
/// without the `cpu_dma_latency` hold against 23.2 us with it (docs/BENCHMARKS.md, wake-up
/// latency against cyclictest). An upper bound: a CPU idle for microseconds exits faster.
pub const DEFAULT_WAKEUP_NS: Duration = 34 * MICROSECOND;

/// The kernel's `sysctl_sched_base_slice` before CPU scaling (0.75 ms).
pub const KERNEL_BASE_SLICE_NS: Duration = 750 * MICROSECOND;

/// The tick rate assumed when the kernel configuration cannot be read.
pub const DEFAULT_HZ: u32 = 250;

/// Everything the model needs besides the plan. Times are integer nanoseconds except the
/// CPU cost of one pi iteration, which is fractional.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// CPUs, all in one global ready queue.
    pub cpus: usize,
    /// CPU time of one pi iteration (calibrated on the machine, or given).
    pub ns_per_iteration: f64,
    /// CPU time of one hash of the `hash` workload; 0 when not calibrated (hash cells then fail).
    pub ns_per_hash: f64,
    /// CPU time of one synchronous write (the syscall and, for copy, the read before it).
    pub write_cpu_ns: Duration,
    /// Device service time of one synchronous write; one FIFO queue serves all writes.
    pub write_service_ns: Duration,
    /// SCHED_RR quantum.
    pub rr_quantum_ns: Duration,
    /// Slice of the fair (EEVDF) model.
    pub fair_slice_ns: Duration,
    /// Charged when a CPU starts a task other than the one it ran last.
    pub switch_cost_ns: Duration,
    /// Charged on top when the task last ran on another CPU.
    pub migration_cost_ns: Duration,
    /// CPU each worker spent before the release (exec, setup): reported, never scheduled.
    pub setup_ns: Duration,
    /// CPU time of one write or read of a message on a pipe or socket (`pipe`, `messaging`).
    /// Stored only when it is not the default, so a record stored before it existed (its
    /// model had no messages) reads and stores back unchanged.
    #[serde(default = "ipc_call", skip_serializing_if = "is_ipc_call")]
    pub ipc_call_ns: Duration,
    /// Delay before a task woken by a message runs on another CPU than its waker's (stored as
    /// `ipc_call_ns` is).
    #[serde(default = "wakeup", skip_serializing_if = "is_wakeup")]
    pub wakeup_ns: Duration,
    /// sched_rt_runtime_us / sched_rt_period_us, for the SCHED_DEADLINE admission test.
    pub rt_share: f64,
    /// The measured run whose per-worker work CPU was each worker's CPU demand, in place of
    /// iterations x `ns_per_iteration` (each sample keeps its own in `SimOrigin::demand_ns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demand_from_run: Option<i64>,
    /// Simulate every hyperperiod of a periodic set, also those that repeat one already
    /// simulated (the result is the same; `sim::SimConfig::skip_cycles`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub every_cycle: bool,
    /// Delay from a periodic job's arrival until it is ready (`sim::Costs::release_latency`).
    /// This and the next three are 0 unless calibrated, and stored only when not 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub release_latency_ns: Duration,
    /// CPU a periodic job's release interrupt takes at its arrival (`sim::Costs::release`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub release_irq_ns: Duration,
    /// CPU each tick takes on every CPU (`sim::Costs::tick`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tick_ns: Duration,
    /// The tick's period (0: no tick).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tick_period_ns: Duration,
    /// The stored calibration (`schedlab calibrate`) the costs came from, if they did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<i64>,
}

fn is_zero(v: &Duration) -> bool {
    *v == 0
}

fn ipc_call() -> Duration {
    DEFAULT_IPC_CALL_NS
}

fn wakeup() -> Duration {
    DEFAULT_WAKEUP_NS
}

fn is_ipc_call(v: &Duration) -> bool {
    *v == DEFAULT_IPC_CALL_NS
}

fn is_wakeup(v: &Duration) -> bool {
    *v == DEFAULT_WAKEUP_NS
}

impl Params {
    /// Parameters for `cpus` CPUs with the measured default costs, the kernel's default RR
    /// quantum, the fair slice of [`fair_slice`] at [`DEFAULT_HZ`], no setup and the
    /// given calibration.
    pub fn new(
        cpus: usize,
        ns_per_iteration: f64,
        write_cpu_ns: Duration,
        write_service_ns: Duration,
    ) -> Self {
        Self {
            cpus,
            ns_per_iteration,
            ns_per_hash: 0.0,
            write_cpu_ns,
            write_service_ns,
            rr_quantum_ns: schedlab_policy::DEFAULT_RR_QUANTUM,
            fair_slice_ns: fair_slice(cpus, None),
            switch_cost_ns: DEFAULT_SWITCH_COST_NS,
            migration_cost_ns: DEFAULT_MIGRATION_COST_NS,
            setup_ns: 0,
            ipc_call_ns: DEFAULT_IPC_CALL_NS,
            wakeup_ns: DEFAULT_WAKEUP_NS,
            rt_share: 0.95,
            demand_from_run: None,
            every_cycle: false,
            release_latency_ns: 0,
            release_irq_ns: 0,
            tick_ns: 0,
            tick_period_ns: 0,
            calibration: None,
        }
    }

    /// The same parameters with switch, migration and wake-up costs set to zero (textbook
    /// schedules).
    pub fn without_costs(mut self) -> Self {
        self.switch_cost_ns = 0;
        self.migration_cost_ns = 0;
        self.wakeup_ns = 0;
        self.release_latency_ns = 0;
        self.release_irq_ns = 0;
        self.tick_ns = 0;
        self.tick_period_ns = 0;
        self.calibration = None;
        self
    }

    /// Checks that every value can drive a simulation.
    pub fn validate(&self) -> Result<(), ParamError> {
        if self.cpus == 0 {
            return Err(ParamError::NoCpus);
        }
        if !(self.ns_per_iteration.is_finite() && self.ns_per_iteration > 0.0) {
            return Err(ParamError::NotPositive {
                name: "ns per iteration",
                value: self.ns_per_iteration,
            });
        }
        if !(self.ns_per_hash.is_finite() && self.ns_per_hash >= 0.0) {
            return Err(ParamError::NotPositive { name: "ns per hash", value: self.ns_per_hash });
        }
        if self.rr_quantum_ns == 0 {
            return Err(ParamError::NotPositive { name: "RR quantum", value: 0.0 });
        }
        if self.fair_slice_ns == 0 {
            return Err(ParamError::NotPositive { name: "fair slice", value: 0.0 });
        }
        if !(self.rt_share.is_finite() && self.rt_share > 0.0 && self.rt_share <= 1.0) {
            return Err(ParamError::RtShare(self.rt_share));
        }
        if self.tick_ns > 0 && self.tick_ns >= self.tick_period_ns {
            return Err(ParamError::Tick { tick: self.tick_ns, period: self.tick_period_ns });
        }
        Ok(())
    }

    /// How late the model takes the kernel to notice an expired fair slice: what
    /// `fair_slice_ns` adds to the kernel's base slice for these CPUs (half a tick with the
    /// defaults). A custom slice gets the same.
    pub fn fair_lateness_ns(&self) -> Duration {
        self.fair_slice_ns
            .saturating_sub(KERNEL_BASE_SLICE_NS * (1 + u64::from(self.cpus.clamp(1, 8).ilog2())))
    }

    /// The model in one line, as `simulate` announces it and `show` and the report repeat it.
    pub fn describe(&self) -> String {
        let demand = match self.demand_from_run {
            Some(run) => format!("CPU demand per worker: its work CPU in measured run {run}"),
            None => format!("CPU demand: {:.3} ns per pi iteration", self.ns_per_iteration),
        };
        let us = |ns: Duration| ns as f64 / 1e3;
        let interrupts = if self.release_latency_ns + self.release_irq_ns + self.tick_ns > 0 {
            format!(
                ", release latency {} us, release interrupt {} us, tick {} us every {} us",
                us(self.release_latency_ns),
                us(self.release_irq_ns),
                us(self.tick_ns),
                us(self.tick_period_ns)
            )
        } else {
            String::new()
        };
        let calibration =
            self.calibration.map(|id| format!(" (calibration {id})")).unwrap_or_default();
        format!(
            "{} CPUs, rr quantum {} ms, fair slice {} us, switch {} us, migration {} us{interrupts}{calibration}, setup {} us; {demand}",
            self.cpus,
            self.rr_quantum_ns as f64 / 1e6,
            us(self.fair_slice_ns),
            us(self.switch_cost_ns),
            us(self.migration_cost_ns),
            us(self.setup_ns)
        )
    }

    /// CPU time of `iterations` pi iterations, at least 1 ns.
    pub fn compute_ns(&self, iterations: u64) -> Duration {
        ((iterations as f64 * self.ns_per_iteration).round() as Duration).max(1)
    }
}

/// The fair model's slice for `cpus` CPUs: the kernel's base slice scaled by
/// 1 + log2(min(cpus, 8)) (SCHED_TUNABLESCALING_LOG), plus half a tick of `hz`
/// ([`DEFAULT_HZ`] when unknown): without HRTICK the kernel notices an expired slice only
/// at the next tick, on average half a tick late.
pub fn fair_slice(cpus: usize, hz: Option<u32>) -> Duration {
    let factor = 1 + u64::from(cpus.clamp(1, 8).ilog2());
    let tick = 1_000_000_000 / u64::from(hz.unwrap_or(DEFAULT_HZ).max(1));
    KERNEL_BASE_SLICE_NS * factor + tick / 2
}

/// A parameter the model cannot work with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParamError {
    /// Zero CPUs.
    #[error("the number of CPUs must be at least 1")]
    NoCpus,
    /// A rate or length that must be positive.
    #[error("the {name} must be a positive number, got {value}")]
    NotPositive {
        /// Which parameter.
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// A tick without a period, or as long as its period or longer.
    #[error("the tick ({tick} ns) must be shorter than its period ({period} ns)")]
    Tick {
        /// The tick's cost.
        tick: Duration,
        /// Its period.
        period: Duration,
    },
    /// An RT share outside (0, 1].
    #[error("the RT share (sched_rt_runtime_us / sched_rt_period_us) must be in (0, 1], got {0}")]
    RtShare(f64),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fair_slice_scales_with_cpus_and_adds_half_a_tick() {
        // 0.75 ms x 2 = 1.5 ms on 2 CPUs, + 2 ms at 250 Hz, + 0.5 ms at 1000 Hz.
        assert_eq!(fair_slice(2, Some(250)), 3_500_000);
        assert_eq!(fair_slice(2, Some(1000)), 2_000_000);
        // 8 CPUs and more: 0.75 x 4 = 3 ms.
        assert_eq!(fair_slice(64, Some(1000)), 3_500_000);
        assert_eq!(fair_slice(1, None), 2_750_000);
    }

    #[test]
    fn validation_names_the_bad_value() {
        let ok = Params::new(2, 2.5, 1000, 40_000);
        assert_eq!(ok.validate(), Ok(()));
        assert_eq!(Params { cpus: 0, ..ok.clone() }.validate(), Err(ParamError::NoCpus));
        let e = Params { ns_per_iteration: f64::NAN, ..ok.clone() }.validate().unwrap_err();
        assert!(e.to_string().contains("ns per iteration"), "{e}");
        assert!(Params { rt_share: 1.5, ..ok.clone() }.validate().is_err());
        let tick = Params { tick_ns: 21_000, tick_period_ns: 810_000, ..ok.clone() };
        assert_eq!(tick.validate(), Ok(()));
        let e = Params { tick_period_ns: 0, ..tick }.validate().unwrap_err();
        assert_eq!(e, ParamError::Tick { tick: 21_000, period: 0 });
        assert_eq!(ok.compute_ns(4), 10);
        assert_eq!(ok.compute_ns(0), 1);
    }

    #[test]
    fn the_description_names_where_the_demand_came_from() {
        let mut p = Params::new(2, 2.5, 1000, 40_000);
        assert!(p.describe().contains("2.500 ns per pi iteration"), "{}", p.describe());
        p.demand_from_run = Some(7);
        assert!(
            p.describe().contains("measured run 7") && !p.describe().contains("ns per pi"),
            "{}",
            p.describe()
        );
        // Stored records from before the field read back without it, and it is not written when absent.
        let old: Params = serde_json::from_str(
            &serde_json::to_string(&Params::new(2, 2.5, 1000, 40_000)).unwrap(),
        )
        .unwrap();
        assert_eq!(old.demand_from_run, None);
        assert!(!serde_json::to_string(&old).unwrap().contains("demand"));
        // The calibrated costs likewise, and the description names them and their calibration.
        assert!(!serde_json::to_string(&old).unwrap().contains("tick"));
        assert!(!old.describe().contains("tick"), "{}", old.describe());
        let calibrated = Params {
            release_latency_ns: 37_000,
            release_irq_ns: 15_000,
            tick_ns: 21_000,
            tick_period_ns: 810_000,
            calibration: Some(3),
            ..old
        };
        let text = calibrated.describe();
        assert!(
            text.contains("release latency 37 us, release interrupt 15 us, tick 21 us every 810 us (calibration 3)"),
            "{text}"
        );
        let back: Params =
            serde_json::from_str(&serde_json::to_string(&calibrated).unwrap()).unwrap();
        assert_eq!(back, calibrated);
    }
}
