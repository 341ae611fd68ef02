//! The TOML side of each matrix axis (`schedlab_plan::axis` holds the rest): how one
//! written value is checked, with its errors at its location, and what it sets in a group
//! or a cell. One [`SpecAxis`] per axis, found by the axis's key.

use crate::error::SpecError;
use crate::raw::{RawList, RawValue};
use crate::validate::{check_workload_name, cpu_list, scheduler_name, Ctx, GroupDef, Locations};
use schedlab_plan::axis::{self, Axis, AxisValue};
use schedlab_plan::{
    Affinity, Class, CpuScheduler, IoSetting, Policy, Refusal, Workload, MAX_SLICE_US,
    MAX_WORKER_PRIORITY, MIN_SLICE_US,
};
use serde_spanned::Spanned;
use std::collections::BTreeMap;

/// Most worker processes in one group.
const MAX_PROCESSES: i64 = 100_000;

/// Where a value is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    /// A group's fixed setting: `[groups.NAME] KEY = value`.
    Fixed,
    /// On an axis of the group `main`: `[matrix] KEY = [..]`.
    MainAxis,
    /// On an axis of another group, or a cell axis.
    Axis,
}

/// What values are checked against, and where names and values are recorded for the
/// checks that come after validation.
pub(crate) struct Check<'a> {
    pub(crate) cx: &'a Ctx<'a>,
    pub(crate) locs: &'a mut Locations,
    pub(crate) workloads: &'a BTreeMap<String, Workload>,
    pub(crate) policies: &'a BTreeMap<String, Policy>,
    /// The `[iosched.NAME]` entries.
    pub(crate) io_defs: &'a BTreeMap<String, IoSetting>,
}

/// The settings of a whole cell, as cell axes set them.
#[derive(Debug, Clone, Default)]
pub(crate) struct CellDef {
    pub(crate) io: Option<IoSetting>,
    pub(crate) cpu_scheduler: Option<CpuScheduler>,
}

/// What a value of an axis sets.
pub(crate) enum Apply {
    /// A group's setting, before the group is resolved.
    Group(fn(&mut GroupDef, AxisValue)),
    /// A cell's setting.
    Cell(fn(&mut CellDef, AxisValue)),
}

/// Checks one written value, where it is used.
type Parse = fn(&mut Check, RawValue, Use) -> Result<AxisValue, SpecError>;
/// Checks an axis's list of values.
type List = fn(&mut Check, &SpecAxis, &RawList, Use) -> Result<Vec<AxisValue>, SpecError>;

/// One axis's TOML side.
pub(crate) struct SpecAxis {
    /// The axis.
    pub(crate) axis: &'static Axis,
    /// Checks one written value.
    pub(crate) parse: Parse,
    /// Checks a list of values on the axis ([`each`] for most).
    pub(crate) list: List,
    /// Where a value goes.
    pub(crate) apply: Apply,
}

impl SpecAxis {
    /// Sets a group's setting.
    pub(crate) fn apply_group(&self, g: &mut GroupDef, v: AxisValue) {
        match self.apply {
            Apply::Group(f) => f(g, v),
            Apply::Cell(_) => unreachable!("the {} axis sets a cell, not a group", self.axis.name),
        }
    }

    /// Sets a cell's setting.
    pub(crate) fn apply_cell(&self, c: &mut CellDef, v: AxisValue) {
        match self.apply {
            Apply::Cell(f) => f(c, v),
            Apply::Group(_) => unreachable!("the {} axis sets a group, not a cell", self.axis.name),
        }
    }
}

/// Every axis's TOML side (in any order: cells follow `axis::AXES`).
pub(crate) static SPEC_AXES: &[SpecAxis] = &[
    SpecAxis {
        axis: &axis::WORKLOAD,
        parse: workload,
        list: each,
        apply: Apply::Group(|g, v| g.workload = Some(name(v))),
    },
    SpecAxis {
        axis: &axis::POLICY,
        parse: policy,
        list: each,
        apply: Apply::Group(|g, v| g.policy = Some(name(v))),
    },
    SpecAxis {
        axis: &axis::PRIORITY,
        parse: priority,
        list: each,
        apply: Apply::Group(|g, v| g.priority = Some(int(v))),
    },
    SpecAxis {
        axis: &axis::NICE,
        parse: nice,
        list: each,
        apply: Apply::Group(|g, v| g.nice = Some(int(v))),
    },
    SpecAxis {
        axis: &axis::AFFINITY,
        parse: |ck, v, _| affinity(ck.cx, toml(v), ck.locs).map(AxisValue::Affinity),
        list: each,
        apply: Apply::Group(|g, v| match v {
            AxisValue::Affinity(a) => g.affinity = Some(a),
            v => unreachable!("affinity holds {v:?}"),
        }),
    },
    SpecAxis {
        axis: &axis::CPU_WEIGHT,
        parse: cpu_weight,
        list: each,
        // On an axis, 0 means "no weight": the cell's baseline without cgroups.
        apply: Apply::Group(|g, v| {
            g.cgroup.cpu_weight = Some(int(v)).filter(|&w| w > 0).map(|w| w as u32)
        }),
    },
    SpecAxis {
        axis: &axis::CPU_MAX,
        parse: |ck, v, _| cpu_max(ck.cx, toml(v)).map(AxisValue::CpuMax),
        list: each,
        apply: Apply::Group(|g, v| match v {
            AxisValue::CpuMax(m) => g.cgroup.cpu_max = Some(m),
            v => unreachable!("cpu_max holds {v:?}"),
        }),
    },
    SpecAxis {
        axis: &axis::CPUSET,
        parse: |ck, v, _| cpu_list(ck.cx, toml(v), ck.locs).map(AxisValue::Cpus),
        list: each,
        apply: Apply::Group(|g, v| match v {
            AxisValue::Cpus(c) => g.cgroup.cpuset = Some(c),
            v => unreachable!("cpuset holds {v:?}"),
        }),
    },
    SpecAxis {
        axis: &axis::PROCESSES,
        parse: processes,
        list: each,
        apply: Apply::Group(|g, v| g.processes = Some(int(v))),
    },
    SpecAxis {
        axis: &axis::SCHEDULER,
        parse: scheduler,
        list: each,
        apply: Apply::Group(|g, v| g.scheduler = Some(name(v))),
    },
    SpecAxis {
        axis: &axis::UTILISATION,
        parse: |ck, v, _| {
            crate::periodic_check::utilisation_value(ck.cx, float(v)).map(AxisValue::Float)
        },
        list: each,
        apply: Apply::Group(|g, v| match v {
            AxisValue::Float(u) => g.utilisation = Some(u),
            v => unreachable!("utilisation holds {v:?}"),
        }),
    },
    SpecAxis {
        axis: &axis::SLICE,
        parse: slice,
        list: each,
        apply: Apply::Group(|g, v| g.slice_us = Some(int(v))),
    },
    SpecAxis {
        axis: &axis::WORK_SCALE,
        parse: |ck, v, _| {
            let s = float(v);
            let x = *s.get_ref();
            if !(x.is_finite() && x > 0.0 && x <= 100.0) {
                return ck.cx.err(
                    s.span(),
                    format!("work_scale must be more than 0 and at most 100, got {x}"),
                );
            }
            Ok(AxisValue::Float(x))
        },
        list: each,
        apply: Apply::Group(|g, v| match v {
            AxisValue::Float(s) => g.work_scale = Some(s),
            v => unreachable!("work_scale holds {v:?}"),
        }),
    },
    SpecAxis {
        axis: &axis::IOSCHED,
        parse: iosched,
        list: schedulers,
        apply: Apply::Cell(|c, v| match v {
            AxisValue::Io(s) => c.io = Some(s),
            v => unreachable!("iosched holds {v:?}"),
        }),
    },
    SpecAxis {
        axis: &axis::CPU_SCHEDULER,
        parse: cpu_scheduler,
        list: schedulers,
        apply: Apply::Cell(|c, v| match v {
            AxisValue::CpuScheduler(s) => c.cpu_scheduler = Some(s),
            v => unreachable!("cpu_scheduler holds {v:?}"),
        }),
    },
];

/// The TOML side of the axis a key names.
pub(crate) fn def(key: &str) -> &'static SpecAxis {
    SPEC_AXES
        .iter()
        .find(|d| d.axis.name == key)
        .unwrap_or_else(|| panic!("axis key `{key}` has no definition in SPEC_AXES"))
}

/// Checks every value of a list, then that it has one and none twice.
fn each(
    ck: &mut Check,
    def: &SpecAxis,
    l: &RawList,
    how: Use,
) -> Result<Vec<AxisValue>, SpecError> {
    let values =
        l.values.iter().map(|v| (def.parse)(ck, *v, how)).collect::<Result<Vec<_>, _>>()?;
    let name = def.axis.name;
    if values.is_empty() {
        return ck.cx.err(l.span.clone(), format!("the {name} axis must list at least one value"));
    }
    if let Some(i) = first_repeated(&values) {
        return ck
            .cx
            .err(l.span.clone(), format!("the {name} axis lists {} twice", values[i].label()));
    }
    Ok(values)
}

/// The index of the first value equal to one before it. Equal values have equal labels, so
/// only values of one label are compared: a list of 100,000 values is checked in linear time.
fn first_repeated(values: &[AxisValue]) -> Option<usize> {
    let mut by_label: std::collections::HashMap<String, Vec<&AxisValue>> =
        std::collections::HashMap::new();
    for (i, v) in values.iter().enumerate() {
        let same = by_label.entry(v.label()).or_default();
        if same.contains(&v) {
            return Some(i);
        }
        same.push(v);
    }
    None
}

/// The `iosched` axis's list: a scheduler named twice is an error at its second mention.
fn schedulers(
    ck: &mut Check,
    def: &SpecAxis,
    l: &RawList,
    how: Use,
) -> Result<Vec<AxisValue>, SpecError> {
    let name = def.axis.name;
    if l.values.is_empty() {
        return ck
            .cx
            .err(l.span.clone(), format!("the {name} axis must list at least one scheduler"));
    }
    let out = l.values.iter().map(|v| (def.parse)(ck, *v, how)).collect::<Result<Vec<_>, _>>()?;
    if let Some(i) = first_repeated(&out) {
        return ck
            .cx
            .err(l.values[i].span(), format!("the {name} axis lists {} twice", out[i].label()));
    }
    Ok(out)
}

fn workload(ck: &mut Check, v: RawValue, _: Use) -> Result<AxisValue, SpecError> {
    let w = string(v);
    check_workload_name(ck.cx, w, ck.workloads)?;
    ck.locs.workloads.push((w.get_ref().clone(), w.span()));
    Ok(AxisValue::Name(w.get_ref().clone()))
}

fn policy(ck: &mut Check, v: RawValue, _: Use) -> Result<AxisValue, SpecError> {
    let p = string(v);
    if !ck.policies.contains_key(p.get_ref()) && Class::parse(p.get_ref()).is_none() {
        let known: Vec<&str> = ck
            .policies
            .keys()
            .map(String::as_str)
            .chain(Class::ALL.iter().map(|c| c.name()))
            .collect();
        return ck.cx.err(
            p.span(),
            format!(
                "unknown policy \"{}\"; define it under [policies.{}] or use one of: {}",
                p.get_ref(),
                p.get_ref(),
                known.join(", ")
            ),
        );
    }
    ck.locs.policies.entry(p.get_ref().clone()).or_insert_with(|| p.span());
    Ok(AxisValue::Name(p.get_ref().clone()))
}

fn priority(ck: &mut Check, v: RawValue, _: Use) -> Result<AxisValue, SpecError> {
    ck.cx
        .int_in(int_raw(v), 1, MAX_WORKER_PRIORITY, "priority (99 is reserved for the engine)")
        .map(AxisValue::Int)
}

fn nice(ck: &mut Check, v: RawValue, _: Use) -> Result<AxisValue, SpecError> {
    let n = int_raw(v);
    let x = ck.cx.int_in(n, -20, 19, "nice")?;
    ck.locs.nice.push((x, n.span()));
    Ok(AxisValue::Int(x))
}

fn slice(ck: &mut Check, v: RawValue, _: Use) -> Result<AxisValue, SpecError> {
    let n = int_raw(v);
    let x = ck.cx.int_in(n, MIN_SLICE_US, MAX_SLICE_US, SLICE_WHAT)?;
    ck.locs.slices.push(n.span());
    Ok(AxisValue::Int(x))
}

/// What a slice's range error calls it.
pub(crate) const SLICE_WHAT: &str =
    "slice_us (EEVDF's custom slice; the kernel takes 100 us to 100 ms)";

fn cpu_weight(ck: &mut Check, v: RawValue, how: Use) -> Result<AxisValue, SpecError> {
    let w = int_raw(v);
    match how {
        Use::Fixed => ck.cx.int_in(
            w,
            1,
            10_000,
            "cpu_weight (cgroup v2 units; v1 shares = weight x 1024 / 100)",
        ),
        _ => ck.cx.int_in(
            w,
            0,
            10_000,
            "cpu_weight (cgroup v2 units, 0 = none; v1 shares = weight x 1024 / 100)",
        ),
    }
    .map(AxisValue::Int)
}

fn processes(ck: &mut Check, v: RawValue, how: Use) -> Result<AxisValue, SpecError> {
    // 0 leaves a group out of a cell; the main group must have a process in every cell.
    let least = if how == Use::MainAxis { 1 } else { 0 };
    ck.cx.int_in(int_raw(v), least, MAX_PROCESSES, "processes").map(AxisValue::Int)
}

fn scheduler(ck: &mut Check, v: RawValue, _: Use) -> Result<AxisValue, SpecError> {
    let s = string(v);
    ck.locs.policies.entry(s.get_ref().clone()).or_insert_with(|| s.span());
    crate::periodic_check::scheduler_name(ck.cx, s).map(AxisValue::Name)
}

fn iosched(ck: &mut Check, v: RawValue, _: Use) -> Result<AxisValue, SpecError> {
    let s = string(v);
    let setting = match ck.io_defs.get(s.get_ref()) {
        Some(d) => d.clone(),
        None => IoSetting {
            name: s.get_ref().clone(),
            scheduler: scheduler_name(ck.cx, s)?,
            tunables: Vec::new(),
        },
    };
    ck.locs.iosched.push((setting.scheduler.clone(), s.span()));
    Ok(AxisValue::Io(setting))
}

/// `"eevdf"`, `"scx:NAME[:ARGS]"` or `{ scx = "NAME", args = ["..", ..] }`.
fn cpu_scheduler(ck: &mut Check, v: RawValue, _: Use) -> Result<AxisValue, SpecError> {
    let v = toml(v);
    let parsed = match v.get_ref() {
        toml::Value::String(s) => CpuScheduler::parse(s),
        toml::Value::Table(t) => scx_table(t),
        other => {
            let t = other.type_str();
            let a = if t.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
            Err(Refusal(format!(
                "a cpu_scheduler is a string (\"eevdf\", \"scx:NAME\") or a table {{ scx = \"NAME\", args = [..] }}, got {a} {t}"
            )))
        }
    };
    let mut s = parsed.or_else(|msg| ck.cx.err(v.span(), msg))?;
    if let CpuScheduler::Scx(p) = &mut s {
        if p.program.contains('/') {
            p.program =
                crate::paths::resolve(ck.cx.base, &p.program).to_string_lossy().into_owned();
        }
    }
    ck.locs.cpu_schedulers.push((s.label(), v.span()));
    Ok(AxisValue::CpuScheduler(s))
}

fn scx_table(t: &toml::Table) -> Result<CpuScheduler, Refusal> {
    if let Some(k) = t.keys().find(|k| !["scx", "args"].contains(&k.as_str())) {
        return Err(Refusal(format!(
            "unknown key `{k}` in a cpu_scheduler table: it takes `scx` (the program) and `args`"
        )));
    }
    let program = t
        .get("scx")
        .and_then(toml::Value::as_str)
        .ok_or("a cpu_scheduler table needs `scx = \"NAME\"`, the program (on PATH or a path)")?;
    let args = match t.get("args") {
        None => Vec::new(),
        Some(a) => a
            .as_array()
            .and_then(|a| {
                a.iter().map(|x| x.as_str().map(str::to_string)).collect::<Option<Vec<_>>>()
            })
            .ok_or("`args` of a cpu_scheduler is an array of strings")?,
    };
    schedlab_plan::ScxProgram::new(program, args).map(CpuScheduler::Scx)
}

fn affinity(
    cx: &Ctx,
    v: &Spanned<toml::Value>,
    locs: &mut Locations,
) -> Result<Affinity, SpecError> {
    match v.get_ref() {
        toml::Value::String(s) if s == "all" => Ok(Affinity::All),
        toml::Value::String(s) if s == "spread" => Ok(Affinity::Spread),
        toml::Value::String(s) if s == "compact" => Ok(Affinity::Compact),
        _ => cpu_list(cx, v, locs).map(Affinity::List).map_err(|mut e| {
            e.message = format!("affinity must be \"all\", \"spread\", \"compact\", a CPU list like \"0-1,3\" or [0, 1]: {}", e.message);
            e
        }),
    }
}

fn cpu_max(cx: &Ctx, v: &Spanned<toml::Value>) -> Result<(u64, u64), SpecError> {
    let pair = v
        .get_ref()
        .as_array()
        .filter(|a| a.len() == 2)
        .and_then(|a| Some((a[0].as_integer()?, a[1].as_integer()?)));
    let Some((quota, period)) = pair else {
        return cx.err(
            v.span(),
            "cpu_max must be [quota_us, period_us], e.g. [50000, 100000] for half a CPU",
        );
    };
    if !(1000..=1_000_000).contains(&period) {
        return cx.err(
            v.span(),
            format!("cpu_max period must be between 1000 and 1000000 us, got {period}"),
        );
    }
    if quota < 1000 {
        return cx.err(v.span(), format!("cpu_max quota must be at least 1000 us, got {quota}"));
    }
    Ok((quota as u64, period as u64))
}

// The raw types each axis is declared with in raw.rs's `axis_keys!`; another is a bug there.

fn string(v: RawValue<'_>) -> &Spanned<String> {
    match v {
        RawValue::Str(s) => s,
        v => unreachable!("declared as a string in axis_keys!: {v:?}"),
    }
}

fn int_raw(v: RawValue<'_>) -> &Spanned<i64> {
    match v {
        RawValue::Int(i) => i,
        v => unreachable!("declared as an integer in axis_keys!: {v:?}"),
    }
}

fn float(v: RawValue<'_>) -> &Spanned<f64> {
    match v {
        RawValue::Float(x) => x,
        v => unreachable!("declared as a float in axis_keys!: {v:?}"),
    }
}

fn toml(v: RawValue<'_>) -> &Spanned<toml::Value> {
    match v {
        RawValue::Toml(t) => t,
        v => unreachable!("declared as a TOML value in axis_keys!: {v:?}"),
    }
}

fn name(v: AxisValue) -> String {
    match v {
        AxisValue::Name(n) => n,
        v => unreachable!("a name axis holds {v:?}"),
    }
}

fn int(v: AxisValue) -> i64 {
    match v {
        AxisValue::Int(i) => i,
        v => unreachable!("an integer axis holds {v:?}"),
    }
}

#[cfg(test)]
mod tests;
