//! The matrix product: one cell per combination of axis values, its groups resolved, its
//! batch's live sets beside it, and the swept knobs' combinations around all of them.

use super::groups::{GroupDefs, Swept};
use super::{Ctx, Location};
use crate::axes::{CellDef, Check};
use crate::error::SpecError;
use schedlab_plan::knob::KnobValue;
use schedlab_plan::{axis, Cell, CpuScheduler, Group, RtScheduler};
use std::collections::HashSet;

/// The most cells a matrix may have.
const MAX_CELLS: usize = 100_000;

/// What the cells are made of: the cell axes, the groups' definitions and their axes.
pub(super) struct Matrix {
    /// The cell axes (`iosched`, `cpu_scheduler`), which vary slowest.
    pub(super) cell_swept: Vec<Swept>,
    /// The groups' definitions, main first.
    pub(super) defs: GroupDefs,
    /// Every axis of every group.
    pub(super) swept: Vec<Swept>,
    /// The `[matrix]` table.
    pub(super) span: Location,
}

/// The plan's cells, numbered in order: the product, each batch's live sets after its cell,
/// and the product repeated for each combination of swept knobs.
pub(super) fn cells(
    ck: &Check,
    m: &Matrix,
    swept_knobs: &[(String, Vec<KnobValue>)],
) -> Result<Vec<Cell>, SpecError> {
    let cells = product(ck, m)?;
    let cells = with_live_sets(ck.cx, cells, &m.span)?;
    with_knobs(ck.cx, cells, swept_knobs, &m.span)
}

/// One cell per combination of axis values, with a measured group, each key once.
fn product(ck: &Check, m: &Matrix) -> Result<Vec<Cell>, SpecError> {
    let cx = ck.cx;
    let mut cells: Vec<Cell> = Vec::new();
    let mut seen = HashSet::new();
    // Cell axes vary slowest: a run's cells of one I/O scheduler are adjacent.
    let counts: Vec<usize> = m.cell_swept.iter().chain(&m.swept).map(|a| a.values.len()).collect();
    let total: usize = counts.iter().product();
    if total > MAX_CELLS {
        return cx.err(m.span.clone(), format!("the matrix has {total} cells; at most 100000"));
    }
    for combo in 0..total {
        // Mixed-radix decomposition: the last axis varies fastest.
        let mut picks = vec![0usize; counts.len()];
        let mut rest = combo;
        for i in (0..counts.len()).rev() {
            picks[i] = rest % counts[i];
            rest /= counts[i];
        }
        let Some((key, cell, groups)) = one_cell(ck, m, &picks)? else { continue };
        if seen.insert(key.clone()) {
            cells.push(Cell {
                index: cells.len() as u32,
                key,
                groups,
                io: cell.io,
                knobs: Default::default(),
                cpu_scheduler: cell.cpu_scheduler,
            });
        }
    }
    if cells.is_empty() {
        return cx.err(m.span.clone(), "the matrix produces no cell with a measured group");
    }
    Ok(cells)
}

/// The cell of one value per axis (`picks`, cell axes first): its key, its cell settings and
/// its groups, measured first; None when it would measure nothing.
fn one_cell(
    ck: &Check,
    m: &Matrix,
    picks: &[usize],
) -> Result<Option<(String, CellDef, Vec<Group>)>, SpecError> {
    let (cell_picks, group_picks) = picks.split_at(m.cell_swept.len());
    let mut cell = CellDef::default();
    let mut cell_tags = Vec::new();
    for (a, &pick) in m.cell_swept.iter().zip(cell_picks) {
        let v = &a.values[pick];
        a.def.apply_cell(&mut cell, v.clone());
        cell_tags.push((a.def.axis, v.label()));
    }
    let mut groups = Vec::new();
    let mut key_parts: Vec<String> = Vec::new();
    for (gname, def) in &m.defs {
        let mut g = def.clone();
        let mut tags = Vec::new();
        for (a, &pick) in m.swept.iter().zip(group_picks).filter(|(a, _)| &a.group == gname) {
            let v = &a.values[pick];
            a.def.apply_group(&mut g, v.clone());
            tags.push((a.def.axis, v.label()));
        }
        let group = g.resolve(ck.cx, gname, ck.workloads, ck.policies, m.span.clone())?;
        key_parts.push(axis::group_key(gname, group.as_ref(), &tags));
        if let Some(group) = group {
            groups.push(group);
        }
    }
    if groups.iter().all(|g| g.background) {
        return Ok(None); // a cell needs something to measure (e.g. main.processes = 0 with only background left)
    }
    groups.sort_by_key(|g| g.background);
    let key = axis::cell_key(key_parts, &cell_tags);
    scx_conflict(ck, &key, &cell, &groups, &m.span)?;
    Ok(Some((key, cell, groups)))
}

/// A cell under a sched_ext `cpu_scheduler` whose groups that scheduler would not schedule:
/// a periodic set that loads schedlab's own, or a real-time group.
fn scx_conflict(
    ck: &Check,
    key: &str,
    cell: &CellDef,
    groups: &[Group],
    at: &Location,
) -> Result<(), SpecError> {
    let Some(scx) = cell.cpu_scheduler.as_ref().and_then(CpuScheduler::scx) else {
        return Ok(());
    };
    let span = ck
        .locs
        .cpu_schedulers
        .iter()
        .find(|(l, _)| *l == scx.label())
        .map_or(at.clone(), |(_, s)| s.clone());
    let own = groups
        .iter()
        .find_map(|g| g.workload.periodic().filter(|p| p.scheduler.sched_ext()).map(|p| (g, p)));
    if let Some((g, p)) = own {
        return ck.cx.err(
                span,
                format!(
                    "cell {key}: group {} is a periodic set under {}, which loads schedlab's own sched_ext scheduler, and the cell's cpu_scheduler loads {}: the kernel runs one sched_ext scheduler at a time; use {} with the cpu_scheduler axis, or leave the axis out",
                    g.name,
                    p.scheduler.name(),
                    scx.name(),
                    if p.scheduler.edf() { "edf" } else { "dwcs" }
                ),
            );
    }
    if let Some(why) = scx_mix(groups) {
        return ck.cx.err(
                span,
                format!(
                    "cell {key}: {why}, which sched_ext does not schedule (it takes only SCHED_OTHER, BATCH and IDLE tasks; real-time and deadline tasks keep their classes above it): the cell would not compare {} with anything; give such groups a fair policy or use eevdf alone for them",
                    scx.name()
                ),
            );
    }
    Ok(())
}

/// Knob axes vary slowest of all: a run changes the kernel's settings as seldom as it can.
fn with_knobs(
    cx: &Ctx,
    mut cells: Vec<Cell>,
    swept_knobs: &[(String, Vec<KnobValue>)],
    matrix_span: &Location,
) -> Result<Vec<Cell>, SpecError> {
    let combos = crate::knobs::combos(swept_knobs);
    if combos.len() * cells.len() > MAX_CELLS {
        return cx.err(
            matrix_span.clone(),
            format!("the matrix has {} cells; at most 100000", combos.len() * cells.len()),
        );
    }
    if !swept_knobs.is_empty() {
        let base = std::mem::take(&mut cells);
        for knobs in combos {
            for c in &base {
                let key = format!("{}{}", c.key, schedlab_plan::knob::key_part(&knobs));
                cells.push(Cell {
                    index: cells.len() as u32,
                    key,
                    knobs: knobs.clone(),
                    ..c.clone()
                });
            }
        }
    }
    Ok(cells)
}

/// `cells` with, after each cell of a batch that `run` measures more of than its set 0
/// (`generate = { sets = N, live = k }`), a cell for each of its live sets 1 to k - 1, keyed
/// `KEY/set=i`, its tasks set i's; indices renumbered in order.
fn with_live_sets(
    cx: &Ctx,
    cells: Vec<Cell>,
    matrix_span: &Location,
) -> Result<Vec<Cell>, SpecError> {
    let mut out = Vec::with_capacity(cells.len());
    for cell in cells {
        let live: Vec<(usize, Vec<_>)> = cell
            .groups
            .iter()
            .enumerate()
            .filter_map(|(i, g)| g.workload.periodic().map(|p| (i, p.live_sets())))
            .filter(|(_, sets)| !sets.is_empty())
            .collect();
        let extra: Vec<Cell> = match live.into_iter().next() {
            None => Vec::new(),
            Some((g, sets)) => sets
                .into_iter()
                .map(|set| {
                    let set = match set {
                        Ok(s) => s,
                        Err(e) => {
                            let why = format!(
                                "cell {}: cannot generate a live set of its batch: {e}",
                                cell.key
                            );
                            return cx.err(matrix_span.clone(), why);
                        }
                    };
                    let mut c = cell.clone();
                    c.key = format!("{}/set={}", cell.key, set.live_set.unwrap_or(0));
                    c.groups[g].workload = schedlab_plan::Workload::Periodic(Box::new(set));
                    Ok(c)
                })
                .collect::<Result<_, SpecError>>()?,
        };
        out.push(cell);
        out.extend(extra);
    }
    for (i, c) in out.iter_mut().enumerate() {
        c.index = i as u32;
    }
    Ok(out)
}

/// Why a cell's groups do not run under sched_ext: the first real-time or deadline group,
/// or periodic set with a real-time scheduler.
fn scx_mix(groups: &[Group]) -> Option<String> {
    groups.iter().find_map(|g| match g.workload.periodic() {
        Some(p) if p.scheduler != RtScheduler::Other => {
            Some(format!("group {} is a periodic set under {}", g.name, p.scheduler.name()))
        }
        Some(_) => None,
        None if g.policy.class.is_realtime() => Some(format!(
            "group {} runs under {} ({})",
            g.name,
            g.policy_name,
            g.policy.class.name()
        )),
        None => None,
    })
}
