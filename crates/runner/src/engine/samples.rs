//! From what was reaped and reported to the cell's samples, and the warnings they raise.

use super::periodic::RtSet;
use super::reap::Reaped;
use super::spawn::Worker;
use super::CellCtx;
use crate::protocol::Report;
use schedlab_model::jobs::JobLog;
use schedlab_model::{Extra, Sample};
use schedlab_plan::{Cell, Group, Workload};
use schedlab_sys::procfs::tv_secs;
use std::collections::HashMap;
use std::path::Path;

/// Warnings for what workers saw that differs from what was applied.
pub(super) fn check_samples(cx: &mut CellCtx, cell: &Cell, samples: &[Sample]) {
    for s in samples {
        let g = cell.groups.iter().find(|g| g.name == s.group).expect("sample of a known group");
        let expect = g.policy.class.name();
        // Tasks of a periodic set each have their own policy (and edf/dwcs ones change it).
        if g.workload.periodic().is_some() {
            continue;
        }
        if let Some(seen) = s.extra.policy.as_deref().filter(|p| *p != expect) {
            cx.warnings.push(format!(
                "cell {}: worker {} ran under \"{seen}\" although {} was applied",
                cell.key, s.index, expect
            ));
            break;
        }
        if !s.allowed_cpus.is_empty() && s.cpus_seen.iter().any(|c| !s.allowed_cpus.contains(c)) {
            cx.warnings.push(format!(
                "cell {}: worker {} pinned to {:?} was seen on {:?}",
                cell.key, s.index, s.allowed_cpus, s.cpus_seen
            ));
        }
    }
    for s in samples {
        if let Some(e) = &s.extra.error {
            cx.warnings.push(format!("cell {}: worker {} failed: {e:?}", cell.key, s.index));
        }
    }
}

/// One worker's sample: wait4's accounting, its own report (if it wrote one) and offsets
/// from the release.
pub(super) fn sample(
    r: &Reaped,
    w: &Worker,
    g: &Group,
    rep: Option<&Report>,
    release_ns: u64,
    bg_window: Option<&f64>,
) -> Sample {
    let st = r.status;
    let (exit_code, signal) = if libc::WIFEXITED(st) {
        (Some(libc::WEXITSTATUS(st)), None)
    } else if libc::WIFSIGNALED(st) {
        (None, Some(libc::WTERMSIG(st)))
    } else {
        (None, None)
    };
    let engine_wall = (r.at_ns.saturating_sub(release_ns)) as f64 * 1e-9;
    let user = tv_secs(r.ru.ru_utime);
    let sys = tv_secs(r.ru.ru_stime);
    let is_exec = matches!(g.workload, Workload::Command { .. });
    // A worker's own clock brackets its work; an exec'd command ends when it is reaped.
    // Offsets are signed: background workers start before the release.
    let off = |t: u64| (t as f64 - release_ns as f64) * 1e-9;
    let (start_off, end_off, wall) = match rep {
        Some(p) if p.start_ns > 0 && !is_exec && p.end_ns >= p.start_ns && p.error.is_none() => {
            (off(p.start_ns), off(p.end_ns), (p.end_ns - p.start_ns) as f64 * 1e-9)
        }
        Some(p) if p.start_ns > 0 => (off(p.start_ns), engine_wall, engine_wall - off(p.start_ns)),
        _ => (0.0, engine_wall, engine_wall),
    };
    let setup_cpu = rep.map(|p| p.setup[0] + p.setup[1]).unwrap_or(0.0);
    let extra = match rep {
        Some(p) => Extra {
            policy: Some(p.policy.clone()),
            nice: Some(p.nice),
            cpu: Some(p.cpu),
            detail: p.detail.clone(),
            error: p.error.clone(),
            rt: p.rt.clone(),
            bench: p.bench.clone(),
            ..Default::default()
        },
        None => Extra::default(),
    };
    Sample {
        index: w.index,
        group: g.name.clone(),
        background: g.background,
        allowed_cpus: w.allowed.clone(),
        cpus_seen: rep.map(|p| p.cpus.clone()).unwrap_or_default(),
        pid: r.pid,
        exit_code,
        signal,
        timed_out: r.timed_out,
        wall_s: wall,
        engine_wall_s: engine_wall,
        user_s: user,
        sys_s: sys,
        // CPU share of the work itself: the exec and setup before the release are not in `wall`.
        cpu_pct: if wall > 0.0 { ((user + sys) - setup_cpu).max(0.0) / wall * 100.0 } else { 0.0 },
        voluntary_csw: r.ru.ru_nvcsw,
        involuntary_csw: r.ru.ru_nivcsw,
        max_rss_kb: r.ru.ru_maxrss,
        minor_faults: r.ru.ru_minflt,
        major_faults: r.ru.ru_majflt,
        block_in: r.ru.ru_inblock,
        block_out: r.ru.ru_oublock,
        oncpu_s: r.sched.oncpu_ns.map(|ns| ns as f64 * 1e-9),
        run_delay_s: r.sched.run_delay_ns.map(|ns| ns as f64 * 1e-9),
        timeslices: r.sched.timeslices.map(|n| n as i64),
        migrations: r.sched.migrations.map(|n| n as i64),
        sched_voluntary: r.sched.voluntary.map(|n| n as i64),
        sched_involuntary: r.sched.involuntary.map(|n| n as i64),
        setup_user_s: rep.map(|p| p.setup[0]).unwrap_or(0.0),
        setup_sys_s: rep.map(|p| p.setup[1]).unwrap_or(0.0),
        setup_voluntary_csw: rep.map(|p| p.setup[2] as i64).unwrap_or(0),
        setup_involuntary_csw: rep.map(|p| p.setup[3] as i64).unwrap_or(0),
        window_cpu_s: match bg_window {
            Some(w) => *w,
            None if g.background => 0.0,
            None => (user + sys - setup_cpu).max(0.0),
        },
        work_units: rep.map(|p| if is_exec { 1.0 } else { p.units }).unwrap_or(0.0),
        start_offset_s: start_off,
        end_offset_s: end_off,
        extra,
        jobs: rep.and_then(|p| p.jobs.clone()),
    }
}

/// The workers' reports by index from their lines (a long one read from the file its line
/// names); an unreadable line becomes a warning.
pub(super) fn parse_reports(
    lines: &[String],
    key: &str,
    warnings: &mut Vec<String>,
) -> HashMap<u32, Report> {
    let mut reports: HashMap<u32, Report> = HashMap::new();
    for l in lines {
        let parsed = serde_json::from_str::<Report>(l).and_then(|r| match &r.spill {
            // A long report went to a file; the line only points at it.
            Some(p) => std::fs::read(p)
                .map_err(serde_json::Error::io)
                .and_then(|b| serde_json::from_slice::<Report>(&b)),
            None => Ok(r),
        });
        match parsed {
            Ok(r) => {
                // A command reports at its start; keep the first report per index.
                reports.entry(r.i).or_insert(r);
            }
            Err(e) => warnings.push(format!("cell {key}: unreadable worker report ({e}): {l}")),
        }
    }
    reports
}

/// Reads the output of each measured command worker whose output is parsed (its stdout and
/// stderr files in the cell's directory `dir`) into its sample's benchmark figures, keeping
/// the text with them; the reasons the repetition fails for outputs that did not parse.
pub(super) fn parse_outputs(cell: &Cell, dir: &Path, samples: &mut [Sample]) -> Vec<String> {
    let mut reasons = Vec::new();
    for s in samples.iter_mut().filter(|s| !s.background) {
        let g = cell.groups.iter().find(|g| g.name == s.group).expect("sample of a known group");
        let Workload::Command { parse: Some(parser), .. } = &g.workload else { continue };
        let read = |ext: &str| {
            let b = std::fs::read(dir.join(format!("cmd-{}.{ext}", s.index))).unwrap_or_default();
            let from = b.len().saturating_sub(schedlab_model::bench::KEPT_OUTPUT_BYTES);
            String::from_utf8_lossy(&b[from..]).into_owned()
        };
        let (out, err) = (read("out"), read("err"));
        let output = Some(format!(
            "{out}{}{err}",
            if out.ends_with('\n') || out.is_empty() { "" } else { "\n" }
        ));
        let ran = s.exit_code == Some(0);
        s.extra.bench = Some(match crate::parse::parse(*parser, &out, &err) {
            Ok(f) => schedlab_model::BenchFigures { output, ..f },
            Err(e) => {
                // A program that failed says so already; its output is kept all the same.
                if ran {
                    reasons.push(format!("worker {}: {e}", s.index));
                }
                schedlab_model::BenchFigures {
                    source: parser.name().to_string(),
                    output,
                    ..Default::default()
                }
            }
        });
    }
    reasons
}

/// The last measured worker's end by its own clock, seconds after the release; None when
/// a measured worker has none (an exec'd command ends when it is reaped).
pub(super) fn own_end(cell: &Cell, samples: &[Sample]) -> Option<f64> {
    let exec = |s: &Sample| {
        cell.groups
            .iter()
            .any(|g| g.name == s.group && matches!(g.workload, Workload::Command { .. }))
    };
    let measured: Vec<&Sample> = samples.iter().filter(|s| !s.background).collect();
    if measured.is_empty() || measured.iter().any(|s| exec(s) || s.extra.policy.is_none()) {
        return None;
    }
    measured.iter().map(|s| s.end_offset_s).reduce(f64::max)
}

/// One sample per reaped worker (dispatchers have none), in index order.
pub(super) fn build(
    cell: &Cell,
    workers: &[Worker],
    reaped: &[Reaped],
    reports: &HashMap<u32, Report>,
    release_ns: u64,
    bg_window: &HashMap<i32, f64>,
) -> Vec<Sample> {
    let by_pid: HashMap<i32, &Worker> = workers.iter().map(|w| (w.pid, w)).collect();
    let mut samples: Vec<Sample> = reaped
        .iter()
        .filter_map(|r| {
            by_pid.get(&r.pid).map(|w| {
                sample(
                    r,
                    w,
                    &cell.groups[w.group],
                    reports.get(&w.index),
                    release_ns,
                    bg_window.get(&r.pid),
                )
            })
        })
        .collect();
    samples.sort_by_key(|s| s.index);
    samples
}

/// Each CPU's dispatcher metrics (None where none was written), and the dispatchers'
/// per-job records taken out of them: those go to the samples, not into the cell's rt_json.
pub(super) fn dispatcher_metrics(
    rt_set: Option<&RtSet>,
) -> (Vec<Option<schedlab_dispatch::Metrics>>, Vec<Vec<JobLog>>) {
    let mut metrics: Vec<Option<schedlab_dispatch::Metrics>> = match rt_set {
        Some(r) => r
            .parts
            .iter()
            .map(|p| std::fs::read(&p.metrics).ok().and_then(|b| serde_json::from_slice(&b).ok()))
            .collect(),
        None => Vec::new(),
    };
    let dispatch_logs: Vec<Vec<JobLog>> = metrics
        .iter_mut()
        .map(|m| m.as_mut().map(|m| std::mem::take(&mut m.job_logs)).unwrap_or_default())
        .collect();
    (metrics, dispatch_logs)
}

/// Gives each periodic task driven by a dispatcher its results (`rt`) from the dispatcher's
/// tally, and its per-job records from the dispatcher when the worker kept none (a task
/// with its own job loop brought both in its report).
pub(super) fn attach_rt(
    r: &RtSet,
    workers: &[Worker],
    samples: &mut [Sample],
    metrics: &[Option<schedlab_dispatch::Metrics>],
    dispatch_logs: &mut [Vec<JobLog>],
) {
    let by_pid: HashMap<i32, &Worker> = workers.iter().map(|w| (w.pid, w)).collect();
    for s in samples.iter_mut() {
        let Some((p, slot)) = by_pid.get(&s.pid).and_then(|w| w.task).and_then(|task| r.slot(task))
        else {
            continue;
        };
        if let Some(rt) = metrics[p]
            .as_ref()
            .and_then(|m| crate::rt::task_from_metrics(m, slot, s.extra.detail.as_ref()))
        {
            s.extra.rt = Some(rt);
        }
        if s.jobs.is_none() {
            s.jobs = dispatch_logs[p].get_mut(slot).map(std::mem::take);
        }
    }
}

/// A warning quoting the first lines of the cell's stderr log, if anything was written.
pub(super) fn stderr_warning(cell: &Cell, log_path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(log_path).ok()?;
    if text.trim().is_empty() {
        return None;
    }
    let first: Vec<&str> = text.lines().take(3).collect();
    Some(format!("cell {}: workers wrote to stderr: {}", cell.key, first.join(" | ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RELEASE: u64 = 10_000_000_000;

    fn group(workload: Workload) -> Group {
        Group::new("main", "w", workload, 4)
    }

    /// What wait4 returned for pid 42, `after_ns` after the release.
    fn reaped(status: i32, after_ns: u64) -> Reaped {
        // SAFETY: rusage is plain data.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        ru.ru_utime = libc::timeval { tv_sec: 1, tv_usec: 500_000 };
        ru.ru_stime = libc::timeval { tv_sec: 0, tv_usec: 500_000 };
        ru.ru_nvcsw = 7;
        ru.ru_nivcsw = 3;
        ru.ru_maxrss = 2048;
        Reaped {
            pid: 42,
            status,
            ru,
            at_ns: RELEASE + after_ns,
            timed_out: false,
            sched: Default::default(),
        }
    }

    fn worker() -> Worker {
        Worker { pid: 42, index: 3, group: 0, allowed: vec![1], task: None }
    }

    /// Worker 3's report: work from 1 s to 3 s after the release, 0.5 s of CPU in setup.
    fn report() -> Report {
        Report {
            i: 3,
            start_ns: RELEASE + 1_000_000_000,
            end_ns: RELEASE + 3_000_000_000,
            units: 5.0,
            policy: "SCHED_OTHER".into(),
            nice: 0,
            cpu: 1,
            cpus: vec![1],
            setup: [0.25, 0.25, 2.0, 1.0],
            ..Default::default()
        }
    }

    fn near(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn a_reported_worker_is_timed_by_its_own_clock_and_charged_only_its_work() {
        let s = sample(
            &reaped(0, 3_500_000_000),
            &worker(),
            &group(Workload::Pi { iterations: 1 }),
            Some(&report()),
            RELEASE,
            None,
        );
        assert_eq!(
            (s.index, s.pid, s.exit_code, s.signal, s.timed_out),
            (3, 42, Some(0), None, false)
        );
        assert!(
            near(s.wall_s, 2.0) && near(s.engine_wall_s, 3.5),
            "{} {}",
            s.wall_s,
            s.engine_wall_s
        );
        assert!(near(s.start_offset_s, 1.0) && near(s.end_offset_s, 3.0));
        assert_eq!((s.user_s, s.sys_s), (1.5, 0.5));
        // 2 s of CPU less 0.5 s of setup over 2 s of work.
        assert!(
            near(s.cpu_pct, 75.0) && near(s.window_cpu_s, 1.5),
            "{} {}",
            s.cpu_pct,
            s.window_cpu_s
        );
        assert_eq!((s.voluntary_csw, s.involuntary_csw, s.max_rss_kb), (7, 3, 2048));
        assert_eq!((s.setup_voluntary_csw, s.setup_involuntary_csw), (2, 1));
        assert_eq!(
            (s.work_units, s.allowed_cpus.clone(), s.cpus_seen.clone()),
            (5.0, vec![1], vec![1])
        );
        assert_eq!(s.extra.policy.as_deref(), Some("SCHED_OTHER"));
    }

    #[test]
    fn a_killed_worker_without_a_report_is_timed_by_the_engine() {
        let s = sample(
            &reaped(libc::SIGKILL, 2_000_000_000),
            &worker(),
            &group(Workload::Pi { iterations: 1 }),
            None,
            RELEASE,
            None,
        );
        assert_eq!((s.exit_code, s.signal), (None, Some(libc::SIGKILL)));
        assert!(
            near(s.wall_s, 2.0)
                && near(s.engine_wall_s, 2.0)
                && s.start_offset_s == 0.0
                && near(s.end_offset_s, 2.0)
        );
        assert_eq!((s.work_units, &s.extra), (0.0, &Extra::default()));
    }

    #[test]
    fn an_execd_command_ends_when_it_is_reaped_and_counts_one_unit() {
        let g = group(Workload::Command { argv: vec!["true".into()], parse: None });
        let s =
            sample(&reaped(1 << 8, 4_000_000_000), &worker(), &g, Some(&report()), RELEASE, None);
        assert_eq!(s.exit_code, Some(1));
        // From its reported start to its reaping, not to the end it reported.
        assert!(
            near(s.wall_s, 3.0) && near(s.end_offset_s, 4.0),
            "{} {}",
            s.wall_s,
            s.end_offset_s
        );
        assert_eq!(s.work_units, 1.0);
    }

    #[test]
    fn a_background_worker_is_charged_its_cpu_inside_the_window_only() {
        let mut g = group(Workload::Pi { iterations: 1 });
        g.background = true;
        let s = sample(
            &reaped(libc::SIGTERM, 1_000_000_000),
            &worker(),
            &g,
            None,
            RELEASE,
            Some(&0.25),
        );
        assert!(s.background && s.window_cpu_s == 0.25);
        let s = sample(&reaped(libc::SIGTERM, 1_000_000_000), &worker(), &g, None, RELEASE, None);
        assert_eq!(s.window_cpu_s, 0.0, "no reading, no charge");
    }

    #[test]
    fn reports_keep_the_first_per_worker_and_unreadable_lines_become_warnings() {
        let mut second = report();
        second.units = 9.0;
        let lines = vec![
            serde_json::to_string(&report()).unwrap(),
            serde_json::to_string(&second).unwrap(),
            "garbage".to_string(),
        ];
        let mut warnings = Vec::new();
        let reports = parse_reports(&lines, "k", &mut warnings);
        assert_eq!(reports.len(), 1);
        assert_eq!(reports[&3].units, 5.0, "a command reports at its start: the first is kept");
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with("cell k: unreadable worker report")
                && warnings[0].ends_with(": garbage"),
            "{}",
            warnings[0]
        );
    }

    #[test]
    fn samples_are_built_for_workers_only_in_index_order() {
        let cell = Cell {
            index: 0,
            key: "k".into(),
            groups: vec![group(Workload::Pi { iterations: 1 })],
            io: None,
            knobs: Default::default(),
            cpu_scheduler: None,
        };
        let workers = [
            Worker { pid: 7, index: 1, group: 0, allowed: vec![], task: None },
            Worker { pid: 8, index: 0, group: 0, allowed: vec![], task: None },
        ];
        let mut a = reaped(0, 1);
        a.pid = 7;
        let mut b = reaped(0, 2);
        b.pid = 8;
        let mut dispatcher = reaped(0, 3);
        dispatcher.pid = 99;
        let s =
            build(&cell, &workers, &[a, dispatcher, b], &HashMap::new(), RELEASE, &HashMap::new());
        assert_eq!(s.iter().map(|s| (s.index, s.pid)).collect::<Vec<_>>(), [(0, 8), (1, 7)]);
    }
}
