//! Raw spec -> Plan: defaults, ranges, name resolution, the matrix product.

use crate::error::SpecError;
use crate::paths::{PathKey, PathUse};
use crate::raw::*;
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
    /// Each group's first cgroup setting (definition or axis), for errors about cgroups.
    pub cgroups: Vec<(String, Location)>,
    /// Every use of a workload name (axes, groups), for errors about what it needs.
    pub workloads: Vec<(String, Location)>,
    /// `cpu_dma_latency`, when the spec sets a value to hold.
    pub dma_latency: Option<Location>,
    /// The `[matrix]` table: where an error with no better place points.
    pub matrix: Location,
}

const DEFAULT_PI_ITERATIONS: i64 = 100_000_000;
const DEFAULT_MIXED_ITERATIONS: i64 = 50_000_000;
const DEFAULT_WRITE_EVERY: i64 = 100_000;
const DEFAULT_TRANSFER: i64 = 102_400;
const DEFAULT_BLOCK: i64 = 1024;
const DEFAULT_INPUT: i64 = 1 << 20;
const DEFAULT_RT_PRIORITY: i64 = 50;
/// The seed computed about 722,000 hashes in 5 s on its machine.
const DEFAULT_HASHES: i64 = 722_000;
const DEFAULT_TIMEOUT_S: f64 = 1800.0;
/// One 100 MiB file, one thread, 64 KiB per call, through the page cache.
const DEFAULT_PAR_IO: ParIo = ParIo { files: 1, file_bytes: 100 << 20, threads: 1, buffer_bytes: 64 << 10, mode: IoMode::Buffered };
const MAX_PROCESSES: i64 = 100_000;
/// The kernel refuses SCHED_DEADLINE runtimes below 1024 ns.
const MIN_DL_RUNTIME_NS: u64 = 1024;

pub(crate) struct Ctx<'a> {
    pub(crate) path: &'a str,
    pub(crate) src: &'a str,
    /// The directory relative paths resolve against.
    pub(crate) base: &'a Path,
}

impl Ctx<'_> {
    pub(crate) fn err<T>(&self, span: Range<usize>, msg: impl Into<String>) -> Result<T, SpecError> {
        Err(SpecError::at(self.path, self.src, span, msg))
    }

    pub(crate) fn int_in(&self, v: &Spanned<i64>, lo: i64, hi: i64, what: &str) -> Result<i64, SpecError> {
        let x = *v.get_ref();
        if x < lo || x > hi {
            return self.err(v.span(), format!("{what} must be between {lo} and {hi}, got {x}"));
        }
        Ok(x)
    }
}

pub(crate) fn validate(path: &str, src: &str, base: &Path, raw: RawSpec) -> Result<(Plan, Locations), SpecError> {
    let cx = Ctx { path, src, base };
    let name = raw.name.get_ref().trim().to_string();
    if name.is_empty() {
        return cx.err(raw.name.span(), "name must not be empty");
    }
    let repetitions = match &raw.repetitions {
        Some(r) => cx.int_in(r, 1, 100_000, "repetitions")? as u32,
        None => 1,
    };
    let warmup = match &raw.warmup {
        Some(r) => cx.int_in(r, 0, 1000, "warmup")? as u32,
        None => 0,
    };
    let order = match &raw.order {
        None => Order::Sequential,
        Some(o) => match o.get_ref().as_str() {
            "sequential" => Order::Sequential,
            "random" => Order::Random,
            other => return cx.err(o.span(), format!("order must be \"sequential\" or \"random\", got \"{other}\"")),
        },
    };
    let seed = match &raw.seed {
        Some(s) => cx.int_in(s, 0, i64::MAX, "seed")? as u64,
        None => 0x05ee_d1ab,
    };
    let timeout = match &raw.timeout_s {
        Some(t) if !(*t.get_ref() > 0.0 && t.get_ref().is_finite()) => {
            return cx.err(t.span(), format!("timeout_s must be a positive number of seconds, got {}", t.get_ref()))
        }
        Some(t) => Duration::from_secs_f64(*t.get_ref()),
        None => Duration::from_secs_f64(DEFAULT_TIMEOUT_S),
    };
    let mut locations = Locations { matrix: raw.matrix.span(), ..Locations::default() };
    let dir = match &raw.dir {
        Some(d) => Some(path_value(&cx, d, PathKey::Dir, &mut locations)?),
        None => None,
    };
    let cpu_dma_latency = dma::dma_latency(&cx, raw.cpu_dma_latency.as_ref(), &mut locations)?;

    let mut workloads = BTreeMap::new();
    for (k, v) in &raw.workloads {
        check_name(&cx, k)?;
        workloads.insert(k.get_ref().clone(), workload(&cx, v.get_ref(), seed, &mut locations)?);
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

    let RawSpec { matrix, groups: raw_groups, device: raw_device, .. } = raw;
    let matrix_span = matrix.span();
    let mut matrix = matrix.into_inner();
    let io_axis = match matrix.iosched.take() {
        None => None,
        Some(list) => Some(iosched_axis(&cx, &list, &io_defs, &mut locations)?),
    };
    let (main_axes, mut group_axes) = matrix.split();

    // Group definitions: fixed settings, to which the axes then apply.
    let mut defs: Vec<(String, GroupDef)> = Vec::new();
    let main_defined = raw_groups.keys().any(|k| k.get_ref() == "main");
    if main_axes.workload.is_some() && !main_defined {
        defs.push(("main".into(), GroupDef::default()));
    }
    for (k, g) in &raw_groups {
        check_name(&cx, k)?;
        if let Some(w) = &g.get_ref().workload {
            check_workload_name(&cx, w, &workloads)?;
            locations.workloads.push((w.get_ref().clone(), w.span()));
        }
        defs.push((k.get_ref().clone(), group_def(&cx, g.get_ref(), &mut locations)?));
        let g = g.get_ref();
        if let Some(span) =
            earliest([g.cpu_weight.as_ref().map(|v| v.span()), g.cpu_max.as_ref().map(|v| v.span()), g.cpuset.as_ref().map(|v| v.span())])
        {
            locations.cgroups.push((k.get_ref().clone(), span));
        }
    }
    if defs.is_empty() {
        return cx.err(matrix_span, "the matrix needs `workload = [...]` (or [groups.NAME] definitions)");
    }
    // main first, then the other groups in name order
    defs.sort_by_key(|(n, _)| (n != "main", n.clone()));
    let mut axes_of: BTreeMap<String, Spanned<RawGroupAxes>> = BTreeMap::new();
    axes_of.insert("main".into(), Spanned::new(0..0, main_axes));
    for (k, a) in std::mem::take(&mut group_axes) {
        if k.get_ref() == "main" && axes_of.get("main").is_some_and(|m| has_any(m.get_ref())) {
            return cx.err(k.span(), "the top-level matrix axes already describe the group \"main\": put these axes there");
        }
        if !defs.iter().any(|(n, _)| n == k.get_ref()) {
            return cx.err(k.span(), format!("matrix.groups.{} names no group; define it under [groups.{}]", k.get_ref(), k.get_ref()));
        }
        axes_of.insert(k.get_ref().clone(), a);
    }

    // Every axis of every group, resolved, in a fixed order.
    let mut axes: Vec<Axis> = Vec::new();
    for (gname, _) in &defs {
        if let Some(a) = axes_of.get(gname) {
            axes.extend(group_axes_list(&cx, gname, a.get_ref(), &workloads, &policies, &mut locations)?);
        }
    }
    if let Some(main) = axes_of.get("main") {
        if defs.iter().all(|(n, _)| n != "main") && has_any(main.get_ref()) {
            return cx
                .err(matrix_span, "top-level matrix axes describe the group \"main\", which needs `workload = [...]` or [groups.main]");
        }
    }

    let mut cells: Vec<Cell> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut counts: Vec<usize> = axes.iter().map(|a| a.values.len()).collect();
    // The cell-level iosched axis varies slowest: a run's cells of one scheduler are adjacent.
    let io_values: Vec<IoSetting> = io_axis.clone().unwrap_or_default();
    counts.insert(0, io_values.len().max(1));
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
        let io = io_values.get(picks.remove(0)).cloned();
        let mut groups = Vec::new();
        let mut key_parts: Vec<String> = Vec::new();
        for (gname, def) in &defs {
            let mut g = def.clone();
            let mut tags: Vec<(Setting, String)> = Vec::new();
            for (ai, a) in axes.iter().enumerate().filter(|(_, a)| &a.group == gname) {
                let v = &a.values[picks[ai]];
                g.set(a.setting, v.value.clone());
                tags.push((a.setting, v.label.clone()));
            }
            let group = g.resolve(&cx, gname, &workloads, &policies, matrix_span.clone())?;
            key_parts.push(group_key(gname, &group, &tags, def));
            if let Some(group) = group {
                groups.push(group);
            }
        }
        if groups.iter().all(|g| g.background) {
            continue; // a cell needs something to measure (e.g. main.processes = 0 with only background left)
        }
        groups.sort_by_key(|g| g.background);
        let mut key = key_parts.into_iter().filter(|k| !k.is_empty()).collect::<Vec<_>>().join("+");
        if let Some(io) = &io {
            key.push_str(&format!("/iosched={}", io.name));
        }
        if seen.insert(key.clone()) {
            cells.push(Cell { index: cells.len() as u32, key, groups, io });
        }
    }
    if cells.is_empty() {
        return cx.err(matrix_span, "the matrix produces no cell with a measured group");
    }
    let needs_device = io_axis.is_some() || cells.iter().flat_map(|c| &c.groups).any(|g| g.workload.is_io());
    let device = match &raw_device {
        Some(d) => {
            locations.device = Some(d.span());
            Some(device(&cx, d.get_ref(), &mut locations)?)
        }
        None if needs_device => {
            // The loop device exists for the first I/O workload: errors about it point there.
            let is_io = |n: &String| workloads.get(n).cloned().or_else(|| builtin_workload(n)).is_some_and(|w| w.is_io());
            locations.device = locations.workloads.iter().find(|(n, _)| is_io(n)).map(|(_, s)| s.clone());
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
        warmup,
        order,
        seed,
        timeout,
        dir,
        scale: 1.0,
        device,
        cells,
        cpu_dma_latency,
    };
    Ok((plan, locations))
}

/// A group setting that an axis can vary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setting {
    Workload,
    Policy,
    Priority,
    Nice,
    Affinity,
    CpuWeight,
    CpuMax,
    Cpuset,
    Processes,
    Scheduler,
    Utilisation,
}

impl Setting {
    fn name(self) -> &'static str {
        match self {
            Setting::Workload => "workload",
            Setting::Policy => "policy",
            Setting::Priority => "priority",
            Setting::Nice => "nice",
            Setting::Affinity => "affinity",
            Setting::CpuWeight => "cpu_weight",
            Setting::CpuMax => "cpu_max",
            Setting::Cpuset => "cpuset",
            Setting::Processes => "processes",
            Setting::Scheduler => "scheduler",
            Setting::Utilisation => "utilisation",
        }
    }
}

/// A resolved axis value.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Name(String),
    Int(i64),
    Affinity(Affinity),
    Max((u64, u64)),
    Cpus(Vec<u32>),
    Float(f64),
}

#[derive(Debug, Clone)]
struct AxisValue {
    value: Value,
    label: String,
}

#[derive(Debug, Clone)]
struct Axis {
    group: String,
    setting: Setting,
    values: Vec<AxisValue>,
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
}

impl GroupDef {
    fn set(&mut self, s: Setting, v: Value) {
        match (s, v) {
            (Setting::Workload, Value::Name(n)) => self.workload = Some(n),
            (Setting::Policy, Value::Name(n)) => self.policy = Some(n),
            (Setting::Priority, Value::Int(i)) => self.priority = Some(i),
            (Setting::Nice, Value::Int(i)) => self.nice = Some(i),
            (Setting::Processes, Value::Int(i)) => self.processes = Some(i),
            // On an axis, 0 means "no weight": the cell's baseline without cgroups.
            (Setting::CpuWeight, Value::Int(i)) => self.cgroup.cpu_weight = (i > 0).then_some(i as u32),
            (Setting::Affinity, Value::Affinity(a)) => self.affinity = Some(a),
            (Setting::CpuMax, Value::Max(m)) => self.cgroup.cpu_max = Some(m),
            (Setting::Cpuset, Value::Cpus(c)) => self.cgroup.cpuset = Some(c),
            (Setting::Scheduler, Value::Name(n)) => self.scheduler = Some(n),
            (Setting::Utilisation, Value::Float(u)) => self.utilisation = Some(u),
            (s, v) => unreachable!("axis {s:?} cannot hold {v:?}"),
        }
    }

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
        let workload = workloads.get(wname).cloned().or_else(|| builtin_workload(wname)).expect("checked when the name was read");
        if let Workload::Periodic(p) = workload {
            return crate::periodic_check::resolve_group(cx, gname, wname, p, self, at).map(Some);
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
        let mut policy = policies.get(&pname).copied().or_else(|| Class::parse(&pname).map(builtin_policy)).expect("checked when read");
        if let Some(p) = self.priority {
            if policy.class.is_rt() {
                policy.priority = p as u32;
            }
        }
        if let Some(n) = self.nice {
            policy.nice = n as i32;
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

fn has_any(a: &RawGroupAxes) -> bool {
    a.workload.is_some()
        || a.processes.is_some()
        || a.policy.is_some()
        || a.priority.is_some()
        || a.nice.is_some()
        || a.affinity.is_some()
        || a.cpu_weight.is_some()
        || a.cpu_max.is_some()
        || a.cpuset.is_some()
        || a.scheduler.is_some()
        || a.utilisation.is_some()
}

/// The key part of one group in one cell. The main group keeps the classic
/// `workload/policy[:prio][/niceN]/nN` shape; other groups show only their varying axes.
fn group_key(gname: &str, g: &Option<Group>, tags: &[(Setting, String)], def: &GroupDef) -> String {
    let tag = |s: Setting| tags.iter().find(|(t, _)| *t == s).map(|(_, l)| l.clone());
    if gname == "main" {
        let Some(g) = g else { return "main.processes=0".into() };
        let mut k = format!("{}/{}", g.workload_name, g.policy_name);
        if g.policy.class.is_rt()
            && g.workload.periodic().is_none()
            && (tag(Setting::Priority).is_some() || g.policy.priority as i64 != DEFAULT_RT_PRIORITY)
        {
            k.push_str(&format!(":{}", g.policy.priority));
        }
        if tag(Setting::Nice).is_some() {
            k.push_str(&format!("/nice{}", g.policy.nice));
        }
        for s in [Setting::Affinity, Setting::CpuWeight, Setting::CpuMax, Setting::Cpuset, Setting::Utilisation] {
            if let Some(l) = tag(s) {
                k.push_str(&format!("/{}={l}", s.name()));
            }
        }
        k.push_str(&format!("/n{}", g.processes));
        return k;
    }
    let _ = def;
    let mut k = gname.to_string();
    for (s, l) in tags {
        // A priority on a non-RT policy has no effect: leave it out so such cells collapse.
        if *s == Setting::Priority && !g.as_ref().is_some_and(|g| g.policy.class.is_rt()) {
            continue;
        }
        k.push_str(&format!(".{}={l}", s.name()));
    }
    k
}

fn group_def(cx: &Ctx, g: &RawGroup, locs: &mut Locations) -> Result<GroupDef, SpecError> {
    let mut d = GroupDef { background: g.background.as_ref().map(|b| *b.get_ref()).unwrap_or(false), ..Default::default() };
    d.workload = g.workload.as_ref().map(|w| w.get_ref().clone());
    if let Some(p) = &g.processes {
        d.processes = Some(cx.int_in(p, 0, MAX_PROCESSES, "processes")?);
    }
    if let Some(p) = &g.policy {
        d.policy = Some(p.get_ref().clone());
        locs.policies.entry(p.get_ref().clone()).or_insert_with(|| p.span());
    }
    if let Some(p) = &g.priority {
        d.priority = Some(cx.int_in(p, 1, MAX_WORKER_PRIORITY, "priority (99 is reserved for the engine)")?);
    }
    if let Some(n) = &g.nice {
        d.nice = Some(cx.int_in(n, -20, 19, "nice")?);
        locs.nice.push((*n.get_ref(), n.span()));
    }
    if let Some(a) = &g.affinity {
        d.affinity = Some(affinity(cx, a, locs)?);
    }
    if let Some(w) = &g.cpu_weight {
        d.cgroup.cpu_weight = Some(cx.int_in(w, 1, 10_000, "cpu_weight (cgroup v2 units; v1 shares = weight x 1024 / 100)")? as u32);
    }
    if let Some(m) = &g.cpu_max {
        d.cgroup.cpu_max = Some(cpu_max(cx, m)?);
    }
    if let Some(c) = &g.cpuset {
        d.cgroup.cpuset = Some(cpu_list(cx, c, locs)?);
    }
    if let Some(sch) = &g.scheduler {
        d.scheduler = Some(crate::periodic_check::scheduler_name(cx, sch)?);
        locs.policies.entry(sch.get_ref().clone()).or_insert_with(|| sch.span());
    }
    if let Some(u) = &g.utilisation {
        d.utilisation = Some(crate::periodic_check::utilisation_value(cx, u)?);
    }
    Ok(d)
}

fn group_axes_list(
    cx: &Ctx,
    gname: &str,
    a: &RawGroupAxes,
    workloads: &BTreeMap<String, Workload>,
    policies: &BTreeMap<String, Policy>,
    locs: &mut Locations,
) -> Result<Vec<Axis>, SpecError> {
    let mut out = Vec::new();
    let min_procs = if gname == "main" && a.processes.is_some() { 1 } else { 0 };
    if let Some(span) =
        earliest([a.cpu_weight.as_ref().map(|v| v.span()), a.cpu_max.as_ref().map(|v| v.span()), a.cpuset.as_ref().map(|v| v.span())])
    {
        locs.cgroups.push((gname.to_string(), span));
    }
    let mut push = |setting: Setting, values: Vec<AxisValue>, span: Range<usize>| -> Result<(), SpecError> {
        if values.is_empty() {
            return cx.err(span, format!("the {} axis must list at least one value", setting.name()));
        }
        for (i, v) in values.iter().enumerate() {
            if values[..i].iter().any(|w| w.value == v.value) {
                return cx.err(span, format!("the {} axis lists {} twice", setting.name(), v.label));
            }
        }
        out.push(Axis { group: gname.to_string(), setting, values });
        Ok(())
    };
    if let Some(list) = &a.workload {
        let mut vals = Vec::new();
        for w in list.get_ref() {
            check_workload_name(cx, w, workloads)?;
            locs.workloads.push((w.get_ref().clone(), w.span()));
            vals.push(AxisValue { value: Value::Name(w.get_ref().clone()), label: w.get_ref().clone() });
        }
        push(Setting::Workload, vals, list.span())?;
    }
    if let Some(list) = &a.policy {
        let mut vals = Vec::new();
        for p in list.get_ref() {
            if !policies.contains_key(p.get_ref()) && Class::parse(p.get_ref()).is_none() {
                let known: Vec<&str> = policies.keys().map(String::as_str).chain(Class::ALL.iter().map(|c| c.name())).collect();
                return cx.err(
                    p.span(),
                    format!(
                        "unknown policy \"{}\"; define it under [policies.{}] or use one of: {}",
                        p.get_ref(),
                        p.get_ref(),
                        known.join(", ")
                    ),
                );
            }
            locs.policies.entry(p.get_ref().clone()).or_insert_with(|| p.span());
            vals.push(AxisValue { value: Value::Name(p.get_ref().clone()), label: p.get_ref().clone() });
        }
        push(Setting::Policy, vals, list.span())?;
    }
    let ints = |list: &Spanned<Vec<Spanned<i64>>>, lo: i64, hi: i64, what: &str| -> Result<Vec<AxisValue>, SpecError> {
        list.get_ref()
            .iter()
            .map(|v| cx.int_in(v, lo, hi, what).map(|x| AxisValue { value: Value::Int(x), label: x.to_string() }))
            .collect()
    };
    if let Some(list) = &a.priority {
        push(Setting::Priority, ints(list, 1, MAX_WORKER_PRIORITY, "priority (99 is reserved for the engine)")?, list.span())?;
    }
    if let Some(list) = &a.nice {
        push(Setting::Nice, ints(list, -20, 19, "nice")?, list.span())?;
        locs.nice.extend(list.get_ref().iter().map(|n| (*n.get_ref(), n.span())));
    }
    if let Some(list) = &a.affinity {
        let vals = list
            .get_ref()
            .iter()
            .map(|v| affinity(cx, v, locs).map(|x| AxisValue { label: x.label(), value: Value::Affinity(x) }))
            .collect::<Result<_, _>>()?;
        push(Setting::Affinity, vals, list.span())?;
    }
    if let Some(list) = &a.cpu_weight {
        push(
            Setting::CpuWeight,
            ints(list, 0, 10_000, "cpu_weight (cgroup v2 units, 0 = none; v1 shares = weight x 1024 / 100)")?,
            list.span(),
        )?;
    }
    if let Some(list) = &a.cpu_max {
        let vals = list
            .get_ref()
            .iter()
            .map(|v| cpu_max(cx, v).map(|m| AxisValue { label: format!("{}:{}", m.0, m.1), value: Value::Max(m) }))
            .collect::<Result<_, _>>()?;
        push(Setting::CpuMax, vals, list.span())?;
    }
    if let Some(list) = &a.cpuset {
        let vals = list
            .get_ref()
            .iter()
            .map(|v| cpu_list(cx, v, locs).map(|c| AxisValue { label: schedlab_plan::cpulist::format(&c), value: Value::Cpus(c) }))
            .collect::<Result<_, _>>()?;
        push(Setting::Cpuset, vals, list.span())?;
    }
    if let Some(list) = &a.processes {
        push(Setting::Processes, ints(list, min_procs, MAX_PROCESSES, "processes")?, list.span())?;
    }
    if let Some(list) = &a.scheduler {
        let vals = list
            .get_ref()
            .iter()
            .map(|v| {
                locs.policies.entry(v.get_ref().clone()).or_insert_with(|| v.span());
                crate::periodic_check::scheduler_name(cx, v).map(|n| AxisValue { label: n.clone(), value: Value::Name(n) })
            })
            .collect::<Result<_, _>>()?;
        push(Setting::Scheduler, vals, list.span())?;
    }
    if let Some(list) = &a.utilisation {
        let vals = list
            .get_ref()
            .iter()
            .map(|v| crate::periodic_check::utilisation_value(cx, v).map(|u| AxisValue { label: format!("{u}"), value: Value::Float(u) }))
            .collect::<Result<_, _>>()?;
        push(Setting::Utilisation, vals, list.span())?;
    }
    Ok(out)
}

fn affinity(cx: &Ctx, v: &Spanned<toml::Value>, locs: &mut Locations) -> Result<Affinity, SpecError> {
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

pub(crate) fn cpu_list(cx: &Ctx, v: &Spanned<toml::Value>, locs: &mut Locations) -> Result<Vec<u32>, SpecError> {
    let cpus = match v.get_ref() {
        toml::Value::String(s) => schedlab_plan::cpulist::parse(s).or_else(|e| cx.err(v.span(), e))?,
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
        other => return cx.err(v.span(), format!("expected a CPU list like \"0-1,3\" or [0, 1], got {other}")),
    };
    locs.cpus.push((cpus.clone(), v.span()));
    Ok(cpus)
}

fn cpu_max(cx: &Ctx, v: &Spanned<toml::Value>) -> Result<(u64, u64), SpecError> {
    let pair = v.get_ref().as_array().filter(|a| a.len() == 2).and_then(|a| Some((a[0].as_integer()?, a[1].as_integer()?)));
    let Some((quota, period)) = pair else {
        return cx.err(v.span(), "cpu_max must be [quota_us, period_us], e.g. [50000, 100000] for half a CPU");
    };
    if !(1000..=1_000_000).contains(&period) {
        return cx.err(v.span(), format!("cpu_max period must be between 1000 and 1000000 us, got {period}"));
    }
    if quota < 1000 {
        return cx.err(v.span(), format!("cpu_max quota must be at least 1000 us, got {quota}"));
    }
    Ok((quota as u64, period as u64))
}

fn scheduler_name(cx: &Ctx, v: &Spanned<String>) -> Result<String, SpecError> {
    let n = v.get_ref();
    if n.is_empty() || !n.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_') {
        return cx.err(v.span(), format!("\"{n}\" is not an I/O scheduler name (e.g. none, mq-deadline, kyber, bfq)"));
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
            toml::Value::String(s) if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') => s.clone(),
            other => return cx.err(v.span(), format!("tunable {key}: expected an integer, a boolean or a plain word, got {other}")),
        };
        let ok_queue = QUEUE_TUNABLES.contains(&key.as_str());
        match known {
            _ if ok_queue => {}
            Some(list) if !list.contains(&key.as_str()) => {
                let mut all: Vec<&str> = list.to_vec();
                all.extend(QUEUE_TUNABLES);
                return cx.err(k.span(), format!("scheduler {scheduler} has no tunable \"{key}\"; it has: {}", all.join(", ")));
            }
            _ if !key.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') || key.is_empty() => {
                return cx.err(k.span(), format!("\"{key}\" is not a tunable name"));
            }
            _ => {}
        }
        tunables.push((key.clone(), value));
    }
    Ok(IoSetting { name: name.to_string(), scheduler, tunables })
}

fn iosched_axis(
    cx: &Ctx,
    list: &Spanned<Vec<Spanned<String>>>,
    defs: &BTreeMap<String, IoSetting>,
    locs: &mut Locations,
) -> Result<Vec<IoSetting>, SpecError> {
    if list.get_ref().is_empty() {
        return cx.err(list.span(), "the iosched axis must list at least one scheduler");
    }
    let mut out: Vec<IoSetting> = Vec::new();
    for v in list.get_ref() {
        let setting = match defs.get(v.get_ref()) {
            Some(d) => d.clone(),
            None => IoSetting { name: v.get_ref().clone(), scheduler: scheduler_name(cx, v)?, tunables: Vec::new() },
        };
        if out.iter().any(|o| o.name == setting.name) {
            return cx.err(v.span(), format!("the iosched axis lists {} twice", setting.name));
        }
        locs.iosched.push((setting.scheduler.clone(), v.span()));
        out.push(setting);
    }
    Ok(out)
}

fn device(cx: &Ctx, d: &RawDevice, locs: &mut Locations) -> Result<DeviceSpec, SpecError> {
    let queue = match &d.queue {
        None => QueueTarget::Device,
        Some(q) => match q.get_ref().as_str() {
            "device" => QueueTarget::Device,
            "backing" => QueueTarget::Backing,
            other => return cx.err(q.span(), format!("queue must be \"device\" or \"backing\", got \"{other}\"")),
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
                    return cx.err(span, format!("`{key}` applies only to the loop device schedlab creates (no `path`)"));
                }
            }
            if queue == QueueTarget::Backing {
                return cx.err(d.queue.as_ref().unwrap().span(), "queue = \"backing\" applies only to a loop device (no `path`)");
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
                Some(f) if ["ext4", "xfs", "btrfs"].contains(&f.get_ref().as_str()) => f.get_ref().clone(),
                Some(f) => return cx.err(f.span(), format!("fs must be ext4, xfs or btrfs, got \"{}\"", f.get_ref())),
            };
            DeviceTarget::Loop { size_mib, fs, direct_io: d.direct_io.as_ref().is_some_and(|b| *b.get_ref()) }
        }
    };
    let confirm_device = match &d.confirm_device {
        Some(c) if c.get_ref().is_empty() || c.get_ref().contains('/') => {
            return cx.err(c.span(), "confirm_device is a device name as in /sys/block, e.g. \"sdb\"")
        }
        Some(c) => Some(c.get_ref().clone()),
        None => None,
    };
    Ok(DeviceSpec { target, queue, confirm_device, drop_caches: d.drop_caches.as_ref().is_none_or(|b| *b.get_ref()) })
}

fn check_name(cx: &Ctx, k: &Spanned<String>) -> Result<(), SpecError> {
    let ok = !k.get_ref().is_empty() && k.get_ref().chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !ok {
        return cx.err(k.span(), format!("name \"{}\" may only use letters, digits, '-' and '_'", k.get_ref()));
    }
    Ok(())
}

/// A workload name must be defined under [workloads] or be a built-in one.
fn check_workload_name(cx: &Ctx, w: &Spanned<String>, workloads: &BTreeMap<String, Workload>) -> Result<(), SpecError> {
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
    cx.err(w.span(), format!("unknown workload \"{n}\"; define it under [workloads.{n}] or use one of: {}", known.join(", ")))
}

fn builtin_workload(name: &str) -> Option<Workload> {
    Some(match name {
        "pi" => Workload::Pi { iterations: DEFAULT_PI_ITERATIONS as u64 },
        "copy" => {
            Workload::Copy { transfer_bytes: DEFAULT_TRANSFER as u64, block_bytes: DEFAULT_BLOCK as u64, input_bytes: DEFAULT_INPUT as u64 }
        }
        "mixed" => Workload::Mixed { iterations: DEFAULT_MIXED_ITERATIONS as u64, write_every: DEFAULT_WRITE_EVERY as u64 },
        "hash" => Workload::Hash { hashes: DEFAULT_HASHES as u64 },
        "par_write" => Workload::ParWrite(DEFAULT_PAR_IO),
        "par_read" => Workload::ParRead(DEFAULT_PAR_IO),
        _ => return disturb::builtin(name),
    })
}

fn builtin_policy(class: Class) -> Policy {
    Policy {
        class,
        priority: if class.is_rt() { DEFAULT_RT_PRIORITY as u32 } else { 0 },
        nice: 0,
        // 5 ms every 100 ms: admits up to 38 workers on 2 CPUs at 95% RT bandwidth.
        deadline: (class == Class::Deadline).then_some(DeadlineParams {
            runtime_ns: 5_000_000,
            deadline_ns: 100_000_000,
            period_ns: 100_000_000,
        }),
    }
}

/// A workload key, where it was written, and the kinds it belongs to.
type KeyKinds<'a> = (&'a str, Option<Range<usize>>, &'a [&'a str]);

fn workload(cx: &Ctx, w: &RawWorkload, seed: u64, locs: &mut Locations) -> Result<Workload, SpecError> {
    let kind = w.kind.get_ref().as_str();
    disturb::check_keys(cx, w, kind)?;
    if let Some(p) = crate::periodic_check::workload(cx, w, seed)? {
        return Ok(Workload::Periodic(p));
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
    if !["pi", "mixed", "copy", "hash", "command", "par_write", "par_read"].contains(&kind) && !disturb::KINDS.contains(&kind) {
        return cx.err(
            w.kind.span(),
            format!("unknown workload kind \"{kind}\"; expected one of: pi, copy, mixed, hash, command, par_write, par_read, periodic, udp_flood, io_interrupts"),
        );
    }
    for (name, span, kinds) in fields {
        if let Some(span) = span {
            if !kinds.contains(&kind) {
                return cx.err(span, format!("`{name}` does not apply to a workload of kind \"{kind}\""));
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
        "pi" => Ok(Workload::Pi { iterations: pos(&w.iterations, DEFAULT_PI_ITERATIONS, "iterations")? }),
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
                return cx.err(w.block_bytes.as_ref().unwrap().span(), "block_bytes must be at most 64 MiB");
            }
            if input_bytes < block_bytes {
                return cx.err(
                    w.input_bytes.as_ref().map(|s| s.span()).unwrap_or(w.kind.span()),
                    format!("input_bytes ({input_bytes}) must be at least block_bytes ({block_bytes})"),
                );
            }
            if input_bytes > 1 << 34 {
                return cx.err(w.input_bytes.as_ref().unwrap().span(), "input_bytes must be at most 16 GiB");
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
                    None => return cx.err(m.span(), format!("mode must be buffered, sync, direct or fsync, got \"{}\"", m.get_ref())),
                },
            };
            let at = |v: &Option<Spanned<i64>>| v.as_ref().map(|s| s.span()).unwrap_or(w.kind.span());
            if kind == "par_read" && matches!(mode, IoMode::Sync | IoMode::Fsync) {
                return cx.err(w.mode.as_ref().unwrap().span(), "a par_read reads: mode must be buffered or direct");
            }
            if mode == IoMode::Direct {
                if buffer_bytes % DIRECT_ALIGN != 0 {
                    return cx.err(at(&w.buffer_bytes), format!("mode = \"direct\" needs buffer_bytes to be a multiple of {DIRECT_ALIGN}"));
                }
                if file_bytes % DIRECT_ALIGN != 0 {
                    return cx.err(at(&w.file_bytes), format!("mode = \"direct\" needs file_bytes to be a multiple of {DIRECT_ALIGN}"));
                }
            }
            let p = ParIo { files, file_bytes, threads, buffer_bytes, mode };
            Ok(if kind == "par_write" { Workload::ParWrite(p) } else { Workload::ParRead(p) })
        }
        _ => {
            let Some(argv) = &w.argv else {
                return cx.err(w.kind.span(), "a command workload needs argv = [\"program\", \"arg\", ...]");
            };
            if argv.get_ref().is_empty() || argv.get_ref()[0].get_ref().is_empty() {
                return cx.err(argv.span(), "argv must name a program");
            }
            for a in argv.get_ref() {
                if a.get_ref().contains('\0') {
                    return cx.err(a.span(), "arguments may not contain NUL bytes");
                }
            }
            let mut args: Vec<String> = argv.get_ref().iter().map(|a| a.get_ref().clone()).collect();
            let program = &argv.get_ref()[0];
            if crate::paths::is_program_path(program.get_ref()) {
                let path = crate::paths::resolve(cx.base, program.get_ref());
                // A per-worker program ("./w{index}") is known only at run time.
                if !program.get_ref().contains("{index}") {
                    locs.paths.push(PathUse { key: PathKey::Program, path: path.clone(), span: program.span() });
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
            format!("unknown class \"{}\"; expected one of: other, batch, idle, fifo, rr, deadline", p.class.get_ref()),
        );
    };
    let mut pol = builtin_policy(class);
    if let Some(pr) = &p.priority {
        if !class.is_rt() {
            return cx
                .err(pr.span(), format!("priority applies only to fifo and rr; {} tasks have static priority 0 (use nice)", class.name()));
        }
        pol.priority = cx.int_in(pr, 1, MAX_WORKER_PRIORITY, "priority (99 is reserved for the engine)")? as u32;
    }
    if let Some(n) = &p.nice {
        pol.nice = cx.int_in(n, -20, 19, "nice")? as i32;
        locs.nice.push((*n.get_ref(), n.span()));
    }
    let dl_fields = [&p.runtime_us, &p.deadline_us, &p.period_us];
    if class != Class::Deadline {
        if let Some(f) = dl_fields.iter().find_map(|f| f.as_ref()) {
            return cx.err(f.span(), "runtime_us, deadline_us and period_us apply only to class \"deadline\"");
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
        let at = p.runtime_us.as_ref().or(p.deadline_us.as_ref()).or(p.period_us.as_ref()).map(|s| s.span()).unwrap_or(p.class.span());
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

/// The live dispatcher's own SCHED_FIFO priority (schedlab-dispatch's DISPATCHER_PRIORITY).
const DISPATCHER_PRIORITY: u32 = 98;

/// Refuses, naming the missing privilege, what this process may not do: nice below its own
/// and RLIMIT_NICE's floor, SCHED_FIFO/SCHED_RR above RLIMIT_RTPRIO (a dispatched set's
/// dispatcher runs at 98), SCHED_DEADLINE without CAP_SYS_NICE, cgroups it cannot write.
pub(crate) fn check_allowed(plan: &Plan, locs: &Locations, src: &str, caps: &Capabilities) -> Result<(), SpecError> {
    for g in plan.cells.iter().flat_map(|c| &c.groups) {
        let p = &g.policy;
        let dispatched = g.workload.periodic().is_some_and(|w| w.scheduler.dispatched());
        let rt_priority = if dispatched { DISPATCHER_PRIORITY } else { p.priority };
        let policy_at = locs.policies.get(&g.policy_name);
        let problem = match p.class {
            Class::Deadline if !caps.sys_nice => {
                Some(("SCHED_DEADLINE needs CAP_SYS_NICE (run as root); RLIMIT_RTPRIO does not allow it".to_string(), policy_at))
            }
            Class::Fifo | Class::Rr if !caps.may_rt(rt_priority) => Some((
                format!(
                    "{} needs CAP_SYS_NICE (run as root) or RLIMIT_RTPRIO >= {rt_priority}; this process has neither (RLIMIT_RTPRIO = {})",
                    if dispatched {
                        format!("the {} dispatcher's SCHED_FIFO priority {rt_priority}", g.policy_name)
                    } else {
                        format!("SCHED_{} priority {rt_priority}", p.class.name().to_uppercase())
                    },
                    caps.rtprio_limit
                ),
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
            return Err(SpecError::at(&plan.source_path, src, span, format!("policy \"{}\": {msg}", g.policy_name)));
        }
        if let (true, Some(dir)) = (g.cgroup.any(), &caps.cgroup_unwritable) {
            let span = locs.cgroups.iter().find(|(n, _)| *n == g.name).map(|(_, s)| s.clone()).or_else(|| first_cgroup_key(src));
            return Err(SpecError::at(
                &plan.source_path,
                src,
                span.unwrap_or_else(|| locs.matrix.clone()),
                format!(
                    "group \"{}\" sets cgroup controls, which needs write access to {dir} (schedlab creates its cgroups there and moves workers in): run as root, or delegate that cgroup to this user",
                    g.name
                ),
            ));
        }
    }
    dma::check(plan, locs, src, caps)?;
    // A loop device or an I/O scheduler axis needs root anyway, and the device check says so.
    if let Some(d) = plan.device.as_ref().filter(|d| matches!(d.target, DeviceTarget::Dir { .. }) && locs.iosched.is_empty()) {
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
fn path_value(cx: &Ctx, v: &Spanned<String>, key: PathKey, locs: &mut Locations) -> Result<PathBuf, SpecError> {
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

/// The span written first of those given.
fn earliest<const N: usize>(spans: [Option<Location>; N]) -> Option<Location> {
    spans.into_iter().flatten().min_by_key(|s| s.start)
}

/// The span of the first cgroup control (`cpu_weight`, `cpu_max`, `cpuset`) set in the spec;
/// an axis of weight 0 only (no cgroup) does not count.
fn first_cgroup_key(src: &str) -> Option<Location> {
    let zero = |v: &toml::de::DeValue| match v {
        toml::de::DeValue::Array(a) => a.iter().all(|x| crate::locate::int(x.get_ref()) == Some(0)),
        v => crate::locate::int(v) == Some(0),
    };
    crate::locate::keys(src, &["cpu_weight", "cpu_max", "cpuset"]).into_iter().find(|(_, v, _)| !zero(v)).map(|(k, _, _)| k)
}
