//! The limits that shape a run's figures, in words: a CPU quota or an RT runtime below the
//! machine's on the engine's cgroup path (`env`, `check`, a run's header), and the throttling
//! a cell met (its notes, and a warning like a noisy cell's).

use schedlab_analysis::throttle::CellThrottle;
use schedlab_analysis::CellStats;
use schedlab_model::{Limit, LimitKind};

/// The command-line option that moves a run's engine out of the limits.
pub const ESCAPE: &str = "--escape-limits";

/// A number of CPUs as few digits as it needs: `0.5 CPU`, `1 CPU`, `1.25 CPUs`.
fn cpus(x: f64) -> String {
    let n = format!("{x:.2}");
    let n = n.trim_end_matches('0').trim_end_matches('.');
    format!("{n} CPU{}", if x > 1.0 { "s" } else { "" })
}

/// The limit, its figures and where it is set: `0.5 CPU of quota (cpu.cfs_quota_us 50000 /
/// 100000 at /sys/fs/cgroup/cpu/x)`.
pub fn describe(l: &Limit) -> String {
    let at = l.cgroup.display();
    match l.kind {
        LimitKind::CpuQuota { quota_us, period_us, v2: false } => format!(
            "{} of quota (cpu.cfs_quota_us {quota_us} / cpu.cfs_period_us {period_us} at {at})",
            cpus(l.kind.share())
        ),
        LimitKind::CpuQuota { quota_us, period_us, v2: true } => {
            format!("{} of quota (cpu.max {quota_us} {period_us} at {at})", cpus(l.kind.share()))
        }
        LimitKind::RtRuntime { runtime_us, period_us } => format!(
            "RT runtime {runtime_us} / {period_us} us, {:.0}% of each period on each CPU (cpu.rt_runtime_us at {at}, below kernel.sched_rt_runtime_us)",
            l.kind.share() * 100.0
        ),
    }
}

/// What the limit does to a run's figures.
pub fn effect(l: &Limit) -> &'static str {
    match l.kind {
        LimitKind::CpuQuota { .. } => {
            "every worker of the run shares it, so its time figures measure the quota, not the scheduler"
        }
        LimitKind::RtRuntime { .. } => {
            "real-time workers (and the engine at SCHED_FIFO 99) are throttled past it, so real-time figures measure the throttle"
        }
    }
}

/// A run header's lines on its limits: each one, and where the engine ran instead when the
/// run left it behind.
pub fn header_lines(limits: &[Limit]) -> Vec<String> {
    limits
        .iter()
        .map(|l| match &l.lifted {
            Some(to) => format!(
                "limit: {} (lifted for this run: its engine and workers ran in {})",
                describe(l),
                to.display()
            ),
            None => format!("limit: {}", describe(l)),
        })
        .collect()
}

/// What `--escape-limits` can do about the limits of a run, in words.
#[derive(Debug, Clone, Copy)]
pub enum Remedy<'a> {
    /// It moves the engine out: how.
    Escape(&'a str),
    /// It cannot: why.
    Cannot(&'a str),
}

/// The warning for a limit in force over a run: what it is, what it does, and the remedy.
pub fn warning(l: &Limit, remedy: Remedy) -> String {
    let remedy = match remedy {
        Remedy::Escape(how) => format!("Remedy: {ESCAPE}, which {how}"),
        Remedy::Cannot(why) => format!("{ESCAPE} cannot lift it: {why}"),
    };
    format!("limit: {}: {}. {remedy}", describe(l), effect(l))
}

/// A cell's note on the throttling it met: `throttled 2.45 s/rep (51 of 60 periods)`, and
/// `by its cpu_max` when the quota was the spec's own.
pub fn throttle_note(t: &CellThrottle) -> String {
    format!(
        "throttled {:.2} s/rep ({} of {} periods){}",
        t.throttled_s,
        t.throttled_periods,
        t.periods,
        if t.own { " by its cpu_max" } else { "" }
    )
}

/// The warning for the cells a CPU quota from outside their spec throttled, naming the
/// cgroups and the most time a repetition lost; None when none was.
pub fn throttle_warning(stats: &[CellStats]) -> Option<String> {
    let hit: Vec<&CellThrottle> =
        stats.iter().filter_map(|s| s.throttle.as_ref()).filter(|t| !t.own).collect();
    if hit.is_empty() {
        return None;
    }
    let mut cgroups: Vec<String> = Vec::new();
    for c in hit.iter().flat_map(|t| &t.cgroups) {
        let c = c.display().to_string();
        if !cgroups.contains(&c) {
            cgroups.push(c);
        }
    }
    let most = hit.iter().map(|t| t.max_s).fold(0.0, f64::max);
    let (was, their) = if hit.len() == 1 { ("was", "its") } else { ("were", "their") };
    Some(format!(
        "{} of {} cells {was} throttled by a CPU quota outside the spec ({}), up to {most:.2} s in a repetition: {their} time figures measure the quota, not the scheduler. Rerun with {ESCAPE}, or outside the quota",
        hit.len(),
        stats.len(),
        cgroups.join(", ")
    ))
}

/// The most cells a warning names (the rest are counted).
const NAMED_CELLS: usize = 5;

/// The warning for the real-time cells (fifo, rr) of a run whose engine's cgroup held an RT
/// runtime below the machine's (`limits`, the run's): how long their processes waited while
/// runnable (the scheduler's run delay, which holds the throttled time: the kernel counts no
/// RT throttling of its own), for each cell; None without such a limit or cells.
pub fn rt_warning(limits: &[Limit], stats: &[CellStats]) -> Option<String> {
    let l = limits
        .iter()
        .find(|l| l.lifted.is_none() && matches!(l.kind, LimitKind::RtRuntime { .. }))?;
    let rt: Vec<&CellStats> =
        stats.iter().filter(|s| matches!(s.params.class.as_str(), "fifo" | "rr")).collect();
    if rt.is_empty() {
        return None;
    }
    let mut waits: Vec<String> = rt
        .iter()
        .filter_map(|s| {
            let wait = s.run_delay_per_proc.as_ref()?.mean;
            let wall = s.wall_per_proc.mean;
            let share = if wall > 0.0 {
                format!(", {:.0}% of its time", wait / wall * 100.0)
            } else {
                String::new()
            };
            Some(format!("{} {wait:.2} s/proc{share}", s.params.key))
        })
        .collect();
    if waits.len() > NAMED_CELLS {
        let more = waits.len() - NAMED_CELLS;
        waits.truncate(NAMED_CELLS);
        waits.push(format!("{more} more"));
    }
    let its = if rt.len() == 1 { "its" } else { "their" };
    let waited = match waits.is_empty() {
        true => String::new(),
        false => format!(
            "; {its} processes waited while runnable (the kernel's run delay, which holds the time throttled: it counts no RT throttling itself): {}",
            waits.join("; ")
        ),
    };
    let cells = if stats.len() == 1 { "cell" } else { "cells" };
    Some(format!(
        "{} of {} {cells} ran {its} real-time workers under {}{waited}. Rerun with {ESCAPE}",
        rt.len(),
        stats.len(),
        describe(l)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quota(quota_us: u64, v2: bool) -> Limit {
        Limit {
            kind: LimitKind::CpuQuota { quota_us, period_us: 100_000, v2 },
            cgroup: "/sys/fs/cgroup/cpu/x".into(),
            lifted: None,
        }
    }

    #[test]
    fn a_limit_is_named_by_its_share_its_files_and_its_cgroup() {
        assert_eq!(
            describe(&quota(50_000, false)),
            "0.5 CPU of quota (cpu.cfs_quota_us 50000 / cpu.cfs_period_us 100000 at /sys/fs/cgroup/cpu/x)"
        );
        assert_eq!(
            describe(&quota(125_000, true)),
            "1.25 CPUs of quota (cpu.max 125000 100000 at /sys/fs/cgroup/cpu/x)"
        );
        let rt = Limit {
            kind: LimitKind::RtRuntime { runtime_us: 300_000, period_us: 1_000_000 },
            ..quota(0, false)
        };
        assert!(describe(&rt).starts_with("RT runtime 300000 / 1000000 us, 30% of each period"));
        let lifted = Limit { lifted: Some("/sys/fs/cgroup/cpu".into()), ..quota(100_000, false) };
        assert_eq!(
            header_lines(&[lifted]),
            vec!["limit: 1 CPU of quota (cpu.cfs_quota_us 100000 / cpu.cfs_period_us 100000 at /sys/fs/cgroup/cpu/x) (lifted for this run: its engine and workers ran in /sys/fs/cgroup/cpu)".to_string()]
        );
        let w = warning(&quota(50_000, false), Remedy::Cannot("only the host can lift it"));
        assert!(w.ends_with("--escape-limits cannot lift it: only the host can lift it"), "{w}");
    }

    #[test]
    fn a_cell_throttled_by_its_own_cpu_max_is_noted_but_not_warned_of() {
        let t = CellThrottle {
            reps: 2,
            throttled_s: 2.449,
            max_s: 3.0,
            throttled_periods: 51,
            periods: 60,
            own: false,
            cgroups: vec!["/sys/fs/cgroup/cpu/x".into()],
        };
        assert_eq!(throttle_note(&t), "throttled 2.45 s/rep (51 of 60 periods)");
        let own = CellThrottle { own: true, ..t.clone() };
        assert!(throttle_note(&own).ends_with("by its cpu_max"));
        let cell = |throttle| CellStats {
            throttle,
            ..schedlab_analysis::cell_stats(&[schedlab_model::CellRecord::default()]).pop().unwrap()
        };
        let stats = [cell(Some(t)), cell(Some(own)), cell(None)];
        assert_eq!(
            throttle_warning(&stats).as_deref(),
            Some("1 of 3 cells was throttled by a CPU quota outside the spec (/sys/fs/cgroup/cpu/x), up to 3.00 s in a repetition: its time figures measure the quota, not the scheduler. Rerun with --escape-limits, or outside the quota")
        );
        assert_eq!(throttle_warning(&stats[1..]), None);
    }

    #[test]
    fn real_time_cells_under_an_rt_runtime_are_named_with_their_wait() {
        let rt = Limit {
            kind: LimitKind::RtRuntime { runtime_us: 300_000, period_us: 1_000_000 },
            ..quota(0, false)
        };
        let record = |class: &str, key: &str| schedlab_model::CellRecord {
            params: schedlab_model::CellParams {
                class: class.into(),
                key: key.into(),
                ..Default::default()
            },
            samples: vec![schedlab_model::Sample {
                wall_s: 1.0,
                run_delay_s: Some(0.7),
                ..Default::default()
            }],
            ..Default::default()
        };
        let mut recs = vec![record("fifo", "w/fifo"), record("other", "w/other")];
        recs[1].params.cell_id = 1;
        let stats = schedlab_analysis::cell_stats(&recs);
        assert_eq!(
            rt_warning(std::slice::from_ref(&rt), &stats).as_deref(),
            Some("1 of 2 cells ran its real-time workers under RT runtime 300000 / 1000000 us, 30% of each period on each CPU (cpu.rt_runtime_us at /sys/fs/cgroup/cpu/x, below kernel.sched_rt_runtime_us); its processes waited while runnable (the kernel's run delay, which holds the time throttled: it counts no RT throttling itself): w/fifo 0.70 s/proc, 70% of its time. Rerun with --escape-limits")
        );
        let lifted = Limit { lifted: Some("/sys/fs/cgroup/cpu".into()), ..rt };
        assert_eq!(rt_warning(&[lifted], &stats), None, "lifted for the run");
        assert_eq!(rt_warning(&[quota(50_000, false)], &stats), None);
    }
}
