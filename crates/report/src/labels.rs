//! How a cell is named to a reader: its policy, its primary group's affinity and cgroup, the
//! groups it competes with. Tables and figures name cells alike, and add a setting to a
//! cell's name only where the cells shown together differ in it.

use schedlab_model::{CellParams, GroupParams};

/// The policy as a reader names it: name, class when it differs, RT priority, nice, custom
/// slice.
pub fn policy(p: &CellParams) -> String {
    let mut l = p.policy.clone();
    if p.policy != p.class {
        l.push_str(&format!(" ({})", p.class));
    }
    if p.class == "fifo" || p.class == "rr" {
        l.push_str(&format!(" prio {}", p.priority));
    }
    if p.nice != 0 {
        l.push_str(&format!(" nice {}", p.nice));
    }
    if let Some(us) = primary(p).and_then(|i| p.groups[i].slice_us) {
        l.push_str(&format!(" slice {us} us"));
    }
    l
}

/// The cell's primary group: the first measured one (None for records without groups).
pub(crate) fn primary(p: &CellParams) -> Option<usize> {
    p.groups.iter().position(|g| !g.background).or((!p.groups.is_empty()).then_some(0))
}

/// Whether the group's processes are pinned.
pub(crate) fn pinned(g: &GroupParams) -> bool {
    !(g.affinity.is_empty() || g.affinity == "all")
}

/// The group's affinity rule, e.g. `spread`, `CPUs 0-1` or `unpinned`.
pub(crate) fn affinity(g: &GroupParams) -> String {
    match g.affinity.as_str() {
        "" | "all" => "unpinned".into(),
        a @ ("spread" | "compact") => a.into(),
        list => format!("CPUs {list}"),
    }
}

/// The group's cgroup settings, e.g. `weight 200`; empty when it sets none.
pub(crate) fn cgroup(g: &GroupParams) -> String {
    let mut parts = Vec::new();
    if let Some(w) = g.cpu_weight {
        parts.push(format!("weight {w}"));
    }
    if let Some((q, p)) = g.cpu_max {
        parts.push(format!("cpu.max {q}/{p}"));
    }
    if let Some(c) = &g.cpuset {
        parts
            .push(format!("cpuset {}", c.iter().map(u32::to_string).collect::<Vec<_>>().join(",")));
    }
    parts.join(", ")
}

/// The other groups of a cell, e.g. `8 bg` or `4 io (nice 5, weight 50)`; empty when there are none.
pub(crate) fn others(p: &CellParams) -> String {
    let me = primary(p);
    let mut parts = Vec::new();
    for (_, g) in p.groups.iter().enumerate().filter(|(i, _)| Some(*i) != me) {
        let mut settings = Vec::new();
        if g.class != "other" || g.nice != 0 {
            settings.push(format!(
                "{}{}",
                g.class,
                if g.nice != 0 { format!(" nice {}", g.nice) } else { String::new() }
            ));
        }
        if pinned(g) {
            settings.push(affinity(g));
        }
        let cg = cgroup(g);
        if !cg.is_empty() {
            settings.push(cg);
        }
        let mut d = format!("{} {}", g.processes, g.name);
        if !settings.is_empty() {
            d.push_str(&format!(" ({})", settings.join(", ")));
        }
        parts.push(d);
    }
    parts.join(" + ")
}

/// The primary group's placement: its affinity and its cgroup (`no cgroup` when it has none).
pub(crate) fn placement(p: &CellParams) -> [String; 2] {
    let g = primary(p).map(|i| &p.groups[i]);
    let cg = g.map(cgroup).filter(|c| !c.is_empty()).unwrap_or_else(|| "no cgroup".into());
    [g.map(affinity).unwrap_or_else(|| "unpinned".into()), cg]
}

/// The scheduler knobs a cell sweeps, as its key spells them (`sched_rr_timeslice_ms=5`).
pub(crate) fn knobs(p: &CellParams) -> String {
    let short = |k: &str| k.rsplit('.').next().unwrap_or(k).to_string();
    p.knobs.iter().map(|(k, v)| format!("{}={v}", short(k))).collect::<Vec<_>>().join(" ")
}

/// For each of `columns`' rows, the columns whose value differs between rows, in order.
pub(crate) fn varying<const N: usize>(columns: &[[String; N]]) -> Vec<usize> {
    (0..N).filter(|&i| columns.iter().any(|c| c[i] != columns[0][i])).collect()
}

/// Row names for cells shown together, as (workload, policy): the workload (with its I/O
/// scheduler setting when `iosched`) and the groups it competes with (`hash vs 8 bg`), the
/// policy with the primary group's affinity and cgroup (`other, spread, weight 200`) and the
/// scheduler knobs the cell sweeps (`rr prio 98, sched_rr_timeslice_ms=5`) and its CPU
/// scheduler (`other, scx_bpfland`), each setting
/// only when the cells differ in it, so that no two rows of different cells read alike.
pub fn rows(cells: &[&CellParams], iosched: bool) -> Vec<(String, String)> {
    let settings: Vec<[String; 5]> = cells
        .iter()
        .map(|p| {
            let [aff, cg] = placement(p);
            [aff, cg, others(p), knobs(p), p.cpu_scheduler.clone().unwrap_or_default()]
        })
        .collect();
    let shown = varying(&settings);
    cells
        .iter()
        .zip(&settings)
        .map(|(p, s)| {
            let mut workload = match &p.iosched {
                Some(io) if iosched => format!("{} @{io}", p.workload),
                _ => p.workload.clone(),
            };
            // The work_scale axis's level: `cpu x1.03`.
            if let Some(x) = p.groups.iter().find(|g| g.name == "main").and_then(|g| g.work_scale) {
                workload.push_str(&format!(" x{x}"));
            }
            if shown.contains(&2) && !s[2].is_empty() {
                workload.push_str(&format!(" vs {}", s[2]));
            }
            let mut pol = policy(p);
            for i in shown.iter().filter(|&&i| i != 2) {
                pol.push_str(&format!(", {}", s[*i]));
            }
            (workload, pol)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(affinity: &str, weight: Option<u32>, bg: u32) -> CellParams {
        let main = GroupParams {
            name: "main".into(),
            processes: 4,
            affinity: affinity.into(),
            cpu_weight: weight,
            ..Default::default()
        };
        let mut groups = vec![main];
        if bg > 0 {
            let bg = GroupParams {
                name: "bg".into(),
                class: "other".into(),
                processes: bg,
                affinity: "all".into(),
                background: true,
                ..Default::default()
            };
            groups.push(bg);
        }
        CellParams {
            workload: "hash".into(),
            policy: "other".into(),
            class: "other".into(),
            processes: 4,
            groups,
            ..Default::default()
        }
    }

    #[test]
    fn lab1_rows_name_affinity_weight_and_background_where_cells_differ() {
        let cells = [
            cell("all", None, 0),
            cell("all", None, 8),
            cell("spread", Some(200), 9),
            cell("all", Some(200), 8),
        ];
        let refs: Vec<&CellParams> = cells.iter().collect();
        let got = rows(&refs, true);
        let want = [
            ("hash", "other, unpinned, no cgroup"),
            ("hash vs 8 bg", "other, unpinned, no cgroup"),
            ("hash vs 9 bg", "other, spread, weight 200"),
            ("hash vs 8 bg", "other, unpinned, weight 200"),
        ];
        assert_eq!(got, want.map(|(w, p)| (w.to_string(), p.to_string())));
    }

    #[test]
    fn rows_add_nothing_where_the_cells_agree() {
        let cells = [cell("spread", Some(200), 8), cell("spread", Some(200), 8)];
        let refs: Vec<&CellParams> = cells.iter().collect();
        assert_eq!(rows(&refs, true), vec![("hash".to_string(), "other".to_string()); 2]);
        let pa3 = CellParams {
            workload: "cpu".into(),
            policy: "fifo".into(),
            class: "fifo".into(),
            priority: 98,
            ..Default::default()
        };
        assert_eq!(rows(&[&pa3], true), vec![("cpu".to_string(), "fifo prio 98".to_string())]);
    }

    #[test]
    fn rows_name_the_cpu_scheduler_where_cells_differ_in_it() {
        let under = |s: &str| CellParams {
            workload: "cpu".into(),
            policy: "other".into(),
            class: "other".into(),
            cpu_scheduler: Some(s.into()),
            ..Default::default()
        };
        let (a, b) = (under("eevdf"), under("scx_bpfland"));
        assert_eq!(
            rows(&[&a, &b], false),
            [("cpu".into(), "other, eevdf".into()), ("cpu".into(), "other, scx_bpfland".into())]
        );
        assert_eq!(
            rows(&[&b, &b], false)[0].1,
            "other",
            "the same scheduler everywhere is not named"
        );
    }

    #[test]
    fn rows_name_the_swept_knob_where_cells_differ_in_it() {
        let knob = |v: &str| CellParams {
            workload: "cpu".into(),
            policy: "rr".into(),
            class: "rr".into(),
            priority: 98,
            knobs: [("kernel.sched_rr_timeslice_ms".to_string(), v.to_string())].into(),
            ..Default::default()
        };
        let (a, b) = (knob("5"), knob("100"));
        let names: Vec<String> = rows(&[&a, &b], true).into_iter().map(|(_, p)| p).collect();
        assert_eq!(
            names,
            ["rr prio 98, sched_rr_timeslice_ms=5", "rr prio 98, sched_rr_timeslice_ms=100"]
        );
        assert_eq!(rows(&[&a, &a], true)[0].1, "rr prio 98", "nothing added where the cells agree");
    }
}
