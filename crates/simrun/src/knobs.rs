//! A knob sweep simulated beside its measurement: the scheduler knobs a cell sets change the
//! model's parameters as they change the kernel's behaviour.

use crate::Params;
use schedlab_plan::knob::{KnobValue, Knobs};

/// The RR time slice (`sched_rr_timeslice_ms`).
pub const RR_TIMESLICE: &str = "kernel.sched_rr_timeslice_ms";
/// EEVDF's base slice (debugfs `sched/base_slice_ns`: the scaled slice the kernel uses).
pub const BASE_SLICE: &str = "sched.base_slice_ns";
/// RT throttling's runtime per period (`sched_rt_runtime_us`; -1 is unthrottled).
pub const RT_RUNTIME: &str = "kernel.sched_rt_runtime_us";
/// RT throttling's period (`sched_rt_period_us`).
pub const RT_PERIOD: &str = "kernel.sched_rt_period_us";

/// The model's parameters for a cell with `knobs` in force: the RR quantum in whole ticks
/// (the kernel keeps the slice in jiffies, rounded up: 5 ms is 8 ms at 250 Hz), the fair
/// slice from the base slice plus the model's lateness (half a tick), and the RT share from
/// the throttling runtime and period (the other one from `p` when only one is set). Knobs
/// the model has no counterpart for leave it as it is.
pub fn params_for(p: &Params, knobs: &Knobs) -> Params {
    let mut q = p.clone();
    let int = |name: &str| match knobs.get(name) {
        Some(KnobValue::Int(v)) => Some(*v),
        _ => None,
    };
    let tick = 2 * p.fair_lateness_ns();
    if let Some(ms) = int(RR_TIMESLICE).filter(|&v| v > 0) {
        let ns = ms as u64 * 1_000_000;
        q.rr_quantum_ns = if tick > 0 { ns.div_ceil(tick) * tick } else { ns };
    }
    if let Some(ns) = int(BASE_SLICE).filter(|&v| v > 0) {
        q.fair_slice_ns = ns as u64 + p.fair_lateness_ns();
    }
    match (int(RT_RUNTIME), int(RT_PERIOD)) {
        (Some(-1), _) => q.rt_share = 1.0,
        (Some(runtime), period) if runtime > 0 => {
            // The period from the knob, else the one that gives `p`'s share with the default runtime.
            let period = period.map(|x| x as f64).unwrap_or(950_000.0 / p.rt_share);
            q.rt_share = (runtime as f64 / period).min(1.0);
        }
        (None, Some(period)) if period > 0 => {
            q.rt_share = (p.rt_share * 1_000_000.0 / period as f64).min(1.0)
        }
        _ => {}
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    fn knobs(kv: &[(&str, i64)]) -> Knobs {
        kv.iter().map(|(k, v)| (k.to_string(), KnobValue::Int(*v))).collect()
    }

    #[test]
    fn the_rr_slice_is_whole_ticks_and_the_fair_slice_keeps_its_lateness() {
        let p = Params::new(2, 1.0, 0, 0); // 250 Hz: a 4 ms tick, 2 ms late
        assert_eq!(p.fair_lateness_ns(), 2_000_000);
        let q = params_for(&p, &knobs(&[(RR_TIMESLICE, 5), (BASE_SLICE, 3_000_000)]));
        assert_eq!(q.rr_quantum_ns, 8_000_000);
        assert_eq!(q.fair_slice_ns, 5_000_000);
        assert_eq!(params_for(&p, &knobs(&[(RR_TIMESLICE, 100)])).rr_quantum_ns, 100_000_000);
        assert_eq!(params_for(&p, &Knobs::new()), p, "no knob, no change");
        assert_eq!(params_for(&p, &knobs(&[("kernel.sched_autogroup_enabled", 0)])), p);
    }

    #[test]
    fn rt_throttling_sets_the_rt_share() {
        let p = Params::new(2, 1.0, 0, 0);
        assert_eq!(params_for(&p, &knobs(&[(RT_RUNTIME, -1)])).rt_share, 1.0);
        assert_eq!(
            params_for(&p, &knobs(&[(RT_RUNTIME, 500_000), (RT_PERIOD, 1_000_000)])).rt_share,
            0.5
        );
        assert!((params_for(&p, &knobs(&[(RT_RUNTIME, 475_000)])).rt_share - 0.475).abs() < 1e-12);
        assert!((params_for(&p, &knobs(&[(RT_PERIOD, 2_000_000)])).rt_share - 0.475).abs() < 1e-12);
    }
}
