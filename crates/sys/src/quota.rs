//! The limits on this process's cpu cgroup path that shape what a run measures, the
//! throttling they cause, and the way out for a run.
//!
//! A CFS quota (v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`, v2 `cpu.max`: docker `--cpus`,
//! systemd `CPUQuota=`) caps the CPU time of every task below the cgroup that sets it, and an
//! RT runtime below the machine's (v1 `cpu.rt_runtime_us` under RT group scheduling) caps its
//! real-time tasks; both bind along the whole path of ancestors, so [`limits`] names the
//! tightest of each. `cpu.stat` counts the quota's throttling ([`CpuStat`]); the kernel keeps
//! no such count for RT runtime. [`escape_target`] says where a run may move its engine (and
//! so its workers) out of them, [`escape`] moves it, journaled.

use crate::journal::Journal;
use crate::probe::CpuCgroup;
use crate::{Root, SysError};
use schedlab_model::{Limit, LimitKind};
use std::io;
use std::path::{Path, PathBuf};

/// The tightest CPU quota and the tightest RT runtime below the machine's on this process's
/// cpu cgroup and its ancestors (the hierarchy's root included: a container's limit is set
/// there), for a process that may run on `cpus` CPUs. A quota of `cpus` or more limits
/// nothing; an RT runtime of 0 is the policy probe's (no real-time at all, see `probe`).
pub fn limits(root: &Root) -> Vec<Limit> {
    let Some(c) = crate::probe::cpu_cgroup(root) else { return Vec::new() };
    let cpus = crate::cpus::affinity_self().len().max(1);
    let global = root
        .read_parse::<i64>("/proc/sys/kernel/sched_rt_runtime_us")
        .zip(root.read_parse::<i64>("/proc/sys/kernel/sched_rt_period_us"));
    limits_of(&c, cpus, global)
}

/// [`limits`] of the cgroup `c` for `cpus` CPUs, the machine's RT runtime being `global`
/// (sched_rt_runtime_us, sched_rt_period_us; runtime -1: unlimited).
pub fn limits_of(c: &CpuCgroup, cpus: usize, global: Option<(i64, i64)>) -> Vec<Limit> {
    let global_share = match global {
        Some((r, p)) if r >= 0 && p > 0 => r as f64 / p as f64,
        _ => f64::INFINITY,
    };
    let mut quota: Option<Limit> = None;
    let mut rt: Option<Limit> = None;
    let tighter = |kept: &Option<Limit>, k: &LimitKind| {
        kept.as_ref().is_none_or(|l: &Limit| k.share() < l.kind.share())
    };
    for dir in path_up(&c.dir, &c.hierarchy_root) {
        if let Some(k) = quota_of(&dir).filter(|k| k.share() < cpus as f64) {
            if tighter(&quota, &k) {
                quota = Some(Limit { kind: k, cgroup: dir.clone(), lifted: None });
            }
        }
        if let Some(k) = rt_runtime_of(&dir).filter(|k| k.share() > 0.0 && k.share() < global_share)
        {
            if tighter(&rt, &k) {
                rt = Some(Limit { kind: k, cgroup: dir, lifted: None });
            }
        }
    }
    quota.into_iter().chain(rt).collect()
}

/// `dir` and its ancestors up to `top`, nearest first (only `dir` when it is not below `top`).
fn path_up(dir: &Path, top: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    let mut d = dir;
    while d != top && d.starts_with(top) {
        match d.parent() {
            Some(p) => {
                out.push(p.to_path_buf());
                d = p;
            }
            None => break,
        }
    }
    out
}

/// The CPU quota `dir` sets itself, if it sets one.
pub fn quota_of(dir: &Path) -> Option<LimitKind> {
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
    if let Some(max) = read("cpu.max") {
        let mut w = max.split_whitespace();
        let (quota, period) = (w.next()?, w.next()?);
        return Some(LimitKind::CpuQuota {
            quota_us: quota.parse().ok()?,
            period_us: period.parse().ok()?,
            v2: true,
        });
    }
    let quota: i64 = read("cpu.cfs_quota_us")?.trim().parse().ok()?;
    let period: u64 = read("cpu.cfs_period_us")?.trim().parse().ok()?;
    Some(LimitKind::CpuQuota { quota_us: u64::try_from(quota).ok()?, period_us: period, v2: false })
}

/// The RT runtime `dir` holds under RT group scheduling (v1), if it has one and a limit.
fn rt_runtime_of(dir: &Path) -> Option<LimitKind> {
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok()?.trim().parse::<i64>().ok();
    let runtime = u64::try_from(read("cpu.rt_runtime_us")?).ok()?;
    let period = u64::try_from(read("cpu.rt_period_us")?).ok()?;
    Some(LimitKind::RtRuntime { runtime_us: runtime, period_us: period })
}

/// The cgroups that set a CPU quota from `dir` up to `top`, both included, nearest first:
/// where the throttling of tasks in `dir` is counted.
pub fn quota_chain(dir: &Path, top: &Path) -> Vec<PathBuf> {
    path_up(dir, top).into_iter().filter(|d| quota_of(d).is_some()).collect()
}

/// A cgroup's CFS bandwidth counters (`cpu.stat`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuStat {
    /// Enforcement periods that elapsed with tasks runnable (`nr_periods`).
    pub periods: u64,
    /// Periods in which the cgroup was throttled (`nr_throttled`).
    pub throttled_periods: u64,
    /// Time throttled, ns (v1 `throttled_time` ns, v2 `throttled_usec` µs).
    pub throttled_ns: u64,
}

impl CpuStat {
    /// The counters of `dir`'s `cpu.stat`, if it has them.
    pub fn read(dir: &Path) -> Option<CpuStat> {
        let text = std::fs::read_to_string(dir.join("cpu.stat")).ok()?;
        let mut s = CpuStat::default();
        let mut seen = false;
        for line in text.lines() {
            let mut w = line.split_whitespace();
            let (Some(k), Some(v)) = (w.next(), w.next().and_then(|v| v.parse::<u64>().ok()))
            else {
                continue;
            };
            match k {
                "nr_periods" => (s.periods, seen) = (v, true),
                "nr_throttled" => s.throttled_periods = v,
                "throttled_time" => s.throttled_ns = v,
                "throttled_usec" => s.throttled_ns = v.saturating_mul(1000),
                _ => {}
            }
        }
        seen.then_some(s)
    }

    /// What happened since `before`.
    pub fn since(&self, before: &CpuStat) -> CpuStat {
        CpuStat {
            periods: self.periods.saturating_sub(before.periods),
            throttled_periods: self.throttled_periods.saturating_sub(before.throttled_periods),
            throttled_ns: self.throttled_ns.saturating_sub(before.throttled_ns),
        }
    }
}

/// Where a run moves its engine to leave the limits behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escape {
    /// This process's cpu cgroup now.
    pub from: PathBuf,
    /// The cgroup it moves into for the run.
    pub to: PathBuf,
    /// `to` is schedlab's own, made for the run and removed after it.
    pub owned: bool,
}

/// Where a run may move its engine out of `limits` (None: there are none), or why it may
/// not. A cgroup of schedlab's own (`schedlab/engine-PID` under the hierarchy's root), except
/// under v1 RT group scheduling: a new cgroup there holds no RT runtime, so the engine (at
/// SCHED_FIFO 99) and its real-time workers could not run in it, and only the hierarchy's
/// root holds the machine's; the engine goes there, as the real-time placement does.
pub fn escape_target(root: &Root, limits: &[Limit]) -> Result<Option<Escape>, SysError> {
    if limits.iter().all(|l| l.lifted.is_some()) {
        return Ok(None);
    }
    let Some(c) = crate::probe::cpu_cgroup(root) else {
        return Err(SysError::refused(
            "this process's cpu cgroup cannot be read from /proc/self/cgroup",
        ));
    };
    if let Some(l) = limits.iter().find(|l| l.cgroup == c.hierarchy_root) {
        return Err(SysError::refused(format!(
            "the limit is set on {}, the root of the cpu hierarchy as this process sees it (a container's own limit): only the host can lift it",
            l.cgroup.display()
        )));
    }
    let rt_groups = !c.v2 && c.hierarchy_root.join("cpu.rt_runtime_us").exists();
    let ours = c.hierarchy_root.join("schedlab");
    let (to, owned) = if rt_groups {
        (c.hierarchy_root.clone(), false)
    } else {
        (ours.join(format!("engine-{}", std::process::id())), true)
    };
    let procs = c.hierarchy_root.join("cgroup.procs");
    let made_in = if ours.is_dir() { ours } else { c.hierarchy_root.clone() };
    for need in std::iter::once(&procs).chain(owned.then_some(&made_in)) {
        if !crate::env::may_write(need) {
            return Err(SysError::refused(format!(
                "moving the engine out of the limited cgroup writes {}, which this process may not (root, or a delegated cgroup)",
                need.display()
            )));
        }
    }
    Ok(Some(Escape { from: c.dir, to, owned }))
}

/// Moves this process (every thread) as `e` says, each step journaled first: schedlab's own
/// cgroup is made (and removed by the undo once the engine is back), and the undo writes the
/// engine back into `e.from`. Call it before the engine raises its priority, as `probe::place`.
pub fn escape(journal: &mut Journal, e: &Escape) -> io::Result<()> {
    if e.owned {
        let (Some(name), Some(base)) = (e.to.file_name(), e.to.parent().and_then(Path::parent))
        else {
            return Err(io::Error::other(format!("no cgroup to make at {}", e.to.display())));
        };
        crate::cgroup::make(journal, base, &name.to_string_lossy())?;
    }
    crate::probe::move_engine(journal, &e.from, &e.to)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> PathBuf {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("schedlab-quota-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        crate::fake::put_all(&dir, files);
        dir
    }

    fn cgroup(dir: &Path, rel: &str, v2: bool) -> CpuCgroup {
        let hierarchy_root = dir.join(if v2 { "sys/fs/cgroup" } else { "sys/fs/cgroup/cpu" });
        CpuCgroup {
            dir: hierarchy_root.join(rel.trim_start_matches('/')),
            rel: rel.into(),
            hierarchy_root,
            v2,
            rt_runtime_us: None,
        }
    }

    #[test]
    fn the_tightest_quota_on_the_path_is_named_and_a_quota_of_every_cpu_is_none() {
        let dir = tree(&[
            ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n"),
            ("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n"),
            ("/sys/fs/cgroup/cpu/a/cpu.cfs_quota_us", "50000\n"),
            ("/sys/fs/cgroup/cpu/a/cpu.cfs_period_us", "100000\n"),
            ("/sys/fs/cgroup/cpu/a/b/cpu.cfs_quota_us", "150000\n"),
            ("/sys/fs/cgroup/cpu/a/b/cpu.cfs_period_us", "100000\n"),
            ("/sys/fs/cgroup/cpu/c/cpu.cfs_quota_us", "400000\n"),
            ("/sys/fs/cgroup/cpu/c/cpu.cfs_period_us", "100000\n"),
        ]);
        let c = cgroup(&dir, "/a/b", false);
        let l = limits_of(&c, 2, Some((950_000, 1_000_000)));
        assert_eq!(l.len(), 1, "{l:?}");
        assert_eq!(l[0].cgroup, c.hierarchy_root.join("a"), "the parent's half CPU binds");
        assert_eq!(
            l[0].kind,
            LimitKind::CpuQuota { quota_us: 50_000, period_us: 100_000, v2: false }
        );
        assert_eq!(
            quota_chain(&c.dir, &c.hierarchy_root),
            vec![c.dir.clone(), c.hierarchy_root.join("a")]
        );
        assert!(
            limits_of(&cgroup(&dir, "/c", false), 2, None).is_empty(),
            "4 CPUs of 2 limit nothing"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_v2_cpu_max_and_a_containers_root_quota_are_limits() {
        let dir = tree(&[
            ("/sys/fs/cgroup/cpu.max", "50000 100000\n"),
            ("/sys/fs/cgroup/x/cpu.max", "max 100000\n"),
        ]);
        let c = cgroup(&dir, "/x", true);
        let l = limits_of(&c, 2, None);
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].cgroup, c.hierarchy_root);
        assert_eq!(
            l[0].kind,
            LimitKind::CpuQuota { quota_us: 50_000, period_us: 100_000, v2: true }
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_rt_runtime_below_the_machines_is_a_limit_and_none_is_the_probes() {
        let dir = tree(&[
            ("/sys/fs/cgroup/cpu/cpu.rt_runtime_us", "950000\n"),
            ("/sys/fs/cgroup/cpu/cpu.rt_period_us", "1000000\n"),
            ("/sys/fs/cgroup/cpu/x/cpu.rt_runtime_us", "300000\n"),
            ("/sys/fs/cgroup/cpu/x/cpu.rt_period_us", "1000000\n"),
            ("/sys/fs/cgroup/cpu/z/cpu.rt_runtime_us", "0\n"),
            ("/sys/fs/cgroup/cpu/z/cpu.rt_period_us", "1000000\n"),
        ]);
        let global = Some((950_000, 1_000_000));
        let c = cgroup(&dir, "/x", false);
        let l = limits_of(&c, 2, global);
        assert_eq!(l.len(), 1, "{l:?}");
        assert_eq!(l[0].kind, LimitKind::RtRuntime { runtime_us: 300_000, period_us: 1_000_000 });
        assert_eq!(l[0].cgroup, c.dir);
        assert!(limits_of(&cgroup(&dir, "/z", false), 2, global).is_empty());
        assert!(
            limits_of(&cgroup(&dir, "/", false), 2, global).is_empty(),
            "the root is the machine's"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn cpu_stat_reads_v1_nanoseconds_and_v2_microseconds() {
        let dir = tree(&[
            (
                "/v1/cpu.stat",
                "nr_periods 60\nnr_throttled 51\nthrottled_time 2450000000\nnr_bursts 0\n",
            ),
            ("/v2/cpu.stat", "usage_usec 9\nnr_periods 7\nnr_throttled 3\nthrottled_usec 1500\n"),
            ("/none/cpu.stat", "usage_usec 9\n"),
        ]);
        let v1 = CpuStat::read(&dir.join("v1")).unwrap();
        assert_eq!(v1, CpuStat { periods: 60, throttled_periods: 51, throttled_ns: 2_450_000_000 });
        let v2 = CpuStat::read(&dir.join("v2")).unwrap();
        assert_eq!(v2.throttled_ns, 1_500_000);
        assert_eq!(
            v1.since(&v2),
            CpuStat { periods: 53, throttled_periods: 48, throttled_ns: 2_448_500_000 }
        );
        assert_eq!(CpuStat::read(&dir.join("none")), None, "no bandwidth counters");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_escape_into_schedlabs_own_cgroup_is_undone_and_leaves_no_cgroup() {
        let me = std::process::id();
        let dir = tree(&[
            ("/proc/self/cgroup", "0::/limited\n"),
            ("/sys/fs/cgroup/cgroup.controllers", "cpu\n"),
            ("/sys/fs/cgroup/cgroup.procs", ""),
            ("/sys/fs/cgroup/limited/cpu.max", "50000 100000\n"),
            ("/sys/fs/cgroup/limited/cgroup.procs", ""),
        ]);
        let root = Root::new(&dir);
        let limits = crate::quota::limits(&root);
        assert_eq!(limits.len(), 1, "{limits:?}");
        let e = escape_target(&root, &limits).unwrap().expect("somewhere to go");
        let cg = dir.join("sys/fs/cgroup");
        assert_eq!((e.from.clone(), e.owned), (cg.join("limited"), true));
        assert_eq!(e.to, cg.join(format!("schedlab/engine-{me}")));
        let mut j = Journal::create(&dir.join("state")).unwrap();
        escape(&mut j, &e).unwrap();
        assert_eq!(std::fs::read_to_string(e.to.join("cgroup.procs")).unwrap(), me.to_string());
        assert!(j.close().is_empty());
        assert_eq!(
            std::fs::read_to_string(cg.join("limited/cgroup.procs")).unwrap(),
            me.to_string()
        );
        assert!(!cg.join("schedlab").exists(), "schedlab's cgroups are gone");
        let lifted: Vec<Limit> =
            limits.into_iter().map(|l| Limit { lifted: Some(e.to.clone()), ..l }).collect();
        assert_eq!(escape_target(&root, &lifted).unwrap(), None, "nothing left to escape");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_limit_on_the_hierarchys_root_cannot_be_escaped() {
        let dir = tree(&[
            ("/proc/self/cgroup", "0::/\n"),
            ("/sys/fs/cgroup/cgroup.controllers", "cpu\n"),
            ("/sys/fs/cgroup/cpu.max", "50000 100000\n"),
        ]);
        let root = Root::new(&dir);
        let why = escape_target(&root, &limits(&root)).unwrap_err().to_string();
        assert!(why.contains("only the host can lift it"), "{why}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
