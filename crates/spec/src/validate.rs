//! Raw spec -> Plan: defaults, ranges, name resolution, the matrix product. One module per
//! section of the spec; this one holds the run-wide settings and puts the plan together.

use crate::axes::{Check, Use};
use crate::error::SpecError;
use crate::paths::{PathKey, PathUse};
use crate::raw::*;
use schedlab_plan::*;
use serde_spanned::Spanned;
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod allowed;
#[cfg(test)]
mod allowed_tests;
mod bench;
mod device;
mod disturb;
pub(crate) mod dma;
mod groups;
mod iosched;
mod matrix;
mod policy;
mod repetitions;
mod trace;
mod workload;

pub(crate) use allowed::{check_allowed, refused_cells};
pub(crate) use groups::GroupDef;
pub(crate) use iosched::scheduler_name;
pub(crate) use workload::check_workload_name;

/// A byte span in the source, for later errors.
pub type Location = Range<usize>;

/// Where names were defined or used, so later checks can point at them.
#[derive(Debug, Clone, Default)]
pub struct Locations {
    /// Policy name -> span of its definition, or of its first use in the matrix.
    pub policies: BTreeMap<String, Location>,
    /// Every explicit CPU list (affinity, cpuset) with its span, for the machine check.
    pub cpus: Vec<(Vec<u32>, Location)>,
    /// Each `iosched` axis value's scheduler name with the span to point at.
    pub iosched: Vec<(String, Location)>,
    /// The `[device]` table, its `path` and its `size_mib`, for the device checks.
    pub device: Option<Location>,
    /// `[device] path`.
    pub device_path: Option<Location>,
    /// `[device] size_mib`.
    pub device_size: Option<Location>,
    /// Every path of the spec (resolved) with its span, for the filesystem check.
    pub paths: Vec<PathUse>,
    /// Every explicit nice value (policies, groups, axes) with its span.
    pub nice: Vec<(i64, Location)>,
    /// Every explicit `slice_us` (policies, groups, axes), for the kernel check.
    pub slices: Vec<Location>,
    /// Each group's first cgroup setting (definition or axis), for errors about cgroups.
    pub cgroups: Vec<(String, Location)>,
    /// Every use of a workload name (axes, groups), for errors about what it needs.
    pub workloads: Vec<(String, Location)>,
    /// `cpu_dma_latency`, when the spec sets a value to hold.
    pub dma_latency: Option<Location>,
    /// The `[matrix]` table: where an error with no better place points.
    pub matrix: Location,
    /// Every knob of `[knobs]` and `[matrix.knobs]`, with its key and values.
    pub knobs: Vec<crate::knobs::KnobAt>,
    /// Each `cpu_scheduler` value's label with its span, for the sched_ext checks.
    pub cpu_schedulers: Vec<(String, Location)>,
    /// Each periodic workload's `duration_s` (or its name, without one), for the watchdog check.
    pub durations: Vec<(String, Location)>,
}

const DEFAULT_TIMEOUT_S: f64 = 1800.0;

pub(crate) struct Ctx<'a> {
    pub(crate) path: &'a str,
    pub(crate) src: &'a str,
    /// The directory relative paths resolve against.
    pub(crate) base: &'a Path,
}

impl Ctx<'_> {
    pub(crate) fn err<T>(
        &self,
        span: Range<usize>,
        msg: impl Into<String>,
    ) -> Result<T, SpecError> {
        Err(SpecError::at(self.path, self.src, span, msg))
    }

    pub(crate) fn int_in(
        &self,
        v: &Spanned<i64>,
        lo: i64,
        hi: i64,
        what: &str,
    ) -> Result<i64, SpecError> {
        let x = *v.get_ref();
        if x < lo || x > hi {
            return self.err(v.span(), format!("{what} must be between {lo} and {hi}, got {x}"));
        }
        Ok(x)
    }

    /// The value of whichever of two words `v` is (None when not given); any other word is
    /// an error naming both.
    pub(crate) fn either<T>(
        &self,
        v: Option<&Spanned<String>>,
        what: &str,
        [(a, a_value), (b, b_value)]: [(&str, T); 2],
    ) -> Result<Option<T>, SpecError> {
        let Some(v) = v else { return Ok(None) };
        match v.get_ref().as_str() {
            w if w == a => Ok(Some(a_value)),
            w if w == b => Ok(Some(b_value)),
            other => {
                self.err(v.span(), format!("{what} must be \"{a}\" or \"{b}\", got \"{other}\""))
            }
        }
    }
}

/// What `[workloads]`, `[policies]` and `[iosched]` define, by name.
struct Definitions {
    workloads: BTreeMap<String, Workload>,
    policies: BTreeMap<String, Policy>,
    io_defs: BTreeMap<String, IoSetting>,
}

/// The plan a raw spec describes, and where each of its parts was written.
pub(crate) fn validate(
    path: &str,
    src: &str,
    base: &Path,
    raw: RawSpec,
) -> Result<(Plan, Locations), SpecError> {
    let cx = Ctx { path, src, base };
    let mut locations = Locations { matrix: raw.matrix.span(), ..Locations::default() };
    let mut plan = header(&cx, &raw, &mut locations)?;
    let defs = definitions(&cx, &raw, plan.seed, &mut locations)?;
    let fixed_knobs = crate::knobs::fixed(&cx, &raw.knobs, &mut locations)?;
    let RawSpec { matrix, groups: raw_groups, device: raw_device, .. } = raw;
    let matrix_span = matrix.span();
    let (cell_axes, main_axes, group_axes, knob_axes) = matrix.into_inner().split();
    let swept_knobs = crate::knobs::swept(&cx, &knob_axes, &fixed_knobs, &mut locations)?;
    let mut ck = Check {
        cx: &cx,
        locs: &mut locations,
        workloads: &defs.workloads,
        policies: &defs.policies,
        io_defs: &defs.io_defs,
    };
    let cell_swept = groups::sweep(&mut ck, "", &cell_axes.given(), Use::Axis)?;
    let (group_defs, swept) =
        groups::groups(&mut ck, &raw_groups, main_axes, group_axes, &matrix_span)?;
    let m = matrix::Matrix { cell_swept, defs: group_defs, swept, span: matrix_span.clone() };
    let cells = matrix::cells(&ck, &m, &swept_knobs)?;
    let device =
        device::plan_device(&cx, raw_device.as_ref(), &cells, &defs.workloads, &mut locations)?;
    plan.cells = cells;
    plan.device = device;
    plan.knobs = fixed_knobs;
    if let Some(why) = crate::bounds::too_many_steps(&plan) {
        let at = raw
            .repetitions
            .as_ref()
            .map(|r| r.span())
            .or(raw.warmup.as_ref().map(|w| w.span()))
            .unwrap_or(matrix_span);
        return cx.err(at, why);
    }
    Ok((plan, locations))
}

/// The plan's run-wide settings, checked in the order a reader meets them; its cells,
/// device and knobs come after.
fn header(cx: &Ctx, raw: &RawSpec, locs: &mut Locations) -> Result<Plan, SpecError> {
    let name = raw.name.get_ref().trim().to_string();
    if name.is_empty() {
        return cx.err(raw.name.span(), "name must not be empty");
    }
    let (repetitions, adaptive) = repetitions::repetitions(cx, raw.repetitions.as_ref())?;
    let warmup = match &raw.warmup {
        Some(r) => cx.int_in(r, 0, 1000, "warmup")? as u32,
        None => 0,
    };
    let orders = [("sequential", Order::Sequential), ("random", Order::Random)];
    let order = cx.either(raw.order.as_ref(), "order", orders)?.unwrap_or(Order::Sequential);
    let seed = match &raw.seed {
        Some(s) => cx.int_in(s, 0, i64::MAX, "seed")? as u64,
        None => 0x05ee_d1ab,
    };
    let timeout = match &raw.timeout_s {
        Some(t) => crate::bounds::watchdog(*t.get_ref(), "timeout_s")
            .or_else(|e| cx.err(t.span(), e.to_string()))?,
        None => Duration::from_secs_f64(DEFAULT_TIMEOUT_S),
    };
    let dir = match &raw.dir {
        Some(d) => Some(path_value(cx, d, PathKey::Dir, locs)?),
        None => None,
    };
    let cpu_dma_latency = dma::dma_latency(cx, raw.cpu_dma_latency.as_ref(), locs)?;
    let trace = trace::setting(cx, raw)?;
    Ok(Plan {
        name,
        description: raw.description.clone(),
        source_path: cx.path.to_string(),
        repetitions,
        adaptive,
        warmup,
        order,
        seed,
        timeout,
        dir,
        scale: 1.0,
        device: None,
        cells: Vec::new(),
        cpu_dma_latency,
        trace,
        knobs: Default::default(),
        allow_rt_unthrottled: raw.allow_rt_unthrottled.as_ref().is_some_and(|a| *a.get_ref()),
    })
}

/// The named definitions: workloads, policies and I/O schedulers.
fn definitions(
    cx: &Ctx,
    raw: &RawSpec,
    seed: u64,
    locs: &mut Locations,
) -> Result<Definitions, SpecError> {
    let mut workloads = BTreeMap::new();
    for (k, v) in &raw.workloads {
        check_name(cx, k)?;
        let w = workload::workload(cx, v.get_ref(), seed, locs)?;
        if w.periodic().is_some() {
            let at = v.get_ref().duration_s.as_ref().map_or(k.span(), |d| d.span());
            locs.durations.push((k.get_ref().clone(), at));
        }
        workloads.insert(k.get_ref().clone(), w);
    }
    // A periodic set's CPU is checked against the machine like any CPU list.
    for v in raw.workloads.values() {
        if let Some(c) = &v.get_ref().cpu {
            locs.cpus.push((vec![*c.get_ref() as u32], c.span()));
        }
        if let Some(c) = &v.get_ref().cpus {
            cpu_list(cx, c, locs)?;
        }
    }
    let mut policies = BTreeMap::new();
    for (k, v) in &raw.policies {
        check_name(cx, k)?;
        policies.insert(k.get_ref().clone(), policy::policy(cx, v.get_ref(), locs)?);
        locs.policies.insert(k.get_ref().clone(), k.span());
    }

    let mut io_defs: BTreeMap<String, IoSetting> = BTreeMap::new();
    for (k, v) in &raw.iosched {
        check_name(cx, k)?;
        io_defs.insert(k.get_ref().clone(), iosched::iosched_def(cx, k.get_ref(), v.get_ref())?);
    }
    Ok(Definitions { workloads, policies, io_defs })
}

pub(crate) fn cpu_list(
    cx: &Ctx,
    v: &Spanned<toml::Value>,
    locs: &mut Locations,
) -> Result<Vec<u32>, SpecError> {
    let cpus = match v.get_ref() {
        toml::Value::String(s) => {
            schedlab_plan::cpulist::parse(s).or_else(|e| cx.err(v.span(), e))?
        }
        toml::Value::Array(a) => {
            let mut out = Vec::new();
            for x in a {
                match x.as_integer() {
                    Some(i) if (0..4096).contains(&i) => out.push(i as u32),
                    _ => return cx.err(v.span(), format!("{x} is not a CPU number")),
                }
            }
            if out.is_empty() {
                return cx.err(v.span(), "empty CPU list");
            }
            out.sort_unstable();
            out.dedup();
            out
        }
        other => {
            return cx.err(
                v.span(),
                format!("expected a CPU list like \"0-1,3\" or [0, 1], got {other}"),
            )
        }
    };
    locs.cpus.push((cpus.clone(), v.span()));
    Ok(cpus)
}

fn check_name(cx: &Ctx, k: &Spanned<String>) -> Result<(), SpecError> {
    let ok = !k.get_ref().is_empty()
        && k.get_ref().chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !ok {
        return cx.err(
            k.span(),
            format!("name \"{}\" may only use letters, digits, '-' and '_'", k.get_ref()),
        );
    }
    Ok(())
}

/// A path-valued key: not empty, no NUL byte, resolved against the spec's directory and
/// recorded for the filesystem check.
fn path_value(
    cx: &Ctx,
    v: &Spanned<String>,
    key: PathKey,
    locs: &mut Locations,
) -> Result<PathBuf, SpecError> {
    let written = v.get_ref();
    if written.is_empty() {
        return cx.err(v.span(), format!("{} must not be empty", key.name()));
    }
    if written.contains('\0') {
        return cx.err(v.span(), format!("{} may not contain NUL bytes", key.name()));
    }
    let path = crate::paths::resolve(cx.base, written);
    locs.paths.push(PathUse { key, path: path.clone(), span: v.span() });
    Ok(path)
}
