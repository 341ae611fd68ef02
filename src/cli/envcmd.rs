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

/// Runs `schedlab env`.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let root = Root::default();
    let e = env::environment(&root);
    let caps = env::capabilities(&root);
    // SAFETY: getuid has no failure mode.
    let uid = unsafe { libc::getuid() };
    let nproc = rlimit(libc::RLIMIT_NPROC);
    let nofile = rlimit(libc::RLIMIT_NOFILE);
    if a.json {
        let v = serde_json::json!({
            "environment": e,
            "uid": uid,
            "cap_sys_nice": caps.sys_nice,
            "rlimit_rtprio": caps.rtprio_limit,
            "min_nice": caps.min_nice,
            "rlimit_nproc": nproc,
            "rlimit_nofile": nofile,
            "rt_throttling": env::rt_throttled(&e),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    let yes = |b: bool| if b { "yes" } else { "no" };
    let opt = |v: Option<i64>| v.map(|x| x.to_string()).unwrap_or_else(|| "unknown".into());
    println!("kernel           {} ({})", e.kernel, e.kernel_version);
    println!("cpu              {} x {}", e.cpus, e.cpu_model);
    println!("memory           {} MiB", e.mem_total_kb.map(|k| k / 1024).unwrap_or(0));
    println!("HZ               {}", e.hz.map(|h| h.to_string()).unwrap_or_else(|| "unknown (no /boot/config)".into()));
    println!("uid              {uid}{}", if uid == 0 { " (root)" } else { "" });
    println!("CAP_SYS_NICE     {}  (needed for fifo/rr above RLIMIT_RTPRIO, deadline, negative nice)", yes(caps.sys_nice));
    println!("RLIMIT_RTPRIO    {}", caps.rtprio_limit);
    println!("lowest nice      {}", if caps.sys_nice { -20 } else { caps.min_nice });
    println!("RLIMIT_NPROC     {}", nproc);
    println!("RLIMIT_NOFILE    {}", nofile);
    let allowed: Vec<&str> = ["other", "batch", "idle"]
        .into_iter()
        .chain(if caps.sys_nice || caps.rtprio_limit > 0 { vec!["fifo", "rr"] } else { vec![] })
        .chain(if caps.sys_nice { vec!["deadline"] } else { vec![] })
        .collect();
    println!("policies allowed {}", allowed.join(", "));
    println!(
        "RT throttling    {} (sched_rt_runtime_us {} / sched_rt_period_us {})",
        if env::rt_throttled(&e) { "on" } else { "OFF: real-time cells need --allow-unthrottled" },
        opt(e.rt_runtime_us),
        opt(e.rt_period_us)
    );
    println!("RR timeslice     {} ms", opt(e.rr_timeslice_ms));
    println!(
        "autogroup        {}",
        e.autogroup.map(|a| if a { "on (nice acts within a session's group)" } else { "off" }).unwrap_or("unknown")
    );
    println!("governor         {}", e.governor.as_deref().unwrap_or("none (no cpufreq)"));
    println!(
        "cgroups          {} (schedlab uses: {})",
        e.cgroup,
        schedlab_sys::cgroup::detect(&root).map(|h| h.describe()).unwrap_or_else(|| "none".into())
    );
    println!("online CPUs      {}", schedlab_spec::cpulist::format(&schedlab_sys::cpus::online(&root)));
    println!("block devices    {}", e.io_devices.join(", "));
    println!("schedlab         {}", e.tool_version);
    Ok(ExitCode::SUCCESS)
}

fn rlimit(res: libc::__rlimit_resource_t) -> String {
    match env::soft_limit(res) {
        libc::RLIM_INFINITY => "unlimited".into(),
        n => n.to_string(),
    }
}
