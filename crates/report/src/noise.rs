//! The warning that a run may be inaccurate: which evidence of other work on the machine
//! [`schedlab_analysis::noise`] found, with its numbers, and what to do about it.

use schedlab_analysis::noise::{noise, Noise, OUTLIER_SHARE};
use schedlab_model::CellRecord;

/// The warning for a run's records measured on a machine of `cpus` CPUs, if it has one.
pub fn noise_warning(records: &[CellRecord], cpus: usize) -> Option<String> {
    warning(&noise(records, cpus))
}

/// The warning, naming each kind of evidence past its threshold with its numbers (the load
/// average and the outliers' share beside it when they are notable); None when the cells'
/// own counters show none.
pub fn warning(n: &Noise) -> Option<String> {
    let said = evidence(n);
    (!said.is_empty()).then(|| {
        format!("results may be inaccurate: {}. Rerun on a quiet machine.", said.join("; "))
    })
}

/// The evidence [`warning`] names, one phrase per kind; empty when the machine shows none.
pub fn evidence(n: &Noise) -> Vec<String> {
    if !n.is_noisy() {
        return Vec::new();
    }
    let pct = |x: f64| format!("{:.0}%", x * 100.0);
    let mut said: Vec<String> = [
        (n.other.0, format!("other processes used up to {} of the CPUs", pct(n.other.1))),
        (n.steal.0, format!("the hypervisor stole up to {} of the CPUs' time", pct(n.steal.1))),
        (
            n.pressure.0,
            format!(
                "runnable tasks waited for a CPU up to {} of the time (CPU pressure)",
                pct(n.pressure.1)
            ),
        ),
        (n.load.0, format!("the load average reached {:.1} on {} CPUs", n.load.1, n.cpus)),
    ]
    .into_iter()
    .filter(|(cells, _)| *cells > 0)
    .map(|(cells, what)| format!("{what} during {cells} of {} cells", n.cells))
    .collect();
    if n.outliers >= OUTLIER_SHARE {
        said.push(format!("{} of the processes are outliers", pct(n.outliers)));
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warning_names_each_kind_of_evidence_with_its_numbers() {
        let n = Noise {
            cpus: 2,
            cells: 27,
            other: (12, 0.48),
            steal: (3, 0.07),
            pressure: (5, 0.61),
            load: (27, 3.94),
            outliers: 0.28,
        };
        assert_eq!(
            warning(&n).as_deref(),
            Some(
                "results may be inaccurate: other processes used up to 48% of the CPUs during 12 of 27 cells; \
                 the hypervisor stole up to 7% of the CPUs' time during 3 of 27 cells; \
                 runnable tasks waited for a CPU up to 61% of the time (CPU pressure) during 5 of 27 cells; \
                 the load average reached 3.9 on 2 CPUs during 27 of 27 cells; \
                 28% of the processes are outliers. Rerun on a quiet machine."
            )
        );
        let only_other =
            Noise { steal: (0, 0.0), pressure: (0, 0.1), load: (0, 1.2), outliers: 0.05, ..n };
        assert_eq!(
            warning(&only_other).as_deref(),
            Some("results may be inaccurate: other processes used up to 48% of the CPUs during 12 of 27 cells. Rerun on a quiet machine.")
        );
    }

    #[test]
    fn a_quiet_machine_gets_no_warning_whatever_the_load_average_and_outliers() {
        let quiet = Noise {
            cpus: 2,
            cells: 27,
            other: (0, 0.03),
            load: (27, 40.0),
            outliers: 0.4,
            ..Default::default()
        };
        assert_eq!(warning(&quiet), None, "a lagging load and outliers alone say nothing");
        assert_eq!(noise_warning(&[], 2), None);
    }
}
