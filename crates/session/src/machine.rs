//! What this machine and this user allow, in words, for `schedlab env`: the policies and
//! priorities workers may have, the other powers a run may need, sched_ext and the
//! scheduler's per-process accounting.

use schedlab_spec::MAX_WORKER_PRIORITY;
use schedlab_sys::{env, Root};

/// What this user may do here beyond the spec's policies: cgroups, I/O schedulers, loop
/// devices, locked memory.
pub struct Powers {
    /// Block devices whose queue/scheduler this process may write.
    pub schedulers: Vec<String>,
    /// Every block device with a scheduler file.
    pub devices: usize,
    /// CAP_SYS_ADMIN and write access to /dev/loop-control.
    pub loop_devices: bool,
    /// CAP_IPC_LOCK.
    pub ipc_lock: bool,
}

/// What this user may do here beyond the spec's policies.
pub fn powers(root: &Root, e: &schedlab_model::Environment) -> Powers {
    let names: Vec<&str> = e.io_devices.iter().filter_map(|d| d.split(':').next()).collect();
    let schedulers = names
        .iter()
        .filter(|n| env::may_write(&root.path(&format!("/sys/block/{n}/queue/scheduler"))))
        .map(|n| n.to_string())
        .collect();
    Powers {
        schedulers,
        devices: names.len(),
        loop_devices: env::has_cap(root, env::cap::SYS_ADMIN)
            && env::may_write(&root.path("/dev/loop-control")),
        ipc_lock: env::has_cap(root, env::cap::IPC_LOCK),
    }
}

/// Which policies and priorities this process may give its workers.
pub fn policies(caps: &schedlab_spec::Capabilities) -> Vec<String> {
    let lowest = if caps.sys_nice { -20 } else { caps.nice.min(caps.min_nice) };
    let mut out = vec![format!("other, batch, idle at nice >= {lowest}")];
    let placed = |s: String| match &caps.rt_placement {
        Some(p) => format!("{s} once a run moves its engine to {} (tried)", p.to.display()),
        None => s,
    };
    out.push(match (&caps.rt_refused, caps.sys_nice, caps.rtprio_limit) {
        (Some(why), _, _) => format!("no fifo or rr: {why}"),
        (None, true, _) => placed(format!("fifo, rr at priority 1-{MAX_WORKER_PRIORITY}")),
        (None, false, 0) => "no fifo or rr (RLIMIT_RTPRIO is 0)".into(),
        (None, false, r) => placed(format!(
            "fifo, rr at priority 1-{} (RLIMIT_RTPRIO)",
            r.min(MAX_WORKER_PRIORITY as u64)
        )),
    });
    out.push(match (&caps.deadline_refused, caps.sys_nice) {
        (Some(why), _) => format!("no deadline: {why}"),
        (None, true) => "deadline".into(),
        (None, false) => "no deadline (needs CAP_SYS_NICE)".into(),
    });
    out
}

/// The policy probe's answers for `env --json`: each policy as a forked child tried it, and
/// this process's cpu cgroup with the RT runtime it holds.
pub fn probe_json(probe: &std::io::Result<schedlab_sys::probe::Probe>) -> serde_json::Value {
    use schedlab_sys::probe::Answer;
    let p = match probe {
        Ok(p) => p,
        Err(e) => return serde_json::json!({ "error": e.to_string() }),
    };
    let tried: serde_json::Map<String, serde_json::Value> = p
        .answers
        .iter()
        .map(|(name, a)| {
            let v = match a {
                Answer::Allowed => serde_json::json!({ "allowed": true, "where": "own cgroup" }),
                Answer::AllowedThere => serde_json::json!({
                    "allowed": true,
                    "where": p.tried_in.as_ref().map(|d| d.display().to_string()),
                }),
                Answer::Refused(e) => serde_json::json!({
                    "allowed": false,
                    "errno": e,
                    "error": std::io::Error::from_raw_os_error(*e).to_string(),
                }),
            };
            (name.to_string(), v)
        })
        .collect();
    let cgroup = p.cgroup.as_ref().map(|c| {
        serde_json::json!({
            "path": c.rel,
            "dir": c.dir,
            "hierarchy": if c.v2 { "v2" } else { "v1 cpu" },
            "rt_runtime_us": c.rt_runtime_us,
        })
    });
    serde_json::json!({ "tried": tried, "cpu_cgroup": cgroup })
}

/// `env`'s line on this process's cpu cgroup and the RT runtime it holds, if it has one.
pub fn cgroup_line(root: &Root) -> Option<String> {
    let c = schedlab_sys::probe::cpu_cgroup(root)?;
    Some(format!(
        "{} ({}){}",
        c.dir.display(),
        if c.v2 { "v2" } else { "v1" },
        c.rt_runtime_us
            .map(|r| format!(", cpu.rt_runtime_us {r} (RT group scheduling)"))
            .unwrap_or_default()
    ))
}

/// sched_ext for `env --json`: present, its state and the scheduler loaded.
pub fn scx_json(root: &Root) -> serde_json::Value {
    let s = schedlab_sys::scx::facts(root, &[]);
    serde_json::json!({ "available": s.available, "state": s.available.then_some(s.state), "loaded": s.ops })
}

/// sched_ext for `env`: whether a `cpu_scheduler = ["scx:NAME"]` cell can run here.
pub fn scx_line(root: &Root) -> String {
    let s = schedlab_sys::scx::facts(root, &[]);
    match (s.available, s.ops) {
        (false, _) => "no: /sys/kernel/sched_ext is absent (Linux 6.12+ with CONFIG_SCHED_CLASS_EXT); only cpu_scheduler = eevdf".into(),
        (true, Some(ops)) => format!("yes, but {ops} is loaded (state {}): a run refuses scx cells until it is stopped", s.state),
        (true, None) => format!("yes (state {}){}", s.state, if s.may_load { "" } else { "; loading a scheduler needs root" }),
    }
}

/// The scheduler's per-process accounting (`Sample::oncpu_s` and the columns after it): which
/// files this kernel has, and why a column stays empty.
pub fn accounting_line(f: &schedlab_sys::procfs::AccountingFacts) -> String {
    let file = |has: bool, name: &str, what: &str| {
        if has {
            format!("{name} yes")
        } else {
            format!("{name} absent ({what} stay empty)")
        }
    };
    let info = match f.sched_info {
        Some(true) => "run_delay and timeslices counted (CONFIG_SCHED_INFO)",
        Some(false) => "CONFIG_SCHED_INFO off: run_delay and timeslices read 0",
        None => "run_delay and timeslices need CONFIG_SCHED_INFO (could not tell)",
    };
    format!(
        "{}; {}; {info}",
        file(f.schedstat, "/proc/PID/schedstat", "oncpu_s, run_delay_s, timeslices"),
        file(f.sched, "/proc/PID/sched", "migrations, sched_voluntary, sched_involuntary"),
    )
}

/// The nice this process's workers start at, and the lowest they may be given: any with
/// CAP_SYS_NICE, else what RLIMIT_NICE allows (the kernel keeps it as 20 - nice).
pub fn nice(caps: &schedlab_spec::Capabilities) -> String {
    let lowest = if caps.sys_nice {
        "any nice with CAP_SYS_NICE".to_string()
    } else {
        format!("RLIMIT_NICE {} allows nice >= {}", 20 - caps.min_nice, caps.min_nice)
    };
    format!("{} now (workers start at it); {lowest}", caps.nice)
}

/// Each knob a spec may hold or sweep, as `env` lists it: its name and its value now (with
/// the values it offers, and whether this user may write it), or why it cannot be used here.
pub fn knob_lines(root: &schedlab_sys::Root) -> Vec<String> {
    use schedlab_spec::KnobFact;
    let names: Vec<String> =
        schedlab_spec::knob::known_names().into_iter().filter(|n| !n.ends_with(".NAME")).collect();
    schedlab_sys::knobs::facts(root, &names)
        .into_iter()
        .map(|(name, fact)| {
            let what = match fact {
                KnobFact::Present { value, offered, unwritable, .. } => format!(
                    "{value}{}{}",
                    if offered.is_empty() {
                        String::new()
                    } else {
                        format!(" (offers {})", offered.join(", "))
                    },
                    if unwritable.is_none() { "" } else { ", not writable by this user" }
                ),
                KnobFact::Missing(why) => format!("not in this kernel ({why})"),
                KnobFact::Unusable(why) => format!("unusable: {why}"),
            };
            format!("  {name:<38} {what}")
        })
        .collect()
}
