//! `schedlab env`: what this machine allows.

use schedlab_sys::{env, Root};
use std::process::ExitCode;

/// Arguments of `schedlab env`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

/// What `env` reports, read once.
struct Facts {
    root: Root,
    e: schedlab_model::Environment,
    caps: schedlab_spec::Capabilities,
    probe: std::io::Result<schedlab_sys::probe::Probe>,
    p: schedlab_session::machine::Powers,
    lim: schedlab_spec::MachineLimits,
    uid: u32,
    nproc: String,
    nofile: String,
    memlock: String,
    dma: std::io::Result<i32>,
    acct: schedlab_sys::procfs::AccountingFacts,
    floor: Option<schedlab_session::floor::Floors>,
}

/// Runs `schedlab env`.
pub fn run(db: &std::path::Path, a: Args) -> anyhow::Result<ExitCode> {
    let root = Root::default();
    let e = env::environment(&root);
    let floor = schedlab_session::floor::newest_in(db, &e);
    let (caps, probe) = env::capabilities_probed(&root);
    let f = Facts {
        caps,
        probe,
        p: schedlab_session::machine::powers(&root, &e),
        lim: schedlab_sys::limits::read(&root),
        // SAFETY: getuid has no failure mode.
        uid: unsafe { libc::getuid() },
        nproc: rlimit(libc::RLIMIT_NPROC),
        nofile: rlimit(libc::RLIMIT_NOFILE),
        memlock: rlimit(libc::RLIMIT_MEMLOCK),
        dma: schedlab_sys::pmqos::current(&schedlab_sys::pmqos::device(&root)),
        acct: schedlab_sys::procfs::accounting_facts(&root),
        floor,
        e,
        root,
    };
    if a.json {
        json(&f)?;
    } else {
        text(&f)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `env --json`.
fn json(f: &Facts) -> anyhow::Result<()> {
    let Facts { root, e, caps, probe, p, lim, uid, nproc, nofile, memlock, dma, acct, floor } = f;
    let v = serde_json::json!({
        "environment": e,
        "uid": uid,
        "cap_sys_nice": caps.sys_nice,
        "rlimit_rtprio": caps.rtprio_limit,
        "min_nice": caps.min_nice,
        "nice": caps.nice,
        "policies": schedlab_session::machine::policies(caps),
        "policy_probe": schedlab_session::machine::probe_json(probe),
        "rt_refused": caps.rt_refused,
        "deadline_refused": caps.deadline_refused,
        "rt_placement": caps.rt_placement.as_ref().map(|p| serde_json::json!({
            "from": p.from, "to": p.to, "why": p.why,
        })),
        "cgroups_writable": caps.cgroup_unwritable.is_none(),
        "cgroup_unwritable": caps.cgroup_unwritable,
        "iosched_devices": p.schedulers,
        "loop_devices": p.loop_devices,
        "cap_ipc_lock": p.ipc_lock,
        "rlimit_memlock": memlock,
        "rlimit_nproc": nproc,
        "rlimit_nproc_applies": lim.nproc.is_some(),
        "rlimit_nofile": nofile,
        "pid_max": lim.pid_max,
        "threads_max": lim.threads_max,
        "tasks_now": lim.tasks,
        "user_tasks_now": lim.user_tasks,
        "mem_available_kb": lim.mem_available_kib,
        "rt_throttling": env::rt_throttled(e),
        "limits": schedlab_session::limits::json(root, e),
        "cpu_dma_latency_us": dma.as_ref().ok(),
        "cpu_dma_latency_holdable": caps.cpu_dma_latency,
        "sched_ext": schedlab_session::machine::scx_json(root),
        "proc_schedstat": acct.schedstat,
        "proc_sched": acct.sched,
        "config_sched_info": acct.sched_info,
        "state_dir": schedlab_sys::journal::state_dir(),
        "noise_floor": floor.as_ref().map(|f| serde_json::json!({
            "run": f.run_id, "created_unix": f.created_unix, "pairs": f.floors.len(),
        })),
    });
    outln!("{}", serde_json::to_string_pretty(&v)?);
    Ok(())
}

/// `env` as lines.
fn text(f: &Facts) -> anyhow::Result<()> {
    let Facts { e, caps, p, uid, memlock, .. } = f;
    let uid = *uid;
    let yes = |b: bool| if b { "yes" } else { "no" };
    let m = &e.machine;
    let or_none = |v: &Option<String>| v.clone().unwrap_or_else(|| "none".into());
    outln!("host             {} (machine id sha256 {})", m.hostname, m.machine_id_sha256);
    outln!("kernel           {} ({})", e.kernel, e.kernel_version);
    outln!("command line     {}", m.cmdline);
    outln!("cpu              {} x {}", e.cpus, e.cpu_model);
    outln!("SMT              {}; microcode {}", or_none(&m.smt), or_none(&m.microcode));
    outln!(
        "clocksource      {}; cpuidle driver {}",
        or_none(&m.clocksource),
        or_none(&m.cpuidle_driver)
    );
    outln!("memory           {} MiB", e.mem_total_kb.map(|k| k / 1024).unwrap_or(0));
    outln!(
        "HZ               {}",
        e.hz.map(|h| h.to_string()).unwrap_or_else(|| "unknown (no /boot/config)".into())
    );
    outln!("uid              {uid}{}", if uid == 0 { " (root)" } else { "" });
    outln!("CAP_SYS_NICE     {}  (needed for fifo/rr above RLIMIT_RTPRIO, deadline, a nice below this process's)", yes(caps.sys_nice));
    outln!("RLIMIT_RTPRIO    {}", caps.rtprio_limit);
    outln!("nice             {}", schedlab_session::machine::nice(caps));
    outln!("policies allowed {}", schedlab_session::machine::policies(caps).join("; "));
    if let Some(line) = schedlab_session::machine::cgroup_line(&f.root) {
        outln!("own cpu cgroup   {line}");
    }
    outln!("limits           {}", schedlab_session::limits::env_line(&f.root, e));
    outln!(
        "cgroups          {}",
        match &caps.cgroup_unwritable {
            None => "yes (cpu_weight, cpu_max, cpuset)".to_string(),
            Some(d) =>
                format!("no: needs write access to {d} (root, or a cgroup delegated to this user)"),
        }
    );
    outln!(
        "I/O schedulers   {}",
        if p.schedulers.is_empty() {
            format!(
                "no: none of the {} queue/scheduler files in /sys/block is writable (root)",
                p.devices
            )
        } else {
            format!("yes: {}", p.schedulers.join(", "))
        }
    );
    outln!(
        "loop devices     {}",
        if p.loop_devices { "yes" } else { "no: needs CAP_SYS_ADMIN and /dev/loop-control (root)" }
    );
    outln!("locked memory    CAP_IPC_LOCK {}, RLIMIT_MEMLOCK {memlock} bytes (the live dispatchers lock theirs)", yes(p.ipc_lock));
    outln!("noise floor      {}", floor_line(f.floor.as_ref(), "this machine"));
    limits(f)
}

/// `env`'s lines on the machine's limits, clocks and knobs.
fn limits(f: &Facts) -> anyhow::Result<()> {
    let Facts { root, e, caps, lim, nproc, nofile, dma, acct, .. } = f;
    let opt = |v: Option<i64>| v.map(|x| x.to_string()).unwrap_or_else(|| "unknown".into());
    let num = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_else(|| "unknown".into());
    let m = &e.machine;
    outln!(
        "kernel.pid_max   {} ({} processes and threads running now)",
        num(lim.pid_max),
        num(lim.tasks)
    );
    outln!("threads-max      {}", num(lim.threads_max));
    outln!(
        "RLIMIT_NPROC     {nproc} ({}this user's processes and threads now: {})",
        if lim.nproc.is_none() && nproc != "unlimited" { "not applied to root; " } else { "" },
        num(lim.user_tasks)
    );
    outln!("RLIMIT_NOFILE    {}", nofile);
    outln!("sched_ext        {}", schedlab_session::machine::scx_line(root));
    outln!("per-process acct {}", schedlab_session::machine::accounting_line(acct));
    outln!(
        "MemAvailable     {} MiB",
        lim.mem_available_kib.map(|k| (k / 1024).to_string()).unwrap_or_else(|| "unknown".into())
    );
    outln!(
        "RT throttling    {} (sched_rt_runtime_us {} / sched_rt_period_us {})",
        if env::rt_throttled(e) { "on" } else { "OFF: real-time cells need --allow-unthrottled" },
        opt(e.rt_runtime_us),
        opt(e.rt_period_us)
    );
    outln!(
        "cpu_dma_latency  {}; {}",
        match &dma {
            Ok(us) => format!("{us} us in force now"),
            Err(e) => format!("unknown ({e})"),
        },
        if caps.cpu_dma_latency {
            "real-time and periodic cells hold it at 0 us while they run (spec: cpu_dma_latency)"
        } else {
            "real-time cells cannot hold it (only root may open /dev/cpu_dma_latency)"
        }
    );
    outln!("RR timeslice     {} ms", opt(e.rr_timeslice_ms));
    outln!(
        "autogroup        {}",
        e.autogroup
            .map(|a| if a { "on (nice acts within a session's group)" } else { "off" })
            .unwrap_or("unknown")
    );
    outln!("governor         {}", e.governor.as_deref().unwrap_or("none (no cpufreq)"));
    outln!(
        "cgroup layout    {} (schedlab uses: {})",
        e.cgroup,
        schedlab_sys::cgroup::detect(root).map(|h| h.describe()).unwrap_or_else(|| "none".into())
    );
    outln!(
        "online CPUs      {}",
        schedlab_spec::cpulist::format(&schedlab_sys::cpus::online(root))
    );
    outln!("block devices    {}", e.io_devices.join(", "));
    outln!("schedlab         {}", e.tool_version);
    let sched: Vec<String> = m.sched_knobs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    outln!("kernel.sched_*   {}", sched.join(" "));
    outln!(
        "restore journals {} (what a run changed on this machine, kept until it is undone; SCHEDLAB_STATE_DIR moves them)",
        schedlab_sys::journal::state_dir().display()
    );
    print_knobs(root)?;
    Ok(())
}

/// Each knob a spec may hold or sweep, with its value now or why it cannot be used here.
fn print_knobs(root: &Root) -> anyhow::Result<()> {
    outln!("knobs            ([knobs], [matrix.knobs]; sched.features.NAME for each name in <debugfs>/sched/features)");
    for line in schedlab_session::machine::knob_lines(root) {
        outln!("{line}");
    }
    Ok(())
}

fn rlimit(res: libc::__rlimit_resource_t) -> String {
    match env::soft_limit(res) {
        libc::RLIM_INFINITY => "unlimited".into(),
        n => n.to_string(),
    }
}

/// The newest noise floor's line, as `env` and `show` say it (`whose`: of which machine).
pub fn floor_line(f: Option<&schedlab_session::floor::Floors>, whose: &str) -> String {
    let age = f.map(|f| f.age(schedlab_session::now_unix()));
    schedlab_report::verdicts::floor_line(
        f.zip(age.as_deref()).map(|(f, age)| (f.run_id, age, f.floors.len())),
        whose,
    )
}
