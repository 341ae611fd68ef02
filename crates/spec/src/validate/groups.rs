//! `[groups.NAME]` and the matrix's group axes: each group's fixed settings, the axes that
//! vary them, and a group resolved for one cell.

use super::policy::builtin_policy;
use super::workload::builtin_workload;
use super::{check_name, Ctx, Location};
use crate::axes::{self, Check, SpecAxis, Use};
use crate::error::SpecError;
use crate::raw::{RawGroup, RawGroupAxes, RawList, RawValue};
use schedlab_plan::axis::{AxisValue, AXES, MAIN};
use schedlab_plan::{Affinity, CgroupSpec, Class, Group, Policy, Workload};
use serde_spanned::Spanned;
use std::collections::BTreeMap;

/// Each group's name and definition, main first, then the others in name order.
pub(super) type GroupDefs = Vec<(String, GroupDef)>;

/// The groups' definitions (main first, then the others in name order) and every axis of
/// every group, resolved in that order.
pub(super) fn groups(
    ck: &mut Check,
    raw_groups: &BTreeMap<Spanned<String>, Spanned<RawGroup>>,
    main_axes: RawGroupAxes,
    group_axes: BTreeMap<Spanned<String>, Spanned<RawGroupAxes>>,
    matrix_span: &Location,
) -> Result<(GroupDefs, Vec<Swept>), SpecError> {
    let defs = definitions(ck, raw_groups, main_axes.workload.is_some(), matrix_span)?;
    let swept = group_axes_swept(ck, &defs, main_axes, group_axes, matrix_span)?;
    Ok((defs, swept))
}

/// Group definitions: fixed settings, to which the axes then apply. A `workload` axis at the
/// top level defines the group main.
fn definitions(
    ck: &mut Check,
    raw_groups: &BTreeMap<Spanned<String>, Spanned<RawGroup>>,
    main_workload_axis: bool,
    matrix_span: &Location,
) -> Result<Vec<(String, GroupDef)>, SpecError> {
    let cx = ck.cx;
    let mut defs: Vec<(String, GroupDef)> = Vec::new();
    let main_defined = raw_groups.keys().any(|k| k.get_ref() == MAIN);
    if main_workload_axis && !main_defined {
        defs.push((MAIN.into(), GroupDef::default()));
    }
    for (k, g) in raw_groups {
        check_name(cx, k)?;
        let given = g.get_ref().given();
        defs.push((k.get_ref().clone(), group_def(ck, g.get_ref(), &given)?));
        if let Some(span) = first_cgroup(given.iter().map(|(key, v)| (*key, v.span()))) {
            ck.locs.cgroups.push((k.get_ref().clone(), span));
        }
    }
    if defs.is_empty() {
        return cx.err(
            matrix_span.clone(),
            "the matrix needs `workload = [...]` (or [groups.NAME] definitions)",
        );
    }
    // main first, then the other groups in name order
    defs.sort_by_key(|(n, _)| (n != MAIN, n.clone()));
    Ok(defs)
}

/// Every axis of every defined group, resolved, in a fixed order.
fn group_axes_swept(
    ck: &mut Check,
    defs: &[(String, GroupDef)],
    main_axes: RawGroupAxes,
    group_axes: BTreeMap<Spanned<String>, Spanned<RawGroupAxes>>,
    matrix_span: &Location,
) -> Result<Vec<Swept>, SpecError> {
    let cx = ck.cx;
    let mut axes_of: BTreeMap<String, Spanned<RawGroupAxes>> = BTreeMap::new();
    axes_of.insert(MAIN.into(), Spanned::new(0..0, main_axes));
    for (k, a) in group_axes {
        if k.get_ref() == MAIN && axes_of.get(MAIN).is_some_and(|m| !m.get_ref().given().is_empty())
        {
            return cx.err(k.span(), "the top-level matrix axes already describe the group \"main\": put these axes there");
        }
        if !defs.iter().any(|(n, _)| n == k.get_ref()) {
            return cx.err(
                k.span(),
                format!(
                    "matrix.groups.{} names no group; define it under [groups.{}]",
                    k.get_ref(),
                    k.get_ref()
                ),
            );
        }
        axes_of.insert(k.get_ref().clone(), a);
    }

    let mut swept: Vec<Swept> = Vec::new();
    for (gname, _) in defs {
        if let Some(a) = axes_of.get(gname) {
            let given = a.get_ref().given();
            if let Some(span) = first_cgroup(given.iter().map(|(key, l)| (*key, l.span.clone()))) {
                ck.locs.cgroups.push((gname.clone(), span));
            }
            swept.extend(sweep(
                ck,
                gname,
                &given,
                if gname == MAIN { Use::MainAxis } else { Use::Axis },
            )?);
        }
    }
    if let Some(main) = axes_of.get(MAIN) {
        if defs.iter().all(|(n, _)| n != MAIN) && !main.get_ref().given().is_empty() {
            return cx
                .err(matrix_span.clone(), "top-level matrix axes describe the group \"main\", which needs `workload = [...]` or [groups.main]");
        }
    }
    Ok(swept)
}

/// The values of one axis of one group (or of the cell: `group` empty), checked.
pub(super) struct Swept {
    pub(super) group: String,
    pub(super) def: &'static SpecAxis,
    pub(super) values: Vec<AxisValue>,
}

/// The axes written for one group (or the cell), checked in [`AXES`] order: the order cells
/// are numbered in and other groups' keys list them in.
pub(super) fn sweep(
    ck: &mut Check,
    group: &str,
    given: &[(&'static str, RawList)],
    how: Use,
) -> Result<Vec<Swept>, SpecError> {
    let mut out = Vec::new();
    for a in AXES {
        if let Some((_, list)) = given.iter().find(|(key, _)| *key == a.name) {
            let def = axes::def(a.name);
            out.push(Swept {
                group: group.to_string(),
                def,
                values: (def.list)(ck, def, list, how)?,
            });
        }
    }
    Ok(out)
}

/// A group's settings before axes apply; unset fields take defaults at resolve time.
#[derive(Debug, Clone, Default)]
pub(crate) struct GroupDef {
    pub(crate) workload: Option<String>,
    pub(crate) processes: Option<i64>,
    pub(crate) policy: Option<String>,
    pub(crate) priority: Option<i64>,
    pub(crate) nice: Option<i64>,
    pub(crate) affinity: Option<Affinity>,
    pub(crate) cgroup: CgroupSpec,
    pub(crate) background: bool,
    pub(crate) scheduler: Option<String>,
    pub(crate) utilisation: Option<f64>,
    pub(crate) slice_us: Option<i64>,
    pub(crate) work_scale: Option<f64>,
}

impl GroupDef {
    /// The group for one cell, or None if it has 0 processes there.
    pub(super) fn resolve(
        &self,
        cx: &Ctx,
        gname: &str,
        workloads: &BTreeMap<String, Workload>,
        policies: &BTreeMap<String, Policy>,
        at: Location,
    ) -> Result<Option<Group>, SpecError> {
        let processes = self.processes.unwrap_or(1);
        if processes == 0 {
            return Ok(None);
        }
        let Some(wname) = &self.workload else {
            return cx.err(at, format!("group \"{gname}\" has no workload: set `workload` in [groups.{gname}] or as an axis"));
        };
        let mut workload = workloads
            .get(wname)
            .cloned()
            .or_else(|| builtin_workload(wname))
            .expect("checked when the name was read");
        // A benchmark kind's one worker runs the whole benchmark: `processes`, where given,
        // is its own count (messaging's groups, pipe's pairs, schbench's message threads).
        let mut processes = processes;
        if workload.count().is_some() {
            if let Some(n) = self.processes {
                workload = workload.with_count(n as u32);
            }
            processes = 1;
        }
        if let Some(s) = self.work_scale {
            if matches!(workload, Workload::Command { .. } | Workload::Periodic(_)) {
                return cx.err(
                    at,
                    format!(
                        "group \"{gname}\": `work_scale` multiplies a workload's work amounts, and workload \"{wname}\" ({}) has none schedlab can scale{}",
                        workload.kind(),
                        if workload.periodic().is_some() { " (a periodic set's work is its tasks' c_ms)" } else { " (a command runs what its argv says)" }
                    ),
                );
            }
            workload = workload.slowed(s);
        }
        if let Workload::Periodic(p) = workload {
            return crate::periodic_check::resolve_group(cx, gname, wname, *p, self, at).map(Some);
        }
        if self.scheduler.is_some() || self.utilisation.is_some() {
            let what = if self.scheduler.is_some() { "scheduler" } else { "utilisation" };
            return cx.err(
                at,
                format!(
                    "group \"{gname}\": `{what}` applies to periodic workloads only, and workload \"{wname}\" is not one (use `policy`)"
                ),
            );
        }
        let pname = self.policy.clone().unwrap_or_else(|| "other".into());
        let mut policy = policies
            .get(&pname)
            .copied()
            .or_else(|| Class::parse(&pname).map(builtin_policy))
            .expect("checked when read");
        if let Some(p) = self.priority {
            if policy.class.is_rt() {
                policy.priority = p as u32;
            }
        }
        if let Some(n) = self.nice {
            policy.nice = n as i32;
        }
        if workload.count().is_some() && policy.class == Class::Deadline {
            return cx.err(
                at,
                format!(
                    "group \"{gname}\": workload \"{wname}\" ({}) runs its benchmark in threads or children of its worker, and a SCHED_DEADLINE task may make neither (the kernel refuses its fork and clone): choose another policy",
                    workload.kind()
                ),
            );
        }
        // Like a priority on a fair class, a slice on a non-fair one has no effect.
        if let (Some(s), true) = (self.slice_us, policy.class.is_fair()) {
            policy.slice_ns = Some(s as u64 * 1000);
        }
        Ok(Some(Group {
            name: gname.to_string(),
            workload_name: wname.clone(),
            workload,
            policy_name: pname,
            policy,
            processes: processes as u32,
            affinity: self.affinity.clone().unwrap_or(Affinity::All),
            cgroup: self.cgroup.clone(),
            background: self.background,
            work_scale: self.work_scale,
        }))
    }
}

/// A group's fixed settings, checked as their axes check a value.
fn group_def(
    ck: &mut Check,
    g: &RawGroup,
    given: &[(&'static str, RawValue)],
) -> Result<GroupDef, SpecError> {
    let mut d = GroupDef {
        background: g.background.as_ref().map(|b| *b.get_ref()).unwrap_or(false),
        ..Default::default()
    };
    for (key, v) in given {
        let def = axes::def(key);
        let value = (def.parse)(ck, *v, Use::Fixed)?;
        def.apply_group(&mut d, value);
    }
    Ok(d)
}

/// Where the first cgroup control of those written (key, span) is.
fn first_cgroup<'a>(written: impl Iterator<Item = (&'a str, Location)>) -> Option<Location> {
    written
        .filter(|(key, _)| axes::def(key).axis.cgroup)
        .map(|(_, span)| span)
        .min_by_key(|s| s.start)
}
