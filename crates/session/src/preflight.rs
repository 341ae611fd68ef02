//! What this machine and this user allow a measured run, checked before anything is
//! created or changed: privileges, CPUs, paths, cgroups, the task and memory limits, the
//! restore journal's directory, sched_ext, traces, the device, knobs, RT throttling and the
//! watchdog. [`look`] only looks and names every refusal it finds (`check` says them all);
//! [`check`] refuses a run with them ([`Error::Refused`], exit status 2), or holds what the
//! run changes and undoes what a killed schedlab left.

use crate::{Error, MeasureOptions, Observer};
use schedlab_spec::{KnobFact, KnobFacts, Spec, SpecError};
use schedlab_sys::{env, Root};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// What the preflight found, for the run to use.
#[derive(Debug)]
pub struct Checked {
    /// The machine's facts, stored with the run.
    pub environment: schedlab_model::Environment,
    /// The engine may supervise at SCHED_FIFO 99.
    pub engine_rt: bool,
    /// Each knob's value before the run changes anything.
    pub knob_facts: KnobFacts,
    /// The experiment device in words, when the plan has one.
    pub device_line: Option<String>,
    /// The cells left out (the built-in experiment's, or any file's with
    /// `--skip-unavailable`) that this machine or user cannot run: (why, their keys).
    pub left_out: Vec<(String, Vec<String>)>,
    /// The per-cell watchdog given on the command line.
    pub timeout: Option<Duration>,
    /// The knobs and sched_ext held from the preflight to the run's end.
    pub holds: schedlab_sys::lock::Holds,
    /// Where the run moves its engine so its real-time workers get RT runtime (the probe
    /// found none in this process's cgroup, and a child was allowed real-time there).
    pub rt_placement: Option<schedlab_spec::RtPlacement>,
    /// The limits on the engine's cgroup path: named, or moved out of.
    pub limits: crate::limits::Limits,
}

impl Checked {
    /// What a run on `environment` assumes without looking at the machine: no device, no
    /// knobs, nothing held, the engine an ordinary task. For a run of the mock executor.
    pub fn assumed(environment: schedlab_model::Environment) -> Checked {
        Checked {
            environment,
            engine_rt: false,
            knob_facts: KnobFacts::new(),
            device_line: None,
            left_out: Vec::new(),
            timeout: None,
            holds: schedlab_sys::lock::Holds::new(),
            rt_placement: None,
            limits: Default::default(),
        }
    }
}

/// What [`look`] found of a spec on this machine, nothing held or changed: every refusal
/// and the lines that say what a run would do, and what the run then goes on from.
#[derive(Debug)]
pub struct Look {
    /// Every refusal, in the order a run checks them, each as the run would say it.
    pub refusals: Vec<String>,
    /// What a run would do here: a line per knob, the device, a real-time placement.
    pub notes: Vec<String>,
    caps: schedlab_spec::Capabilities,
    environment: schedlab_model::Environment,
    device_line: Option<String>,
    left_out: Vec<(String, Vec<String>)>,
    timeout: Option<Duration>,
    rt_placement: Option<schedlab_spec::RtPlacement>,
    limits: crate::limits::Limits,
}

impl Look {
    /// The refusal of a run with every reason found (None when there is none): each after
    /// the first on a line of its own that begins `error: `, as the CLI begins the first.
    pub fn refusal(&self) -> Option<Error> {
        (!self.refusals.is_empty()).then(|| Error::Refused(self.refusals.join("\nerror: ")))
    }
}

/// Keeps what `r` found in `refusals`, its value when there is one.
fn keep<T>(r: Result<T, impl std::fmt::Display>, refusals: &mut Vec<String>) -> Option<T> {
    r.map_err(|e| refusals.push(e.to_string())).ok()
}

/// Examines `spec` against this machine and user without holding or changing anything
/// (the built-in experiment, and a file with `--skip-unavailable`, leave out the cells this
/// machine or user cannot run), and names every refusal a run of it would meet, not only the
/// first.
pub fn look(spec: &mut Spec, o: &MeasureOptions, root: &Root, state_dir: &Path) -> Look {
    let caps = env::capabilities(root);
    let parent = device_parent(spec, o.dir.as_deref());
    let device = spec.plan.device.as_ref().map(|d| schedlab_sys::blockdev::facts(root, d, &parent));
    let unavailable = unavailable(spec, &caps, device.as_ref(), root);
    // The built-in experiment is not the user's choice, and `--skip-unavailable` makes a file
    // like it: what this machine cannot run is left out by name instead of refusing the whole
    // run (a user's own file is refused, located, and told of the flag).
    let skip = (o.builtin || o.skip_unavailable) && !o.resume;
    let cells = spec.plan.cells.len();
    let left_out = if skip { spec.leave_out(&unavailable) } else { Vec::new() };
    let environment = env::environment(root);
    let mut l = Look {
        refusals: Vec::new(),
        notes: Vec::new(),
        caps,
        environment,
        device_line: None,
        left_out,
        timeout: None,
        rt_placement: None,
        limits: Default::default(),
    };
    if spec.plan.cells.is_empty() {
        l.refusals.push(match o.builtin {
            true => "this user may run none of the built-in experiment's cells:".to_string(),
            false => format!(
                "this machine can run no cell of {} ({cells} left out by --skip-unavailable):",
                spec.plan.source_path
            ),
        });
        l.refusals.extend(
            l.left_out.iter().map(|(why, keys)| format!("{why} (cells {})", keys.join(", "))),
        );
        return l;
    }
    let r = &mut l.refusals;
    keep(spec.check_allowed(&l.caps), r);
    keep(spec.check_cpus(&schedlab_sys::cpus::online(root)), r);
    keep(spec.check_paths(o.dir.is_some()), r);
    if let Some(d) = o.dir.as_deref() {
        keep(schedlab_spec::not_kernel_fs("--dir", d), r);
    }
    r.extend(check_cgroups(spec, root));
    r.extend(check_machine(spec, root, state_dir));
    let device_line = device.map(|f| check_device(spec, &f, &parent, o.yes_device.as_deref()));
    l.device_line = device_line.and_then(|d| keep(d, &mut l.refusals)).flatten();
    if let Some(facts) = keep(check_knobs(spec, root), &mut l.refusals) {
        l.refusals.extend(unthrottled_without_watchdog(spec, &facts, o, &l.caps));
        l.notes.extend(knob_lines(&spec.plan, &facts));
    }
    if spec.plan.has_realtime() && !env::rt_throttled(&l.environment) && !o.allow_unthrottled {
        l.refusals.push(
            "RT throttling is disabled (kernel.sched_rt_runtime_us = -1), so real-time workers could starve this machine. \
             Re-enable it with `sysctl kernel.sched_rt_runtime_us=950000`, or pass --allow-unthrottled if you mean it".into(),
        );
    }
    let timeout = o.timeout_s.map(|t| schedlab_spec::bounds::watchdog(t, "--timeout"));
    l.timeout = timeout.and_then(|t| keep(t, &mut l.refusals));
    keep(spec.check_watchdog(l.timeout.unwrap_or(spec.plan.timeout)), &mut l.refusals);
    // Each cell this machine cannot run was refused above, located; the flag runs the rest.
    let runnable = cells - unavailable.len();
    if !skip && !o.resume && !unavailable.is_empty() && runnable > 0 {
        l.refusals.push(format!(
            "{} of the {cells} cells cannot run on this machine (said above): run with --skip-unavailable to leave them out and run the other {runnable}",
            unavailable.len()
        ));
    }
    l.notes.extend(l.device_line.clone());
    l.rt_placement = l.caps.rt_placement.clone().filter(|_| spec.plan.has_realtime());
    l.notes.extend(l.rt_placement.as_ref().map(|p| format!("real-time: {}", p.why)));
    limits(&mut l, root, o, spec.plan.has_realtime());
    l
}

/// Every cell of `spec` this machine or user cannot run, with the first reason for each, in
/// plan order: what the spec judges (privileges, cpu_dma_latency, I/O schedulers against
/// `device`, knobs, sched_ext) and what the machine's own checks find (cgroup settings its hierarchy
/// cannot honour, traces it cannot take). Each is also a refusal of [`look`]'s checks.
fn unavailable(
    spec: &Spec,
    caps: &schedlab_spec::Capabilities,
    device: Option<&schedlab_spec::DeviceFacts>,
    root: &Root,
) -> Vec<(u32, String)> {
    let knobs = schedlab_sys::knobs::facts(root, &spec.plan.knob_names());
    let scx = schedlab_sys::scx::facts(root, &spec.plan.scx_programs());
    let mut out =
        spec.unavailable(&schedlab_spec::MachineFacts { caps, device, knobs: &knobs, scx: &scx });
    let trace = check_trace(spec, root).into_iter().next();
    let traced = spec.plan.cells.iter().filter(|c| spec.plan.traced(c));
    let more = cgroup_refusals(spec, root).into_iter().map(|(i, _, why)| (i, why));
    for (i, why) in more.chain(traced.filter_map(|c| Some((c.index, trace.clone()?)))) {
        if !out.iter().any(|(j, _)| *j == i) {
            out.push((i, why));
        }
    }
    out.sort_by_key(|(i, _)| *i);
    out
}

/// One line per reason cells were left out (the built-in experiment's, or `--skip-unavailable`'s),
/// naming the cells: as `run` says them before its first cell and keeps them among its
/// warnings, and as `check` prints them.
pub fn skipped_lines(left_out: &[(String, Vec<String>)]) -> Vec<String> {
    left_out
        .iter()
        .map(|(why, keys)| {
            let cells = if keys.len() == 1 { "cell" } else { "cells" };
            format!(
                "skipped {} {cells} (not run, not failed), {why}: {}",
                keys.len(),
                keys.join(", ")
            )
        })
        .collect()
}

impl Look {
    /// The lines that say which cells were left out, and why ([`skipped_lines`]).
    pub fn skipped(&self) -> Vec<String> {
        skipped_lines(&self.left_out)
    }
}

/// The limits on the engine's cgroup path ([`crate::limits::look`]): their warnings and
/// what the run does about them in `l`'s notes, a refusal of `--escape-limits` in its refusals.
fn limits(l: &mut Look, root: &Root, o: &MeasureOptions, realtime: bool) {
    let placed = l.rt_placement.as_ref().map(|p| p.to.as_path());
    l.limits = crate::limits::look(root, o.escape_limits, realtime, &mut l.environment, placed);
    l.refusals.extend(l.limits.refusal.clone());
    l.notes.extend(l.limits.lines());
}

/// The refusal of knobs that weaken RT throttling where the engine's watchdog cannot run at
/// SCHED_FIFO 99 (`facts`: the knobs' values now).
fn unthrottled_without_watchdog(
    spec: &Spec,
    facts: &KnobFacts,
    o: &MeasureOptions,
    caps: &schedlab_spec::Capabilities,
) -> Option<String> {
    (schedlab_spec::unthrottles(&spec.plan, facts) && (o.no_engine_rt || !caps.sys_nice)).then(|| {
        "the spec's knobs weaken RT throttling (allow_rt_unthrottled = true), which needs the engine's watchdog at SCHED_FIFO 99: run as root and without --no-engine-rt".into()
    })
}

/// Checks `spec` against this machine and user before anything is changed ([`look`]),
/// refusing with every reason found; then holds the settings the run changes and undoes
/// what an earlier schedlab killed by SIGKILL left (said through `observer`).
pub fn check(
    spec: &mut Spec,
    o: &MeasureOptions,
    root: &Root,
    state_dir: &Path,
    observer: &mut dyn Observer,
) -> Result<Checked, Error> {
    let look = look(spec, o, root, state_dir);
    if let Some(refused) = look.refusal() {
        return Err(refused);
    }
    // The settings this run changes are held from here to its end, before they are read: a
    // setting another live run holds is refused (see `hold_settings`).
    let holds = hold_settings(&spec.plan, root).map_err(Error::refused)?;
    // Undo what an earlier schedlab killed by SIGKILL or a crash left on this machine, before
    // the values found are read as the ones from before this run.
    for line in schedlab_sys::journal::recover(state_dir, false) {
        observer.note(&format!("restore: {line}"));
    }
    // Read again: the values before this run are those found after the recovery.
    let knob_facts = check_knobs(spec, root).map_err(Error::refused)?;
    if let Some(why) = unthrottled_without_watchdog(spec, &knob_facts, o, &look.caps) {
        return Err(Error::Refused(why));
    }
    schedlab_sys::phases::mark("preflight");
    let Look { caps, environment, rt_placement, limits, .. } = look;
    Ok(Checked {
        // Where real-time is refused, or allowed only after a move this run does not make,
        // the engine cannot be SCHED_FIFO 99 either.
        engine_rt: caps.sys_nice
            && !o.no_engine_rt
            && caps.rt_refused.is_none()
            && (caps.rt_placement.is_none() || rt_placement.is_some()),
        environment,
        rt_placement,
        limits,
        knob_facts,
        device_line: look.device_line,
        left_out: look.left_out,
        timeout: look.timeout,
        holds,
    })
}

/// Refuses a plan whose cgroup settings this machine cannot honour, before any change:
/// each group's refusal, once.
fn check_cgroups(spec: &Spec, root: &Root) -> Vec<String> {
    let mut refusals = Vec::new();
    for (_, g, why) in cgroup_refusals(spec, root) {
        let why = spec.cgroup_error(&g, why).to_string();
        if !refusals.contains(&why) {
            refusals.push(why);
        }
    }
    refusals
}

/// Each cell with a group whose cgroup settings this machine cannot honour (no usable
/// hierarchy, or one without what the group asks for): the cell, the group and why.
fn cgroup_refusals(spec: &Spec, root: &Root) -> Vec<(u32, String, String)> {
    let mut out = Vec::new();
    let wants = |g: &&schedlab_spec::Group| g.cgroup.any();
    let h = schedlab_sys::cgroup::detect(root);
    for c in &spec.plan.cells {
        let why = c.groups.iter().filter(wants).find_map(|g| {
            let why = match &h {
                None => format!("group \"{}\" asks for cgroup settings, but this machine has no usable cgroup hierarchy", g.name),
                Some(h) => format!("group \"{}\": {}", g.name, h.check(&(&g.cgroup).into()).err()?),
            };
            Some((c.index, g.name.clone(), why))
        });
        out.extend(why);
    }
    out
}

/// Every cell against kernel.pid_max, kernel.threads-max, RLIMIT_NPROC and MemAvailable.
pub fn check_limits(spec: &Spec, root: &Root) -> Result<(), SpecError> {
    spec.check_limits(&schedlab_sys::limits::read(root))
}

/// Every knob the plan names against what this machine says about it; returns the facts
/// (each knob's value now, before anything changes).
pub fn check_knobs(spec: &Spec, root: &Root) -> Result<KnobFacts, SpecError> {
    let facts = schedlab_sys::knobs::facts(root, &spec.plan.knob_names());
    spec.check_knobs(&facts)?;
    Ok(facts)
}

/// The plan's sched_ext schedulers against this kernel (sched_ext present, nothing loaded
/// already, root, each program found).
pub fn check_scx(spec: &Spec, root: &Root) -> Result<(), SpecError> {
    spec.check_scx(&schedlab_sys::scx::facts(root, &spec.plan.scx_programs()))
}

/// The knobs' values before the run, by name, as the facts read them.
pub fn knobs_before(facts: &KnobFacts) -> BTreeMap<String, String> {
    facts
        .iter()
        .filter_map(|(k, f)| match f {
            KnobFact::Present { value, .. } => Some((k.clone(), value.clone())),
            _ => None,
        })
        .collect()
}

/// One line per knob the plan names: its value now, and what the run does with it (held
/// at one value, or swept over the cells' values); each is journaled and put back.
pub fn knob_lines(plan: &schedlab_spec::Plan, facts: &KnobFacts) -> Vec<String> {
    knobs_before(facts)
        .into_iter()
        .map(|(name, now)| {
            let held = plan.knobs.get(&name).map(|v| format!("held at {} for the run", v.label()));
            let mut swept: Vec<String> = Vec::new();
            for v in plan.cells.iter().filter_map(|c| c.knobs.get(&name)).map(|v| v.label()) {
                if !swept.contains(&v) {
                    swept.push(v);
                }
            }
            let what = held.unwrap_or_else(|| format!("swept over {}", swept.join(", ")));
            format!("knob {name}: {now} now, {what}; journaled and put back after")
        })
        .collect()
}

/// The refusals of a run that could not be carried out here: a cell beyond this machine's
/// limits, a sched_ext scheduler or trace it cannot have, or a restore journal this user
/// cannot write (an inherited XDG_RUNTIME_DIR of another user, say), which would otherwise
/// fail only after the run was recorded.
pub fn check_machine(spec: &Spec, root: &Root, state: &Path) -> Vec<String> {
    let mut refusals = Vec::new();
    keep(check_limits(spec, root), &mut refusals);
    keep(check_scx(spec, root), &mut refusals);
    refusals.extend(check_trace(spec, root));
    if let Ok(m) = std::fs::symlink_metadata(state) {
        use std::os::unix::fs::MetadataExt;
        let me = env::euid();
        if !m.file_type().is_dir() || m.uid() != me {
            refusals.push(format!(
                "the restore journal's directory {} is not a directory of this user (owner uid {}, this user {me}); remove it, or set SCHEDLAB_STATE_DIR",
                state.display(),
                m.uid()
            ));
            return refusals;
        }
    }
    // The journal creates the directory if needed: the nearest existing ancestor must take it.
    let existing = state.ancestors().find(|p| p.exists()).unwrap_or(Path::new("/"));
    if !env::may_write(existing) {
        refusals.push(format!(
            "this user cannot write the restore journal's directory {} ({} is not writable); set SCHEDLAB_STATE_DIR (or XDG_RUNTIME_DIR) to a directory of this user's",
            state.display(),
            existing.display()
        ));
    }
    refusals
}

/// A traced cell needs what tracing needs (the kernel's BTF, BPF and the capabilities to
/// load tracing programs; root and tracefs for the timeline): the refusals, by name, of what
/// this machine lacks.
pub fn check_trace(spec: &Spec, root: &Root) -> Vec<String> {
    let mut refusals = Vec::new();
    if !spec.plan.cells.iter().any(|c| spec.plan.traced(c)) {
        return refusals;
    }
    let mode = spec.plan.trace.mode;
    if mode.bpf() {
        if let Some(why) = schedlab_bpf::unavailable(&schedlab_bpf::kernel_btf()) {
            refusals.push(format!("the plan traces cells (trace = true or --trace), but {why}"));
        }
    }
    if mode.timeline() {
        if let Err(why) = schedlab_trace::tracefs::preflight(root) {
            refusals.push(format!(
                "the plan captures cells' timelines (trace = \"timeline\" or --trace=timeline), but {why}"
            ));
        }
    }
    refusals
}

/// Where the experiment directory (and a loop device's image) goes: `--dir`, the spec's
/// `dir`, or the temporary directory.
fn device_parent(spec: &Spec, dir: Option<&Path>) -> std::path::PathBuf {
    dir.map(Path::to_path_buf).or_else(|| spec.plan.dir.clone()).unwrap_or_else(std::env::temp_dir)
}

/// Checks the plan's experiment device against what this machine says of it (`facts`:
/// privilege, a real disk's confirmation, offered schedulers and their files, space) before
/// anything is changed; returns a line describing the device for the user, if there is one.
pub fn check_device(
    spec: &Spec,
    facts: &schedlab_spec::DeviceFacts,
    parent: &Path,
    yes_device: Option<&str>,
) -> Result<Option<String>, Error> {
    let Some(d) = &spec.plan.device else { return Ok(None) };
    let refused: Vec<String> =
        spec.check_device_all(facts, yes_device).iter().map(ToString::to_string).collect();
    if !refused.is_empty() {
        return Err(Error::Refused(refused.join("\nerror: ")));
    }
    let line = match &d.target {
        schedlab_spec::DeviceTarget::Loop { fs, direct_io, .. } => format!(
            "device: a {} MiB loop device ({fs}{}) backed by a file in {}, removed afterwards; iosched axis sets {}",
            spec.plan.loop_size_mib().unwrap_or(0),
            if *direct_io { ", direct I/O" } else { "" },
            parent.display(),
            match d.queue {
                schedlab_spec::QueueTarget::Device => "the loop device's queue".to_string(),
                schedlab_spec::QueueTarget::Backing => format!("the backing disk's queue ({})", facts.disk.as_deref().unwrap_or("?")),
            }
        ),
        schedlab_spec::DeviceTarget::Dir { path } => {
            format!("device: files in a new directory under {path} on {} (confirmed)", facts.disk.as_deref().unwrap_or("?"))
        }
    };
    Ok(Some(format!(
        "{line}; page cache dropped before each cell: {}",
        if d.drop_caches { "yes" } else { "no" }
    )))
}

/// Holds the run's knobs and, when its cells load sched_ext schedulers, sched_ext itself:
/// two runs that change one setting would each journal the other's value as the one from
/// before, and leave the machine with neither's.
fn hold_settings(
    plan: &schedlab_spec::Plan,
    root: &Root,
) -> Result<schedlab_sys::lock::Holds, schedlab_sys::SysError> {
    let mut holds = schedlab_sys::lock::Holds::new();
    schedlab_sys::knobs::hold(root, &plan.knob_names(), &mut holds)?;
    let scx = schedlab_sys::scx::state_path(root);
    if !plan.scx_programs().is_empty() && scx.exists() {
        holds.take("sched_ext (the cpu_scheduler axis)", &scx)?;
    }
    Ok(holds)
}

impl crate::Session {
    /// [`look`] at this session's machine, with its restore journal's directory.
    pub fn look(&self, spec: &mut Spec, o: &MeasureOptions) -> Look {
        look(spec, o, &self.root, &self.state_dir)
    }
}
