//! The warning that a run may be inaccurate: which evidence of other work on the machine
//! [`schedlab_analysis::noise`] found, with its numbers, and what to do about it; and the
//! warning that the machine is busy before the first cell, naming who keeps it busy.

use schedlab_analysis::noise::{
    noise, Busy, Noise, NAMED_MAX, OTHER_SHARE, OUTLIER_SHARE, STEAL_SHARE,
};
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
    ]
    .into_iter()
    .filter(|(cells, _)| *cells > 0)
    .map(|(cells, what)| format!("{what} during {cells} of {} cells", n.cells))
    .collect();
    let short: Vec<String> = [
        n.short
            .other
            .filter(|s| *s >= OTHER_SHARE)
            .map(|s| format!("other processes used {} of the CPUs", pct(s))),
        n.short
            .steal
            .filter(|s| *s >= STEAL_SHARE)
            .map(|s| format!("the hypervisor stole {} of the CPUs' time", pct(s))),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !short.is_empty() {
        said.push(format!(
            "{} during {} cells too short to judge alone (pooled)",
            short.join(" and "),
            n.short.cells
        ));
    }
    if n.load.0 > 0 {
        said.push(format!(
            "the load average reached {:.1} on {} CPUs during {} of {} cells",
            n.load.1, n.cpus, n.load.0, n.cells
        ));
    }
    if n.outliers >= OUTLIER_SHARE {
        said.push(format!("{} of the processes are outliers", pct(n.outliers)));
    }
    said
}

/// A share 0..1 as a whole percentage.
fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// The warning for a look at the machine before the first cell, if it was busy: how much of
/// the CPUs others used and who (up to [`NAMED_MAX`] processes by name and pid, each with its
/// share of one CPU), the run queue, and the hypervisor's steal.
pub fn busy_warning(b: &Busy) -> Option<String> {
    if !b.is_busy() {
        return None;
    }
    let mut said = Vec::new();
    if b.others_busy() {
        let who = match b.named.len() {
            0 => "other processes use".to_string(),
            1 => "1 process uses".to_string(),
            n => format!("{n} processes use"),
        };
        let mut line = format!("{who} {} of {}% CPU", pct(b.other * b.cpus as f64), b.cpus * 100);
        let mut names: Vec<String> = b
            .named
            .iter()
            .take(NAMED_MAX)
            .map(|(comm, pid, share)| format!("{comm} {pid} {}", pct(*share)))
            .collect();
        if b.named.len() > NAMED_MAX {
            names.push(format!("{} more", b.named.len() - NAMED_MAX));
        }
        if !names.is_empty() {
            line.push_str(&format!(" ({})", names.join(", ")));
        }
        said.push(line);
        if let Some(n) = b.running.filter(|n| *n > 0) {
            let tasks = if n == 1 { "task" } else { "tasks" };
            said.push(format!("the run queue holds {n} {tasks} besides schedlab"));
        }
    }
    if b.stolen() {
        said.push(format!("the hypervisor steals {} of the CPUs' time", pct(b.steal)));
    }
    Some(format!(
        "the machine is busy before the first cell: {}; results may be inaccurate",
        said.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_analysis::noise::ShortCells;

    #[test]
    fn the_warning_names_each_kind_of_evidence_with_its_numbers() {
        let n = Noise {
            cpus: 2,
            cells: 27,
            other: (12, 0.48),
            steal: (3, 0.07),
            pressure: (5, 0.61),
            short: ShortCells::default(),
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

    #[test]
    fn short_cells_judged_pooled_are_named_with_their_count() {
        let short = ShortCells { cells: 9, other: Some(0.31), steal: Some(0.06) };
        let n = Noise { cpus: 2, cells: 12, short, load: (3, 4.2), ..Default::default() };
        assert_eq!(
            warning(&n).as_deref(),
            Some(
                "results may be inaccurate: other processes used 31% of the CPUs and the hypervisor \
                 stole 6% of the CPUs' time during 9 cells too short to judge alone (pooled); \
                 the load average reached 4.2 on 2 CPUs during 3 of 12 cells. Rerun on a quiet machine."
            )
        );
        let quiet_pool = ShortCells { cells: 9, other: Some(0.04), steal: None };
        assert_eq!(warning(&Noise { short: quiet_pool, ..n }), None);
    }

    fn busy(other: f64, running: Option<u32>, named: &[(&str, i32, f64)]) -> Busy {
        Busy {
            cpus: 2,
            other,
            steal: 0.0,
            resolution: 0.0,
            running,
            named: named.iter().map(|&(c, p, s)| (c.to_string(), p, s)).collect(),
        }
    }

    #[test]
    fn a_busy_machine_is_named_by_its_processes_before_the_first_cell() {
        let b = busy(0.98, Some(2), &[("bash", 4711, 0.99), ("bash", 4712, 0.97)]);
        assert_eq!(
            busy_warning(&b).as_deref(),
            Some(
                "the machine is busy before the first cell: 2 processes use 196% of 200% CPU \
                 (bash 4711 99%, bash 4712 97%); the run queue holds 2 tasks besides schedlab; \
                 results may be inaccurate"
            )
        );
        let many: Vec<(&str, i32, f64)> = (0..7).map(|i| ("cc1", 100 + i, 0.25)).collect();
        let w = busy_warning(&Busy { cpus: 8, ..busy(0.22, None, &many) }).unwrap();
        assert!(
            w.contains(": 7 processes use 176% of 800% CPU (cc1 100 25%, cc1 101 25%, cc1 102 25%, cc1 103 25%, cc1 104 25%, 2 more); results"),
            "{w}"
        );
        let spread = busy_warning(&busy(0.15, Some(0), &[])).unwrap();
        assert!(spread.contains(": other processes use 30% of 200% CPU; results"), "{spread}");
        let stolen = Busy { steal: 0.12, ..busy(0.02, Some(1), &[]) };
        assert_eq!(
            busy_warning(&stolen).as_deref(),
            Some("the machine is busy before the first cell: the hypervisor steals 12% of the CPUs' time; results may be inaccurate")
        );
    }

    #[test]
    fn a_quiet_machine_before_the_first_cell_gets_no_warning_whatever_its_run_queue() {
        assert_eq!(busy_warning(&busy(0.04, Some(6), &[("kworker/0:2", 31, 0.06)])), None);
    }
}
