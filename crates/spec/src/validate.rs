//! Raw spec -> Plan: defaults, ranges, name resolution, the matrix product.

use crate::axes::{self, CellDef, Check, SpecAxis, Use};
use crate::error::SpecError;
use crate::paths::{PathKey, PathUse};
use crate::raw::*;
use schedlab_plan::axis::{AxisValue, AXES, DEFAULT_RT_PRIORITY, MAIN};
use schedlab_plan::*;
use serde_spanned::Spanned;
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[cfg(test)]
mod allowed_tests;
mod disturb;
mod dma;
mod repetitions;

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

const DEFAULT_PI_ITERATIONS: i64 = 100_000_000;
const DEFAULT_MIXED_ITERATIONS: i64 = 50_000_000;
const DEFAULT_WRITE_EVERY: i64 = 100_000;
const DEFAULT_TRANSFER: i64 = 102_400;
const DEFAULT_BLOCK: i64 = 1024;
const DEFAULT_INPUT: i64 = 1 << 20;
/// The seed computed about 722,000 hashes in 5 s on its machine.
const DEFAULT_HASHES: i64 = 722_000;
const DEFAULT_TIMEOUT_S: f64 = 1800.0;
/// One 100 MiB file, one thread, 64 KiB per call, through the page cache.
const DEFAULT_PAR_IO: ParIo = ParIo {
    files: 1,
    file_bytes: 100 << 20,
    threads: 1,
    buffer_bytes: 64 << 10,
    mode: IoMode::Buffered,
};
/// The kernel refuses SCHED_DEADLINE runtimes below 1024 ns.
const MIN_DL_RUNTIME_NS: u64 = 1024;

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
}

pub(crate) fn validate(
    path: &str,
    src: &str,
    base: &Path,
    raw: RawSpec,
) -> Result<(Plan, Locations), SpecError> {
    let cx = Ctx { path, src, base };
    let name = raw.name.get_ref().trim().to_string();
    if name.is_empty() {
        return cx.err(raw.name.span(), "name must not be empty");
    }
    let (repetitions, adaptive) = repetitions::repetitions(&cx, raw.repetitions.as_ref())?;
    let warmup = match &raw.warmup {
        Some(r) => cx.int_in(r, 0, 1000, "warmup")? as u32,
        None => 0,
    };
    let order = match &raw.order {
        None => Order::Sequential,
        Some(o) => match o.get_ref().as_str() {
            "sequential" => Order::Sequential,
            "random" => Order::Random,
            other => {
                return cx.err(
                    o.span(),
                    format!("order must be \"sequential\" or \"random\", got \"{other}\""),
                )
            }
        },
    };
    let seed = match &raw.seed {
        Some(s) => cx.int_in(s, 0, i64::MAX, "seed")? as u64,
        None => 0x05ee_d1ab,
    };
    let timeout = match &raw.timeout_s {
        Some(t) => crate::bounds::watchdog(*t.get_ref(), "timeout_s")
            .or_else(|e| cx.err(t.span(), e.to_string()))?,
        None => Duration::from_secs_f64(DEFAULT_TIMEOUT_S),
    };
    let mut locations = Locations { matrix: raw.matrix.span(), ..Locations::default() };
    let dir = match &raw.dir {
        Some(d) => Some(path_value(&cx, d, PathKey::Dir, &mut locations)?),
        None => None,
    };
    let cpu_dma_latency = dma::dma_latency(&cx, raw.cpu_dma_latency.as_ref(), &mut locations)?;
    let top = trace_value(&cx, raw.trace.as_ref())?;
    let mut each = Vec::new();
    for (k, w) in &raw.workloads {
        if let Some(m) = trace_value(&cx, w.get_ref().trace.as_ref())? {
            each.push((k.get_ref().clone(), m));
        }
    }
    let modes = || top.iter().chain(each.iter().map(|(_, m)| m));
    let trace = TraceSetting {
        all: top.is_some(),
        workloads: each.iter().map(|(k, _)| k.clone()).collect(),
        buffer_kb: match &raw.trace_buffer_kb {
            Some(b) => Some(cx.int_in(
                b,
                (*TRACE_BUFFER_KB.start()).into(),
                (*TRACE_BUFFER_KB.end()).into(),
                "trace_buffer_kb",
            )? as u32),
            None => None,
        },
        // The run's mode: the timeline as soon as any cell asks for it; only those cells
        // capture it unless every cell does.
        mode: if modes().any(|m| *m == TraceMode::TimelineAndBpf) {
            TraceMode::TimelineAndBpf
        } else {
            TraceMode::Bpf
        },
        timeline: if top == Some(TraceMode::TimelineAndBpf) {
            Vec::new()
        } else {
            each.iter()
                .filter(|(_, m)| *m == TraceMode::TimelineAndBpf)
                .map(|(k, _)| k.clone())
                .collect()
        },
    };
    // Nothing traced: no mode (a plan as before the BPF observer).
    let trace = if trace.all || !trace.workloads.is_empty() {
        trace
    } else {
        TraceSetting { mode: TraceMode::default(), ..trace }
    };

    let mut workloads = BTreeMap::new();
    for (k, v) in &raw.workloads {
        check_name(&cx, k)?;
        let w = workload(&cx, v.get_ref(), seed, &mut locations)?;
        if w.periodic().is_some() {
            let at = v.get_ref().duration_s.as_ref().map_or(k.span(), |d| d.span());
            locations.durations.push((k.get_ref().clone(), at));
        }
        workloads.insert(k.get_ref().clone(), w);
    }
    // A periodic set's CPU is checked against the machine like any CPU list.
    for v in raw.workloads.values() {
        if let Some(c) = &v.get_ref().cpu {
            locations.cpus.push((vec![*c.get_ref() as u32], c.span()));
        }
        if let Some(c) = &v.get_ref().cpus {
            cpu_list(&cx, c, &mut locations)?;
        }
    }
    let mut policies = BTreeMap::new();
    for (k, v) in &raw.policies {
        check_name(&cx, k)?;
        policies.insert(k.get_ref().clone(), policy(&cx, v.get_ref(), &mut locations)?);
        locations.policies.insert(k.get_ref().clone(), k.span());
    }

    let mut io_defs: BTreeMap<String, IoSetting> = BTreeMap::new();
    for (k, v) in &raw.iosched {
        check_name(&cx, k)?;
        io_defs.insert(k.get_ref().clone(), iosched_def(&cx, k.get_ref(), v.get_ref())?);
    }

    let fixed_knobs = crate::knobs::fixed(&cx, &raw.knobs, &mut locations)?;
    let RawSpec { matrix, groups: raw_groups, device: raw_device, .. } = raw;
    let matrix_span = matrix.span();
    let (cell_axes, main_axes, mut group_axes, knob_axes) = matrix.into_inner().split();
    let swept_knobs = crate::knobs::swept(&cx, &knob_axes, &fixed_knobs, &mut locations)?;
    let mut ck = Check {
        cx: &cx,
        locs: &mut locations,
        workloads: &workloads,
        policies: &policies,
        io_defs: &io_defs,
    };
    let cell_swept = sweep(&mut ck, "", &cell_axes.given(), Use::Axis)?;

    // Group definitions: fixed settings, to which the axes then apply.
    let mut defs: Vec<(String, GroupDef)> = Vec::new();
    let main_defined = raw_groups.keys().any(|k| k.get_ref() == MAIN);
    if main_axes.workload.is_some() && !main_defined {
        defs.push((MAIN.into(), GroupDef::default()));
    }
    for (k, g) in &raw_groups {
        check_name(&cx, k)?;
        let given = g.get_ref().given();
        defs.push((k.get_ref().clone(), group_def(&mut ck, g.get_ref(), &given)?));
        if let Some(span) = first_cgroup(given.iter().map(|(key, v)| (*key, v.span()))) {
            ck.locs.cgroups.push((k.get_ref().clone(), span));
        }
    }
    if defs.is_empty() {
        return cx.err(
            matrix_span,
            "the matrix needs `workload = [...]` (or [groups.NAME] definitions)",
        );
    }
    // main first, then the other groups in name order
    defs.sort_by_key(|(n, _)| (n != MAIN, n.clone()));
    let mut axes_of: BTreeMap<String, Spanned<RawGroupAxes>> = BTreeMap::new();
    axes_of.insert(MAIN.into(), Spanned::new(0..0, main_axes));
    for (k, a) in std::mem::take(&mut group_axes) {
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

    // Every axis of every group, resolved, in a fixed order.
    let mut swept: Vec<Swept> = Vec::new();
    for (gname, _) in &defs {
        if let Some(a) = axes_of.get(gname) {
            let given = a.get_ref().given();
            if let Some(span) = first_cgroup(given.iter().map(|(key, l)| (*key, l.span.clone()))) {
                ck.locs.cgroups.push((gname.clone(), span));
            }
            swept.extend(sweep(
                &mut ck,
                gname,
                &given,
                if gname == MAIN { Use::MainAxis } else { Use::Axis },
            )?);
        }
    }
    if let Some(main) = axes_of.get(MAIN) {
        if defs.iter().all(|(n, _)| n != MAIN) && !main.get_ref().given().is_empty() {
            return cx
                .err(matrix_span, "top-level matrix axes describe the group \"main\", which needs `workload = [...]` or [groups.main]");
        }
    }

    let mut cells: Vec<Cell> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    // Cell axes vary slowest: a run's cells of one I/O scheduler are adjacent.
    let counts: Vec<usize> = cell_swept.iter().chain(&swept).map(|a| a.values.len()).collect();
    let total: usize = counts.iter().product();
    if total > 100_000 {
        return cx.err(matrix_span, format!("the matrix has {total} cells; at most 100000"));
    }
    for combo in 0..total {
        // Mixed-radix decomposition: the last axis varies fastest.
        let mut picks = vec![0usize; counts.len()];
        let mut rest = combo;
        for i in (0..counts.len()).rev() {
            picks[i] = rest % counts[i];
            rest /= counts[i];
        }
        let (cell_picks, group_picks) = picks.split_at(cell_swept.len());
        let mut cell = CellDef::default();
        let mut cell_tags = Vec::new();
        for (a, &pick) in cell_swept.iter().zip(cell_picks) {
            let v = &a.values[pick];
            a.def.apply_cell(&mut cell, v.clone());
            cell_tags.push((a.def.axis, v.label()));
        }
        let mut groups = Vec::new();
        let mut key_parts: Vec<String> = Vec::new();
        for (gname, def) in &defs {
            let mut g = def.clone();
            let mut tags = Vec::new();
            for (a, &pick) in swept.iter().zip(group_picks).filter(|(a, _)| &a.group == gname) {
                let v = &a.values[pick];
                a.def.apply_group(&mut g, v.clone());
                tags.push((a.def.axis, v.label()));
            }
            let group = g.resolve(&cx, gname, &workloads, &policies, matrix_span.clone())?;
            key_parts.push(axis::group_key(gname, group.as_ref(), &tags));
            if let Some(group) = group {
                groups.push(group);
            }
        }
        if groups.iter().all(|g| g.background) {
            continue; // a cell needs something to measure (e.g. main.processes = 0 with only background left)
        }
        groups.sort_by_key(|g| g.background);
        let key = axis::cell_key(key_parts, &cell_tags);
        if let Some(scx) = cell.cpu_scheduler.as_ref().and_then(CpuScheduler::scx) {
            let span = ck
                .locs
                .cpu_schedulers
                .iter()
                .find(|(l, _)| *l == scx.label())
                .map_or(matrix_span.clone(), |(_, s)| s.clone());
            let own = groups.iter().find_map(|g| {
                g.workload.periodic().filter(|p| p.scheduler.sched_ext()).map(|p| (g, p))
            });
            if let Some((g, p)) = own {
                return cx.err(
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
            if let Some(why) = scx_mix(&groups) {
                return cx.err(
                    span,
                    format!(
                        "cell {key}: {why}, which sched_ext does not schedule (it takes only SCHED_OTHER, BATCH and IDLE tasks; real-time and deadline tasks keep their classes above it): the cell would not compare {} with anything; give such groups a fair policy or use eevdf alone for them",
                        scx.name()
                    ),
                );
            }
        }
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
        return cx.err(matrix_span, "the matrix produces no cell with a measured group");
    }
    let mut cells = with_live_sets(&cx, cells, &matrix_span)?;
    // Knob axes vary slowest of all: a run changes the kernel's settings as seldom as it can.
    let combos = crate::knobs::combos(&swept_knobs);
    if combos.len() * cells.len() > 100_000 {
        return cx.err(
            matrix_span,
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
    let needs_device = cells.iter().any(|c| c.io.is_some())
        || cells.iter().flat_map(|c| &c.groups).any(|g| g.workload.is_io());
    let device = match &raw_device {
        Some(d) => {
            locations.device = Some(d.span());
            Some(device(&cx, d.get_ref(), &mut locations)?)
        }
        None if needs_device => {
            // The loop device exists for the first I/O workload: errors about it point there.
            let is_io = |n: &String| {
                workloads.get(n).cloned().or_else(|| builtin_workload(n)).is_some_and(|w| w.is_io())
            };
            locations.device =
                locations.workloads.iter().find(|(n, _)| is_io(n)).map(|(_, s)| s.clone());
            Some(DeviceSpec {
                target: DeviceTarget::Loop { size_mib: None, fs: "ext4".into(), direct_io: false },
                queue: QueueTarget::Device,
                confirm_device: None,
                drop_caches: true,
            })
        }
        None => None,
    };
    let plan = Plan {
        name,
        description: raw.description.clone(),
        source_path: path.to_string(),
        repetitions,
        adaptive,
        warmup,
        order,
        seed,
        timeout,
        dir,
        scale: 1.0,
        device,
        cells,
        cpu_dma_latency,
        trace,
        knobs: fixed_knobs,
        allow_rt_unthrottled: raw.allow_rt_unthrottled.as_ref().is_some_and(|a| *a.get_ref()),
    };
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

/// Why a cell's groups do not run under sched_ext: the first real-time or deadline group,
/// `cells` with, after each cell of a batch that `run` measures more of than its set 0
/// (`generate = { sets = N, live = k }`), a cell for each of its live sets 1 to k - 1, keyed
/// `KEY/set=i`, its tasks set i's; indices renumbered in order.
fn with_live_sets(
    cx: &Ctx,
    cells: Vec<Cell>,
    matrix_span: &std::ops::Range<usize>,
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

/// The values of one axis of one group (or of the cell: `group` empty), checked.
struct Swept {
    group: String,
    def: &'static SpecAxis,
    values: Vec<AxisValue>,
}

/// The axes written for one group (or the cell), checked in [`AXES`] order: the order cells
/// are numbered in and other groups' keys list them in.
fn sweep(
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
}

impl GroupDef {
    /// The group for one cell, or None if it has 0 processes there.
    fn resolve(
        &self,
        cx: &Ctx,
        gname: &str,
        workloads: &BTreeMap<String, Workload>,
        policies: &BTreeMap<String, Policy>,
        at: Range<usize>,
    ) -> Result<Option<Group>, SpecError> {
        let processes = self.processes.unwrap_or(1);
        if processes == 0 {
            return Ok(None);
        }
        let Some(wname) = &self.workload else {
            return cx.err(at, format!("group \"{gname}\" has no workload: set `workload` in [groups.{gname}] or as an axis"));
        };
        let workload = workloads
            .get(wname)
            .cloned()
            .or_else(|| builtin_workload(wname))
            .expect("checked when the name was read");
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

pub(crate) fn scheduler_name(cx: &Ctx, v: &Spanned<String>) -> Result<String, SpecError> {
    let n = v.get_ref();
    if n.is_empty()
        || !n.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
    {
        return cx.err(
            v.span(),
            format!("\"{n}\" is not an I/O scheduler name (e.g. none, mq-deadline, kyber, bfq)"),
        );
    }
    Ok(n.clone())
}

fn iosched_def(cx: &Ctx, name: &str, r: &RawIosched) -> Result<IoSetting, SpecError> {
    let scheduler = scheduler_name(cx, &r.scheduler)?;
    let known = SCHEDULER_TUNABLES.iter().find(|(s, _)| *s == scheduler).map(|(_, t)| *t);
    let mut tunables = Vec::new();
    for (k, v) in &r.tunables {
        let key = k.get_ref();
        let value = match v.get_ref() {
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Boolean(b) => (*b as u8).to_string(),
            toml::Value::String(s)
                if !s.is_empty()
                    && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') =>
            {
                s.clone()
            }
            other => {
                return cx.err(
                    v.span(),
                    format!(
                    "tunable {key}: expected an integer, a boolean or a plain word, got {other}"
                ),
                )
            }
        };
        let ok_queue = QUEUE_TUNABLES.contains(&key.as_str());
        match known {
            _ if ok_queue => {}
            Some(list) if !list.contains(&key.as_str()) => {
                let mut all: Vec<&str> = list.to_vec();
                all.extend(QUEUE_TUNABLES);
                return cx.err(
                    k.span(),
                    format!(
                        "scheduler {scheduler} has no tunable \"{key}\"; it has: {}",
                        all.join(", ")
                    ),
                );
            }
            _ if !key.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                || key.is_empty() =>
            {
                return cx.err(k.span(), format!("\"{key}\" is not a tunable name"));
            }
            _ => {}
        }
        tunables.push((key.clone(), value));
    }
    Ok(IoSetting { name: name.to_string(), scheduler, tunables })
}

fn device(cx: &Ctx, d: &RawDevice, locs: &mut Locations) -> Result<DeviceSpec, SpecError> {
    let queue = match &d.queue {
        None => QueueTarget::Device,
        Some(q) => match q.get_ref().as_str() {
            "device" => QueueTarget::Device,
            "backing" => QueueTarget::Backing,
            other => {
                return cx.err(
                    q.span(),
                    format!("queue must be \"device\" or \"backing\", got \"{other}\""),
                )
            }
        },
    };
    let target = match &d.path {
        Some(p) => {
            for (key, span) in [
                ("size_mib", d.size_mib.as_ref().map(|x| x.span())),
                ("fs", d.fs.as_ref().map(|x| x.span())),
                ("direct_io", d.direct_io.as_ref().map(|x| x.span())),
            ] {
                if let Some(span) = span {
                    return cx.err(
                        span,
                        format!(
                            "`{key}` applies only to the loop device schedlab creates (no `path`)"
                        ),
                    );
                }
            }
            if queue == QueueTarget::Backing {
                return cx.err(
                    d.queue.as_ref().unwrap().span(),
                    "queue = \"backing\" applies only to a loop device (no `path`)",
                );
            }
            locs.device_path = Some(p.span());
            let path = path_value(cx, p, PathKey::Device, locs)?;
            DeviceTarget::Dir { path: path.to_string_lossy().into_owned() }
        }
        None => {
            let size_mib = match &d.size_mib {
                Some(s) => {
                    locs.device_size = Some(s.span());
                    Some(cx.int_in(s, 16, 1 << 24, "size_mib")? as u64)
                }
                None => None,
            };
            let fs = match &d.fs {
                None => "ext4".to_string(),
                Some(f) if ["ext4", "xfs", "btrfs"].contains(&f.get_ref().as_str()) => {
                    f.get_ref().clone()
                }
                Some(f) => {
                    return cx.err(
                        f.span(),
                        format!("fs must be ext4, xfs or btrfs, got \"{}\"", f.get_ref()),
                    )
                }
            };
            DeviceTarget::Loop {
                size_mib,
                fs,
                direct_io: d.direct_io.as_ref().is_some_and(|b| *b.get_ref()),
            }
        }
    };
    let confirm_device = match &d.confirm_device {
        Some(c) if c.get_ref().is_empty() || c.get_ref().contains('/') => {
            return cx
                .err(c.span(), "confirm_device is a device name as in /sys/block, e.g. \"sdb\"")
        }
        Some(c) => Some(c.get_ref().clone()),
        None => None,
    };
    Ok(DeviceSpec {
        target,
        queue,
        confirm_device,
        drop_caches: d.drop_caches.as_ref().is_none_or(|b| *b.get_ref()),
    })
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

/// A workload name must be defined under [workloads] or be a built-in one.
pub(crate) fn check_workload_name(
    cx: &Ctx,
    w: &Spanned<String>,
    workloads: &BTreeMap<String, Workload>,
) -> Result<(), SpecError> {
    let n = w.get_ref();
    if workloads.contains_key(n) || builtin_workload(n).is_some() {
        return Ok(());
    }
    let known: Vec<&str> = workloads
        .keys()
        .map(String::as_str)
        .chain(["pi", "copy", "mixed", "hash", "par_write", "par_read"])
        .chain(disturb::KINDS)
        .collect();
    cx.err(
        w.span(),
        format!(
            "unknown workload \"{n}\"{}; define it under [workloads.{n}] or use one of: {}",
            schedlab_plan::suggest::did_you_mean(n, known.iter().copied()),
            known.join(", ")
        ),
    )
}

fn builtin_workload(name: &str) -> Option<Workload> {
    Some(match name {
        "pi" => Workload::Pi { iterations: DEFAULT_PI_ITERATIONS as u64 },
        "copy" => Workload::Copy {
            transfer_bytes: DEFAULT_TRANSFER as u64,
            block_bytes: DEFAULT_BLOCK as u64,
            input_bytes: DEFAULT_INPUT as u64,
        },
        "mixed" => Workload::Mixed {
            iterations: DEFAULT_MIXED_ITERATIONS as u64,
            write_every: DEFAULT_WRITE_EVERY as u64,
        },
        "hash" => Workload::Hash { hashes: DEFAULT_HASHES as u64 },
        "par_write" => Workload::ParWrite(DEFAULT_PAR_IO),
        "par_read" => Workload::ParRead(DEFAULT_PAR_IO),
        _ => return disturb::builtin(name),
    })
}

fn builtin_policy(class: Class) -> Policy {
    Policy {
        class,
        priority: if class.is_rt() { DEFAULT_RT_PRIORITY } else { 0 },
        nice: 0,
        // 5 ms every 100 ms: admits up to 38 workers on 2 CPUs at 95% RT bandwidth.
        deadline: (class == Class::Deadline).then_some(DeadlineParams {
            runtime_ns: 5_000_000,
            deadline_ns: 100_000_000,
            period_ns: 100_000_000,
        }),
        slice_ns: None,
    }
}

/// A workload key, where it was written, and the kinds it belongs to.
type KeyKinds<'a> = (&'a str, Option<Range<usize>>, &'a [&'a str]);

fn workload(
    cx: &Ctx,
    w: &RawWorkload,
    seed: u64,
    locs: &mut Locations,
) -> Result<Workload, SpecError> {
    let kind = w.kind.get_ref().as_str();
    disturb::check_keys(cx, w, kind)?;
    if let Some(p) = crate::periodic_check::workload(cx, w, seed)? {
        return Ok(Workload::Periodic(Box::new(p)));
    }
    let sp = |v: &Option<Spanned<i64>>| v.as_ref().map(|s| s.span());
    // Which keys belong to which kinds: any other key is an error at its own location.
    let io: &[&str] = &["par_write", "par_read"];
    let fields: [KeyKinds; 12] = [
        ("iterations", sp(&w.iterations), &["pi", "mixed"]),
        ("write_every", sp(&w.write_every), &["mixed"]),
        ("transfer_bytes", sp(&w.transfer_bytes), &["copy"]),
        ("block_bytes", sp(&w.block_bytes), &["copy"]),
        ("input_bytes", sp(&w.input_bytes), &["copy"]),
        ("hashes", sp(&w.hashes), &["hash"]),
        ("argv", w.argv.as_ref().map(|a| a.span()), &["command"]),
        ("files", sp(&w.files), io),
        ("file_bytes", sp(&w.file_bytes), &["par_write", "par_read", "io_interrupts"]),
        ("threads", sp(&w.threads), io),
        ("buffer_bytes", sp(&w.buffer_bytes), io),
        ("mode", w.mode.as_ref().map(|m| m.span()), io),
    ];
    if !["pi", "mixed", "copy", "hash", "command", "par_write", "par_read"].contains(&kind)
        && !disturb::KINDS.contains(&kind)
    {
        return cx.err(
            w.kind.span(),
            format!("unknown workload kind \"{kind}\"; expected one of: pi, copy, mixed, hash, command, par_write, par_read, periodic, udp_flood, io_interrupts"),
        );
    }
    for (name, span, kinds) in fields {
        if let Some(span) = span {
            if !kinds.contains(&kind) {
                return cx.err(
                    span,
                    format!("`{name}` does not apply to a workload of kind \"{kind}\""),
                );
            }
        }
    }
    let pos = |v: &Option<Spanned<i64>>, def: i64, what: &str| -> Result<u64, SpecError> {
        match v {
            Some(s) => cx.int_in(s, 1, i64::MAX, what).map(|x| x as u64),
            None => Ok(def as u64),
        }
    };
    match kind {
        "pi" => Ok(Workload::Pi {
            iterations: pos(&w.iterations, DEFAULT_PI_ITERATIONS, "iterations")?,
        }),
        "hash" => Ok(Workload::Hash { hashes: pos(&w.hashes, DEFAULT_HASHES, "hashes")? }),
        "mixed" => {
            let iterations = pos(&w.iterations, DEFAULT_MIXED_ITERATIONS, "iterations")?;
            let write_every = pos(&w.write_every, DEFAULT_WRITE_EVERY, "write_every")?;
            if write_every > iterations {
                return cx.err(
                    w.write_every.as_ref().map(|s| s.span()).unwrap_or(w.kind.span()),
                    format!("write_every ({write_every}) is larger than iterations ({iterations}): no write would happen"),
                );
            }
            Ok(Workload::Mixed { iterations, write_every })
        }
        "copy" => {
            let transfer_bytes = pos(&w.transfer_bytes, DEFAULT_TRANSFER, "transfer_bytes")?;
            let block_bytes = pos(&w.block_bytes, DEFAULT_BLOCK, "block_bytes")?;
            let input_bytes = pos(&w.input_bytes, DEFAULT_INPUT, "input_bytes")?;
            if block_bytes > 64 << 20 {
                return cx.err(
                    w.block_bytes.as_ref().unwrap().span(),
                    "block_bytes must be at most 64 MiB",
                );
            }
            if input_bytes < block_bytes {
                return cx.err(
                    w.input_bytes.as_ref().map(|s| s.span()).unwrap_or(w.kind.span()),
                    format!(
                        "input_bytes ({input_bytes}) must be at least block_bytes ({block_bytes})"
                    ),
                );
            }
            if input_bytes > 1 << 34 {
                return cx.err(
                    w.input_bytes.as_ref().unwrap().span(),
                    "input_bytes must be at most 16 GiB",
                );
            }
            Ok(Workload::Copy { transfer_bytes, block_bytes, input_bytes })
        }
        "udp_flood" | "io_interrupts" => disturb::workload(cx, w, kind),
        "par_write" | "par_read" => {
            let d = DEFAULT_PAR_IO;
            let files = pos(&w.files, d.files as i64, "files")?;
            let file_bytes = pos(&w.file_bytes, d.file_bytes as i64, "file_bytes")?;
            let threads = match &w.threads {
                Some(t) => cx.int_in(t, 1, 4096, "threads")? as u32,
                None => d.threads,
            };
            let buffer_bytes = match &w.buffer_bytes {
                Some(b) => cx.int_in(b, 1, 64 << 20, "buffer_bytes")? as u64,
                None => d.buffer_bytes,
            };
            if files > 1_000_000 {
                return cx.err(w.files.as_ref().unwrap().span(), "files must be at most 1000000");
            }
            let mode = match &w.mode {
                None => d.mode,
                Some(m) => match IoMode::ALL.into_iter().find(|x| x.name() == m.get_ref()) {
                    Some(x) => x,
                    None => {
                        return cx.err(
                            m.span(),
                            format!(
                                "mode must be buffered, sync, direct or fsync, got \"{}\"",
                                m.get_ref()
                            ),
                        )
                    }
                },
            };
            let at =
                |v: &Option<Spanned<i64>>| v.as_ref().map(|s| s.span()).unwrap_or(w.kind.span());
            if kind == "par_read" && matches!(mode, IoMode::Sync | IoMode::Fsync) {
                return cx.err(
                    w.mode.as_ref().unwrap().span(),
                    "a par_read reads: mode must be buffered or direct",
                );
            }
            if mode == IoMode::Direct {
                if buffer_bytes % DIRECT_ALIGN != 0 {
                    return cx.err(at(&w.buffer_bytes), format!("mode = \"direct\" needs buffer_bytes to be a multiple of {DIRECT_ALIGN}"));
                }
                if file_bytes % DIRECT_ALIGN != 0 {
                    return cx.err(
                        at(&w.file_bytes),
                        format!(
                            "mode = \"direct\" needs file_bytes to be a multiple of {DIRECT_ALIGN}"
                        ),
                    );
                }
            }
            let p = ParIo { files, file_bytes, threads, buffer_bytes, mode };
            Ok(if kind == "par_write" { Workload::ParWrite(p) } else { Workload::ParRead(p) })
        }
        _ => {
            let Some(argv) = &w.argv else {
                return cx.err(
                    w.kind.span(),
                    "a command workload needs argv = [\"program\", \"arg\", ...]",
                );
            };
            if argv.get_ref().is_empty() || argv.get_ref()[0].get_ref().is_empty() {
                return cx.err(argv.span(), "argv must name a program");
            }
            for a in argv.get_ref() {
                if a.get_ref().contains('\0') {
                    return cx.err(a.span(), "arguments may not contain NUL bytes");
                }
            }
            let mut args: Vec<String> =
                argv.get_ref().iter().map(|a| a.get_ref().clone()).collect();
            let program = &argv.get_ref()[0];
            if crate::paths::is_program_path(program.get_ref()) {
                let path = crate::paths::resolve(cx.base, program.get_ref());
                // A per-worker program ("./w{index}") is known only at run time.
                if !program.get_ref().contains("{index}") {
                    locs.paths.push(PathUse {
                        key: PathKey::Program,
                        path: path.clone(),
                        span: program.span(),
                    });
                }
                args[0] = path.to_string_lossy().into_owned();
            }
            Ok(Workload::Command { argv: args })
        }
    }
}

fn policy(cx: &Ctx, p: &RawPolicy, locs: &mut Locations) -> Result<Policy, SpecError> {
    let Some(class) = Class::parse(p.class.get_ref()) else {
        return cx.err(
            p.class.span(),
            format!(
                "unknown class \"{}\"; expected one of: other, batch, idle, fifo, rr, deadline",
                p.class.get_ref()
            ),
        );
    };
    let mut pol = builtin_policy(class);
    if let Some(pr) = &p.priority {
        if !class.is_rt() {
            return cx
                .err(pr.span(), format!("priority applies only to fifo and rr; {} tasks have static priority 0 (use nice)", class.name()));
        }
        pol.priority =
            cx.int_in(pr, 1, MAX_WORKER_PRIORITY, "priority (99 is reserved for the engine)")?
                as u32;
    }
    if let Some(n) = &p.nice {
        pol.nice = cx.int_in(n, -20, 19, "nice")? as i32;
        locs.nice.push((*n.get_ref(), n.span()));
    }
    if let Some(sl) = &p.slice_us {
        if !class.is_fair() {
            return cx.err(
                sl.span(),
                format!("slice_us applies only to other and batch (EEVDF's custom slice); {} tasks have none", class.name()),
            );
        }
        pol.slice_ns =
            Some(cx.int_in(sl, MIN_SLICE_US, MAX_SLICE_US, crate::axes::SLICE_WHAT)? as u64 * 1000);
        locs.slices.push(sl.span());
    }
    let dl_fields = [&p.runtime_us, &p.deadline_us, &p.period_us];
    if class != Class::Deadline {
        if let Some(f) = dl_fields.iter().find_map(|f| f.as_ref()) {
            return cx.err(
                f.span(),
                "runtime_us, deadline_us and period_us apply only to class \"deadline\"",
            );
        }
    } else {
        let d = pol.deadline.expect("deadline class has defaults");
        let us = |v: &Option<Spanned<i64>>, def: u64, what: &str| -> Result<u64, SpecError> {
            match v {
                Some(s) => cx.int_in(s, 1, 1 << 40, what).map(|x| x as u64 * 1000),
                None => Ok(def),
            }
        };
        let runtime_ns = us(&p.runtime_us, d.runtime_ns, "runtime_us")?;
        let period_ns = us(&p.period_us, d.period_ns, "period_us")?;
        let deadline_ns = match &p.deadline_us {
            Some(_) => us(&p.deadline_us, period_ns, "deadline_us")?,
            None => period_ns,
        };
        let at = p
            .runtime_us
            .as_ref()
            .or(p.deadline_us.as_ref())
            .or(p.period_us.as_ref())
            .map(|s| s.span())
            .unwrap_or(p.class.span());
        if runtime_ns < MIN_DL_RUNTIME_NS {
            return cx.err(at, "runtime_us must be at least 2 (the kernel's minimum is 1024 ns)");
        }
        if !(runtime_ns <= deadline_ns && deadline_ns <= period_ns) {
            return cx.err(
                at,
                format!(
                    "SCHED_DEADLINE needs runtime <= deadline <= period, got {} <= {} <= {} us",
                    runtime_ns / 1000,
                    deadline_ns / 1000,
                    period_ns / 1000
                ),
            );
        }
        pol.deadline = Some(DeadlineParams { runtime_ns, deadline_ns, period_ns });
    }
    Ok(pol)
}

/// Why this process may not run group `g` (the privilege it lacks, naming the group's policy
/// or group), and where the spec set what needs it: nice below its own and RLIMIT_NICE's
/// floor, SCHED_FIFO/SCHED_RR above RLIMIT_RTPRIO (a dispatched set's dispatcher runs at 98),
/// SCHED_DEADLINE without CAP_SYS_NICE, cgroups it cannot write.
fn group_refused(
    g: &Group,
    locs: &Locations,
    src: &str,
    caps: &Capabilities,
) -> Option<(String, Location)> {
    let p = &g.policy;
    let dispatched = g.workload.periodic().is_some_and(|w| w.scheduler.dispatched());
    let rt_priority = if dispatched { DISPATCHER_PRIORITY } else { p.priority };
    let policy_at = locs.policies.get(&g.policy_name);
    // What asks for real-time: the group's class, or its periodic set's dispatcher.
    let rt_what = if dispatched {
        format!("the {} dispatcher's SCHED_FIFO", g.policy_name)
    } else {
        format!("SCHED_{}", p.class.name().to_uppercase())
    };
    let problem = match p.class {
        Class::Deadline if !caps.sys_nice => {
            Some(("SCHED_DEADLINE needs CAP_SYS_NICE (run as root); RLIMIT_RTPRIO does not allow it".to_string(), policy_at))
        }
        Class::Fifo | Class::Rr if !caps.may_rt(rt_priority) => Some((
            format!(
                "{rt_what} priority {rt_priority} needs CAP_SYS_NICE (run as root) or RLIMIT_RTPRIO >= {rt_priority}; this process has neither (RLIMIT_RTPRIO = {})",
                caps.rtprio_limit
            ),
            policy_at,
        )),
        Class::Deadline if caps.deadline_refused.is_some() => {
            Some((caps.deadline_refused.clone().unwrap_or_default(), policy_at))
        }
        Class::Fifo | Class::Rr if caps.rt_refused.is_some() => Some((
            format!("{rt_what}: {}", caps.rt_refused.as_deref().unwrap_or_default()),
            policy_at,
        )),
        _ if !caps.may_nice(p.nice) => Some((
            format!(
                "nice {} is below this process's nice {}: it needs CAP_SYS_NICE (run as root) or RLIMIT_NICE >= {} (it is {})",
                p.nice,
                caps.nice,
                20 - p.nice,
                20 - caps.min_nice
            ),
            // The nice value that set it, if the spec wrote one; else its policy.
            locs.nice.iter().find(|(n, _)| *n == p.nice as i64).map(|(_, s)| s).or(policy_at),
        )),
        _ => None,
    };
    if let Some((msg, at)) = problem {
        let span = at.unwrap_or(&locs.matrix).clone();
        return Some((format!("policy \"{}\": {msg}", g.policy_name), span));
    }
    if let (true, Some(dir)) = (g.cgroup.any(), &caps.cgroup_unwritable) {
        let span = locs
            .cgroups
            .iter()
            .find(|(n, _)| *n == g.name)
            .map(|(_, s)| s.clone())
            .or_else(|| first_cgroup_key(src));
        return Some((
            format!(
                "group \"{}\" sets cgroup controls, which needs write access to {dir} (schedlab creates its cgroups there and moves workers in): run as root, or delegate that cgroup to this user",
                g.name
            ),
            span.unwrap_or_else(|| locs.matrix.clone()),
        ));
    }
    None
}

/// Each cell a group of which this process may not run, with the first such group's
/// [`group_refused`] reason, in plan order.
pub(crate) fn refused_cells(
    plan: &Plan,
    locs: &Locations,
    src: &str,
    caps: &Capabilities,
) -> Vec<(u32, String)> {
    plan.cells
        .iter()
        .filter_map(|c| {
            let why = c.groups.iter().find_map(|g| group_refused(g, locs, src, caps))?;
            Some((c.index, why.0))
        })
        .collect()
}

/// Refuses, naming the missing privilege, what this process may not do: each group's
/// policy and cgroups ([`group_refused`]), custom slices, cpu_dma_latency, dropping caches.
pub(crate) fn check_allowed(
    plan: &Plan,
    locs: &Locations,
    src: &str,
    caps: &Capabilities,
) -> Result<(), SpecError> {
    for g in plan.cells.iter().flat_map(|c| &c.groups) {
        if let Some((msg, span)) = group_refused(g, locs, src, caps) {
            return Err(SpecError::at(&plan.source_path, src, span, msg));
        }
    }
    if let Some(why) = &caps.custom_slice_refused {
        if plan.cells.iter().flat_map(|c| &c.groups).any(|g| g.policy.slice_ns.is_some()) {
            let span = locs.slices.first().unwrap_or(&locs.matrix).clone();
            return Err(SpecError::at(&plan.source_path, src, span, format!("slice_us: {why}")));
        }
    }
    dma::check(plan, locs, src, caps)?;
    // A loop device or an I/O scheduler axis needs root anyway, and the device check says so.
    if let Some(d) = plan
        .device
        .as_ref()
        .filter(|d| matches!(d.target, DeviceTarget::Dir { .. }) && locs.iosched.is_empty())
    {
        if d.drop_caches && !caps.drop_caches {
            return Err(SpecError::at(
                &plan.source_path,
                src,
                locs.device.clone().unwrap_or_else(|| locs.matrix.clone()),
                "[device] drops the page cache before each cell (drop_caches, on by default), which writes /proc/sys/vm/drop_caches: only root may; run as root, or set drop_caches = false",
            ));
        }
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

/// Where the first cgroup control of those written (key, span) is.
fn first_cgroup<'a>(written: impl Iterator<Item = (&'a str, Location)>) -> Option<Location> {
    written
        .filter(|(key, _)| axes::def(key).axis.cgroup)
        .map(|(_, span)| span)
        .min_by_key(|s| s.start)
}

/// The span of the first cgroup control (`cpu_weight`, `cpu_max`, `cpuset`) set in the spec;
/// an axis of weight 0 only (no cgroup) does not count.
fn first_cgroup_key(src: &str) -> Option<Location> {
    let zero = |v: &toml::de::DeValue| match v {
        toml::de::DeValue::Array(a) => a.iter().all(|x| crate::locate::int(x.get_ref()) == Some(0)),
        v => crate::locate::int(v) == Some(0),
    };
    let keys: Vec<&str> = AXES.iter().filter(|a| a.cgroup).map(|a| a.name).collect();
    crate::locate::keys(src, &keys).into_iter().find(|(_, v, _)| !zero(v)).map(|(k, _, _)| k)
}

/// A `trace` value: true (the BPF figures), "timeline" (the timeline too) or false (None).
fn trace_value(cx: &Ctx, v: Option<&Spanned<toml::Value>>) -> Result<Option<TraceMode>, SpecError> {
    let Some(v) = v else { return Ok(None) };
    match v.get_ref() {
        toml::Value::Boolean(false) => Ok(None),
        toml::Value::Boolean(true) => Ok(Some(TraceMode::Bpf)),
        toml::Value::String(s) if s == "timeline" => Ok(Some(TraceMode::TimelineAndBpf)),
        other => cx.err(
            v.span(),
            format!(
                "trace must be true (figures aggregated in the kernel), \"timeline\" (every event captured too) or false, got {other}"
            ),
        ),
    }
}
