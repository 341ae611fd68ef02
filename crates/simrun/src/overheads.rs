//! The one mapping between the overhead model of the schedulability tests
//! ([`Overheads`], what `schedlab calibrate` measured) and the simulator's costs, both
//! ways, so the `+overheads` twins and the simulation charge the same things (issue 40):
//!
//! | `Overheads` | `Params` | simulator ([`Costs`]) |
//! |---|---|---|
//! | `scheduling` + `context_switch` | `switch_cost_ns` | `context_switch`: each dispatch of another task than the CPU's last |
//! | `release_latency` | `release_latency_ns` | `release_latency`: a periodic job is ready this long after its arrival |
//! | `release` | `release_irq_ns` | `release`: an interrupt on the job's CPU at its arrival |
//! | `tick`, `tick_period` | `tick_ns`, `tick_period_ns` | `tick`, `tick_period`: an interrupt on every CPU every period |
//! | `cache_delay` | (none) | not modelled: the twins charge it, the simulation does not |
//! | (none) | `migration_cost_ns`, `wakeup_ns` | `migration`, `wakeup`: never met by a set on one CPU |
//!
//! Back from the simulator, the switch is all `context_switch` (scheduling 0): the twins
//! charge 2 (scheduling + context switch) per job either way. The twins are upper bounds of
//! what the simulator does with the same figures: the fixed-priority twin's jitter (release
//! latency + release interrupt) covers a job ready at its latency, its interrupts (tick and
//! every task's release, jitter the latency) cover the simulated ones, strictly periodic;
//! each job's two switches cover its own dispatch and the resumption of the job it
//! preempted (a preemption happens only when a job becomes ready, once per job, and a switch
//! cut short by one is then one of the preempted job's). The EDF twin's inflation is
//! SchedCAT's preemption-centric accounting, its T and D shortened by the latency where the
//! simulator's jobs are due D after their arrival and arrive exactly T apart. The property
//! test (`tests/overheads.rs`) checks this on thousands of generated sets.
//!
//! Sets the live dispatcher runs (`edf`, `dwcs`) are simulated in whole quanta without any
//! cost (`rt.rs`): the quantum holds the switch and the interrupts, which the twins still
//! charge, so for them the twins are conservative.

use schedlab_schedulability::Overheads;
use schedlab_sim::Costs;

use crate::Params;

/// The simulator's costs for a model: switch, migration and wake-up, release latency,
/// release interrupt and tick.
pub fn costs(p: &Params) -> Costs {
    Costs {
        context_switch: p.switch_cost_ns,
        migration: p.migration_cost_ns,
        wakeup: p.wakeup_ns,
        release_latency: p.release_latency_ns,
        release: p.release_irq_ns,
        tick: p.tick_ns,
        tick_period: if p.tick_ns > 0 { p.tick_period_ns } else { 0 },
    }
}

/// The simulator's costs as the overhead model the twins charge (per-set verdicts of a
/// simulated batch use it): what [`with_overheads`] would set them from, less what the
/// simulator does not model (the cache-related delay) and with the switch all context switch.
pub fn overheads(p: &Params) -> Overheads {
    let source = match p.calibration {
        Some(id) => format!("calibration {id}, as the simulator charges it"),
        None => "the simulator's costs".into(),
    };
    Overheads {
        release_latency: p.release_latency_ns,
        scheduling: 0,
        context_switch: p.switch_cost_ns,
        cache_delay: 0,
        release: p.release_irq_ns,
        tick: p.tick_ns,
        tick_period: if p.tick_ns > 0 { p.tick_period_ns } else { 0 },
        percentile: None,
        source,
    }
}

/// `p` with the simulator's costs set from `o` (a calibration's figures, `calibration` its
/// id): the switch is scheduling + context switch, the interrupts and the release latency
/// are `o`'s, a tick without a period none. Migration and wake-up costs stay `p`'s.
pub fn with_overheads(mut p: Params, o: &Overheads, calibration: Option<i64>) -> Params {
    let ticks = o.tick > 0 && o.tick_period > 0;
    p.switch_cost_ns = o.scheduling + o.context_switch;
    p.release_latency_ns = o.release_latency;
    p.release_irq_ns = o.release;
    p.tick_ns = if ticks { o.tick } else { 0 };
    p.tick_period_ns = if ticks { o.tick_period } else { 0 };
    p.calibration = calibration;
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mapping_goes_there_and_back_charging_the_same() {
        let o = Overheads {
            release_latency: 37_000,
            scheduling: 200,
            context_switch: 2_500,
            cache_delay: 0,
            release: 15_000,
            tick: 21_000,
            tick_period: 810_000,
            percentile: Some(99.0),
            source: "calibration 3".into(),
        };
        let p = with_overheads(Params::new(1, 1.0, 0, 0), &o, Some(3));
        assert_eq!(p.switch_cost_ns, 2_700);
        let c = costs(&p);
        assert_eq!(
            (c.context_switch, c.release_latency, c.release, c.tick, c.tick_period),
            (2_700, 37_000, 15_000, 21_000, 810_000)
        );
        let back = overheads(&p);
        assert_eq!(back.per_job(), o.per_job());
        assert_eq!(
            (back.release_latency, back.release, back.tick, back.tick_period),
            (37_000, 15_000, 21_000, 810_000)
        );
        assert!(back.source.contains("calibration 3"), "{}", back.source);
        // And once more round: the same model.
        assert_eq!(overheads(&with_overheads(p.clone(), &back, Some(3))), back);
        // The default model charges only its switch.
        let plain = Params::new(1, 1.0, 0, 0);
        let zero = Overheads { context_switch: plain.switch_cost_ns, ..overheads(&plain) };
        assert_eq!(overheads(&plain), zero);
        assert!(!costs(&plain).ticks());
    }
}
