//! `schedlab calibrate`: this machine's overheads, measured, as distributions (issue #40).
//!
//! In this process, on the last online CPU at SCHED_FIFO ([`probes`]): the release latency
//! (a 1 ms timer to the task running), one context switch (a pipe ping-pong, less the pipe
//! calls), the tick (the gaps a spinning thread sees, and their period) and a release's
//! cost (the gap a released task makes in a spinning one). Through the engine, as any run:
//! the live dispatchers' decision cost (the built-in `calibrate.toml`: an `edf` and a `dwcs`
//! set). And read from the kernel: the CPU share RT throttling and the fair server keep.
//! The record is stored in the results database with the machine's facts.

pub mod probes;

use crate::{Error, MeasureOptions, Observer, Session};
use schedlab_periodic::LatencyPercentiles;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// The percentile of each distribution the overhead-aware tests use.
pub const USED_PERCENTILE: f64 = 99.0;

/// One measured overhead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    /// Its name (`release_latency`, `context_switch`, `tick`, `release`,
    /// `decision_cost_edf`, `decision_cost_dwcs`).
    pub name: String,
    /// What it is and how it was measured.
    pub what: String,
    /// Its distribution, ns.
    pub ns: LatencyPercentiles,
}

impl Overhead {
    /// The value the tests use: the distribution's [`USED_PERCENTILE`], ns.
    pub fn used_ns(&self) -> u64 {
        self.ns.p99_ns
    }
}

/// A CPU share the kernel keeps from a class: `runtime_us` of every `period_us`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Share {
    /// Runtime per period, µs.
    pub runtime_us: u64,
    /// The period, µs.
    pub period_us: u64,
}

/// How the kernel accounts interrupts ([`probes::interrupt_accounting`]): of `gaps`
/// interruptions of a spinning probe, its own CPU time held `counted`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IrqAccounting {
    /// Interruptions whose time the interrupted thread's CPU time holds.
    pub counted: u64,
    /// Interruptions seen.
    pub gaps: u64,
}

impl IrqAccounting {
    /// Whether interrupts count in the interrupted task's CPU time: most of them did.
    pub fn in_task_time(&self) -> bool {
        self.gaps > 0 && 2 * self.counted > self.gaps
    }
}

/// What `schedlab calibrate` measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// When, seconds since the epoch.
    pub created_unix: f64,
    /// The CPU the probes ran on.
    pub cpu: u32,
    /// The overheads, each a distribution.
    pub overheads: Vec<Overhead>,
    /// How often the spinning probe was interrupted: the mean distance between
    /// interruptions, ns (None when there were none). The tests charge a `tick` every
    /// this often, which is at least as often as the tick (1/CONFIG_HZ).
    pub tick_period_ns: Option<u64>,
    /// Whether interrupts count in the interrupted task's CPU time (None: not measured,
    /// a calibration older than the probe).
    #[serde(default)]
    pub interrupts: Option<IrqAccounting>,
    /// RT throttling: what real-time tasks may use of each CPU (None: unlimited).
    pub rt_share: Option<Share>,
    /// The fair server's reservation on the probes' CPU (debugfs; None where unreadable).
    pub fair_server: Option<Share>,
    /// The run that measured the dispatchers (its cells are stored as any run's).
    pub run_id: Option<i64>,
    /// The percentile the tests use.
    pub percentile: f64,
    /// What was not measured, and why.
    pub notes: Vec<String>,
    /// The machine it measured (None: a calibration older than this field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<schedlab_model::Environment>,
}

impl Calibration {
    /// Why calibration `id`'s figures may not hold on the machine `env` describes: the
    /// hardware and kernel facts that differ (CPU model, CPUs, kernel, HZ, ...), as a
    /// warning; None when they agree or the calibration did not record its machine.
    pub fn measured_elsewhere(
        &self,
        id: i64,
        env: &schedlab_model::Environment,
        what: &str,
    ) -> Option<String> {
        let differences = self.environment.as_ref()?.hardware_differences(env);
        (!differences.is_empty()).then(|| {
            format!(
                "calibration {id} was measured on another machine or kernel than {what} ({}): its overheads may not hold for {what}",
                differences.join("; ")
            )
        })
    }

    /// The overhead called `name`.
    pub fn get(&self, name: &str) -> Option<&Overhead> {
        self.overheads.iter().find(|o| o.name == name)
    }

    /// The overheads the `+overheads` tests charge: each figure at the percentile used (ns).
    /// Scheduling is 0 (inside the measured switch), the cache-related delay 0 (not
    /// measured), and the tick is charged as often as anything interrupted the probe.
    pub fn overheads(&self, id: i64) -> schedlab_schedulability::Overheads {
        let ns = |name: &str| self.get(name).map_or(0, Overhead::used_ns);
        schedlab_schedulability::Overheads {
            release_latency: ns("release_latency"),
            scheduling: 0,
            context_switch: ns("context_switch"),
            cache_delay: 0,
            release: ns("release"),
            tick: ns("tick"),
            tick_period: self.tick_period_ns.unwrap_or(0),
            percentile: Some(self.percentile),
            source: format!("calibration {id} (`schedlab calibrate --show {id}`)"),
        }
    }

    /// The overheads charged to jobs whose C is their CPU time ([`Self::overheads`] less the
    /// interrupts, when `cpu_time_jobs` and the kernel counts an interrupt in the CPU time
    /// of the task it interrupts): then an interrupt that lands in a job is part of its C,
    /// and neither the tick nor a release's interrupt lengthens any job.
    pub fn overheads_for(
        &self,
        id: i64,
        cpu_time_jobs: bool,
    ) -> schedlab_schedulability::Overheads {
        let mut o = self.overheads(id);
        if self.interrupts_free(cpu_time_jobs) {
            (o.tick, o.release) = (0, 0);
            o.source.push_str(", interrupts counted in the jobs' CPU time");
        }
        o
    }

    /// Whether interrupts lengthen no job: the jobs' C is their CPU time (`cpu_time_jobs`)
    /// and the kernel counts an interrupt in the CPU time of the task it interrupts.
    pub fn interrupts_free(&self, cpu_time_jobs: bool) -> bool {
        cpu_time_jobs && self.interrupts.is_some_and(|a| a.in_task_time())
    }

    /// The calibration as `calibrate` prints it: one line per overhead (its percentiles, the
    /// one the tests use marked, µs), the interruptions' rate, the shares, what was not measured.
    pub fn lines(&self, id: i64) -> Vec<String> {
        let us = |ns: u64| format!("{:.1}", ns as f64 / 1000.0);
        let mut out = vec![format!(
            "calibration {id}: CPU {}, percentile used {} (µs)",
            self.cpu, self.percentile
        )];
        if let Some(e) = &self.environment {
            out.push(format!(
                "  measured on {}: {}, {} CPUs, kernel {}{}",
                e.machine.label(),
                e.cpu_model,
                e.cpus,
                e.kernel,
                e.hz.map_or(String::new(), |hz| format!(", HZ={hz}"))
            ));
        }
        for o in &self.overheads {
            let d = &o.ns;
            out.push(format!(
                "  {:<20} p50 {:>8}  p99 {:>8} (used)  max {:>9}  samples {:>6}  {}",
                o.name,
                us(d.p50_ns),
                us(d.p99_ns),
                us(d.max_ns),
                d.samples,
                o.what
            ));
        }
        if let Some(t) = self.tick_period_ns {
            out.push(format!(
                "  interruptions: one every {:.2} ms ({} a second; the tick is one of them)",
                t as f64 / 1e6,
                1_000_000_000 / t.max(1)
            ));
        }
        if let Some(a) = self.interrupts {
            out.push(format!(
                "  interrupts counted in the interrupted task's CPU time: {} ({} of {} interruptions held in its CPU time{})",
                if a.in_task_time() { "yes" } else { "no" },
                a.counted,
                a.gaps,
                if a.in_task_time() { ": they do not lengthen a job that does C of CPU time" } else { "" }
            ));
        }
        let share = |s: Option<Share>| {
            s.map_or("none".into(), |s| format!("{} of every {} µs", s.runtime_us, s.period_us))
        };
        out.push(format!("  RT throttling: real-time tasks may use {}", share(self.rt_share)));
        out.push(format!("  fair server on CPU {}: {}", self.cpu, share(self.fair_server)));
        if let Some(run) = self.run_id {
            out.push(format!("  the dispatchers' cells are run {run} (`schedlab show {run}`)"));
        }
        out.extend(self.notes.iter().map(|n| format!("  not measured: {n}")));
        out
    }

    /// The figures in SchedCAT's overhead CSV layout (`schedcat.overheads.model.Overheads.
    /// from_file`): a TASK-COUNT column and one column per overhead, µs, at the percentile
    /// the tests use. Measured at one task count, the figures are one row: SchedCAT reads a
    /// single point as a constant. SCHEDULE is 0: the kernel's scheduler call is inside the
    /// measured switch (CXS).
    pub fn schedcat_csv(&self) -> String {
        let us = |name: &str| self.get(name).map_or(0.0, |o| o.used_ns() as f64 / 1000.0);
        format!(
            "TASK-COUNT, SCHEDULE, CXS, RELEASE, RELEASE-LATENCY, TICK\n1, 0.000, {:.3}, {:.3}, {:.3}, {:.3}\n",
            us("context_switch"),
            us("release"),
            us("release_latency"),
            us("tick")
        )
    }
}

/// Calibration `id` of `db` (the newest for None), with its id; None when `db` has none.
pub fn stored(db: &Path, id: Option<i64>) -> Result<Option<(i64, Calibration)>, Error> {
    let store = crate::db::open_existing(db)?;
    stored_in(&store, id).map_err(|e| Error::Failed(format!("{e} in {}", db.display())))
}

/// Calibration `id` of an open store (the newest for None), with its id.
pub fn stored_in(
    store: &schedlab_store::Store,
    id: Option<i64>,
) -> Result<Option<(i64, Calibration)>, Error> {
    let Some((id, _machine, json)) = store.calibration(id)? else { return Ok(None) };
    let c =
        serde_json::from_str(&json).map_err(|e| Error::Failed(format!("calibration {id}: {e}")))?;
    Ok(Some((id, c)))
}

/// The overheads `check` charges a plan's periodic sets: those of `file` (a JSON
/// `schedlab_schedulability::Overheads`, named after the file unless it says its source),
/// else the newest calibration in `db` when the plan has periodic sets and `db` one, with
/// a warning when that calibration measured another machine than this one.
pub fn overheads_for(
    db: &Path,
    file: Option<&Path>,
    plan: &schedlab_spec::Plan,
) -> Result<Option<(schedlab_schedulability::Overheads, Option<String>)>, Error> {
    if let Some(path) = file {
        let bad = |e: &dyn std::fmt::Display| {
            Error::Refused(format!("--overheads {}: {e}", path.display()))
        };
        let text = std::fs::read_to_string(path).map_err(|e| bad(&e))?;
        let mut o: schedlab_schedulability::Overheads =
            serde_json::from_str(&text).map_err(|e| bad(&e))?;
        if o.source.is_empty() {
            o.source = path.display().to_string();
        }
        return Ok(Some((o, None)));
    }
    let periodic =
        plan.cells.iter().flat_map(|c| &c.groups).any(|g| g.workload.periodic().is_some());
    if !periodic || !db.exists() {
        return Ok(None);
    }
    Ok(stored(db, None)?.map(|(id, c)| {
        let here = schedlab_sys::env::environment(&schedlab_sys::Root::default());
        (c.overheads_for(id, cpu_time_jobs(plan)), c.measured_elsewhere(id, &here, "this machine"))
    }))
}

/// Whether every periodic set of `plan` has jobs whose C is their CPU time.
pub fn cpu_time_jobs(plan: &schedlab_spec::Plan) -> bool {
    let mut sets = plan.cells.iter().flat_map(|c| &c.groups).filter_map(|g| g.workload.periodic());
    sets.all(|p| p.body.in_cpu_time())
}

/// How long each probe runs.
#[derive(Debug, Clone, Copy)]
pub struct Lengths {
    /// The release-latency probe.
    pub release_latency: Duration,
    /// Round trips of the context-switch probe.
    pub switch_rounds: u32,
    /// Rounds (of [`probes::SPIN_ROUND`]) of the tick and release probes each.
    pub spin_rounds: u32,
    /// Seconds of each dispatcher cell (0: no dispatcher cells).
    pub dispatcher_s: u32,
}

impl Default for Lengths {
    fn default() -> Self {
        Lengths {
            release_latency: Duration::from_secs(5),
            switch_rounds: 50_000,
            spin_rounds: 4,
            dispatcher_s: 4,
        }
    }
}

/// The built-in experiment of the dispatchers' decision cost, `secs` long per cell.
pub fn dispatcher_spec(secs: u32) -> String {
    format!(
        r#"name = "calibrate"
description = "schedlab calibrate: the live dispatchers' decision cost"
repetitions = 1

[matrix]
workload = ["set"]
scheduler = ["edf", "dwcs"]

[workloads.set]
kind = "periodic"
duration_s = {secs}
quantum_ms = 1
tasks = [
  {{ c_ms = 1, t_ms = 4 }},
  {{ c_ms = 1, t_ms = 5 }},
  {{ c_ms = 1, t_ms = 8 }},
  {{ c_ms = 1, t_ms = 10 }},
]
"#
    )
}

fn share(root: &schedlab_sys::Root, runtime: &str, period: &str) -> Option<Share> {
    let read = |p: &str| root.read(p).ok()?.trim().parse::<i64>().ok();
    let (r, p) = (read(runtime)?, read(period)?);
    (r >= 0 && p > 0).then_some(Share { runtime_us: r as u64, period_us: p as u64 })
}

impl Session {
    /// Measures this machine's overheads and stores them (with the dispatcher run, when
    /// `lengths.dispatcher_s` > 0). Needs SCHED_FIFO for this process.
    pub fn calibrate(
        &self,
        lengths: Lengths,
        observer: &mut dyn Observer,
    ) -> Result<(Calibration, i64), Error> {
        let root = &self.root;
        let cpu = *schedlab_sys::cpus::online(root).last().unwrap_or(&0);
        let failed = |what: &str, e: std::io::Error| {
            let hint = if e.kind() == std::io::ErrorKind::PermissionDenied {
                " (SCHED_FIFO needs root or CAP_SYS_NICE, and RT runtime in this process's cpu cgroup: `schedlab env` says which is missing)"
            } else {
                ""
            };
            Error::Refused(format!("calibrate: the {what} probe on CPU {cpu}: {e}{hint}"))
        };
        let mut overheads = Vec::new();
        observer.note(&format!("calibrate: probes on CPU {cpu} at SCHED_FIFO"));
        let lat = probes::release_latency(cpu, lengths.release_latency)
            .map_err(|e| failed("release latency", e))?;
        overheads.push(Overhead {
            name: "release_latency".into(),
            what: "a 1 ms absolute timer (clock_nanosleep) to the FIFO task running".into(),
            ns: lat,
        });
        let switch = probes::context_switch(cpu, lengths.switch_rounds)
            .map_err(|e| failed("context switch", e))?;
        let switch_p50 = switch.p50_ns;
        overheads.push(Overhead {
            name: "context_switch".into(),
            what: "half a pipe round trip of two FIFO threads on one CPU, less the pipe calls: wake-up, scheduler and switch".into(),
            ns: switch,
        });
        let (tick, tick_period_ns) =
            probes::ticks(cpu, lengths.spin_rounds).map_err(|e| failed("tick", e))?;
        overheads.push(Overhead {
            name: "tick".into(),
            what: "interruptions of a FIFO thread spinning on the clock (the tick's, mostly)"
                .into(),
            ns: tick,
        });
        let (counted, gaps) = probes::interrupt_accounting(cpu, probes::SPIN_ROUND)
            .map_err(|e| failed("interrupt accounting", e))?;
        let release = probes::release(cpu, lengths.spin_rounds, switch_p50)
            .map_err(|e| failed("release", e))?;
        overheads.push(Overhead {
            name: "release".into(),
            what:
                "the gap a 1 ms release of a FIFO task makes in a spinning one, less two switches"
                    .into(),
            ns: release,
        });
        let mut notes = vec![
            "cache-related preemption delay: not measured (0)".to_string(),
            "scheduling: inside context_switch (the kernel's scheduler call is part of the measured switch)".to_string(),
        ];
        let run_id = if lengths.dispatcher_s > 0 {
            let id = self.dispatcher_run(lengths.dispatcher_s, observer, &mut overheads)?;
            Some(id)
        } else {
            notes.push("dispatchers: not measured (--no-dispatchers)".into());
            None
        };
        let rt_share = share(
            root,
            "/proc/sys/kernel/sched_rt_runtime_us",
            "/proc/sys/kernel/sched_rt_period_us",
        );
        let fs = format!("/sys/kernel/debug/sched/fair_server/cpu{cpu}");
        let fair_server = share(root, &format!("{fs}/runtime"), &format!("{fs}/period"))
            .map(|s| Share { runtime_us: s.runtime_us / 1000, period_us: s.period_us / 1000 });
        if fair_server.is_none() {
            notes.push(format!("fair server: {fs} is not readable (debugfs unmounted?)"));
        }
        let c = Calibration {
            created_unix: crate::now_unix(),
            cpu,
            overheads,
            tick_period_ns,
            interrupts: Some(IrqAccounting { counted, gaps }),
            rt_share,
            fair_server,
            run_id,
            percentile: USED_PERCENTILE,
            notes,
            environment: Some(schedlab_sys::env::environment(root)),
        };
        let store = crate::db::open(&self.db)?;
        let machine = serde_json::to_string(&schedlab_sys::machine::facts(root))
            .map_err(|e| Error::Failed(e.to_string()))?;
        let json = serde_json::to_string(&c).map_err(|e| Error::Failed(e.to_string()))?;
        let id = store.add_calibration(c.created_unix, &machine, &json, run_id)?;
        Ok((c, id))
    }

    /// Runs the built-in dispatcher experiment through the engine and adds each dispatcher's
    /// decision cost to `overheads`: the run's id.
    fn dispatcher_run(
        &self,
        secs: u32,
        observer: &mut dyn Observer,
        overheads: &mut Vec<Overhead>,
    ) -> Result<i64, Error> {
        let text = dispatcher_spec(secs);
        let cwd = std::env::current_dir()
            .map_err(|e| Error::Refused(format!("cannot resolve the current directory: {e}")))?;
        let spec = schedlab_spec::parse_at("<built-in calibrate.toml>", &text, &cwd)
            .map_err(Error::refused)?;
        let o = MeasureOptions { builtin: true, ..MeasureOptions::default() };
        let prepared = self.prepare(spec, &o, observer)?;
        schedlab_runner::signals::block();
        let m = self.measure(prepared, &o, &mut schedlab_runner::Engine, observer)?;
        if let crate::Ended::Interrupted { signal, .. } = m.ended {
            return Err(Error::Failed(format!(
                "calibrate: interrupted by signal {signal}; nothing of it is stored as a calibration"
            )));
        }
        for cell in m.store.cells(m.run_id)? {
            let Some(rt) = &cell.rt else { continue };
            let Some(d) = &rt.dispatcher else { continue };
            for metrics in d.per_cpu().into_iter().flatten() {
                let c = &metrics.decision_cost;
                overheads.push(Overhead {
                    name: format!("decision_cost_{}", rt.scheduler),
                    what: format!(
                        "the {} dispatcher's time per decision, wake-up to sleep (run {}, {} s)",
                        rt.scheduler, m.run_id, secs
                    ),
                    ns: LatencyPercentiles {
                        samples: c.samples,
                        p50_ns: c.p50_ns,
                        p99_ns: c.p99_ns,
                        max_ns: c.max_ns,
                        mean_ns: c.mean_ns,
                        ..Default::default()
                    },
                });
            }
        }
        Ok(m.run_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overhead(name: &str, p99_ns: u64) -> Overhead {
        Overhead {
            name: name.into(),
            what: String::new(),
            ns: LatencyPercentiles { p99_ns, ..Default::default() },
        }
    }

    fn calibration() -> Calibration {
        Calibration {
            created_unix: 0.0,
            cpu: 1,
            overheads: vec![
                overhead("context_switch", 2_500),
                overhead("release", 1_000),
                overhead("release_latency", 31_855),
                overhead("tick", 4_200),
            ],
            tick_period_ns: Some(4_000_000),
            interrupts: None,
            rt_share: None,
            fair_server: None,
            run_id: None,
            percentile: USED_PERCENTILE,
            notes: Vec::new(),
            environment: None,
        }
    }

    #[test]
    fn a_calibration_names_its_machine_and_says_when_another_one_uses_it() {
        let mut c = calibration();
        let here = schedlab_model::Environment {
            cpu_model: "Fake CPU @ 1GHz".into(),
            cpus: 2,
            kernel: "6.18.0".into(),
            hz: Some(250),
            rt_runtime_us: Some(950_000),
            ..Default::default()
        };
        // Older calibrations recorded no machine: nothing is claimed.
        assert_eq!(c.measured_elsewhere(1, &here, "this machine"), None);
        c.environment = Some(here.clone());
        assert_eq!(c.measured_elsewhere(1, &here, "this machine"), None);
        assert!(c
            .lines(1)
            .iter()
            .any(|l| l.contains("Fake CPU @ 1GHz, 2 CPUs, kernel 6.18.0, HZ=250")));
        // A setting is not another machine; another CPU or kernel is.
        let throttled = schedlab_model::Environment { rt_runtime_us: Some(-1), ..here.clone() };
        assert_eq!(c.measured_elsewhere(1, &throttled, "this machine"), None);
        let other = schedlab_model::Environment {
            cpu_model: "Other CPU".into(),
            kernel: "7.3.4".into(),
            ..here
        };
        let w = c.measured_elsewhere(1, &other, "run 4").unwrap();
        assert!(
            w.starts_with("calibration 1 was measured on another machine or kernel than run 4"),
            "{w}"
        );
        assert!(
            w.contains("CPU: Fake CPU @ 1GHz vs Other CPU")
                && w.contains("kernel: 6.18.0 vs 7.3.4"),
            "{w}"
        );
        // The stored record keeps it.
        let back: Calibration = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn the_schedcat_csv_has_its_columns_in_microseconds_at_the_used_percentile() {
        assert_eq!(
            calibration().schedcat_csv(),
            "TASK-COUNT, SCHEDULE, CXS, RELEASE, RELEASE-LATENCY, TICK\n1, 0.000, 2.500, 1.000, 31.855, 4.200\n"
        );
    }

    #[test]
    fn jobs_of_cpu_time_are_charged_no_interrupts_where_the_kernel_counts_them_in_it() {
        let mut c = calibration();
        let charged = |o: schedlab_schedulability::Overheads| (o.tick, o.release);
        // Not measured: every interrupt is charged, as SchedCAT charges it.
        assert_eq!(charged(c.overheads_for(1, true)), (4_200, 1_000));
        // Counted in the interrupted task's time: nothing for jobs that do C of CPU time,
        // everything for the others (a read job waits for its bytes, not for its CPU time).
        c.interrupts = Some(IrqAccounting { counted: 999, gaps: 1_000 });
        let o = c.overheads_for(1, true);
        assert_eq!((o.tick, o.release, o.context_switch), (0, 0, 2_500));
        assert!(o.source.ends_with("interrupts counted in the jobs' CPU time"), "{}", o.source);
        assert_eq!(c.overheads_for(1, false), c.overheads(1));
        // Kept apart (IRQ time accounting): charged.
        c.interrupts = Some(IrqAccounting { counted: 3, gaps: 1_000 });
        assert_eq!(c.overheads_for(1, true), c.overheads(1));
    }

    #[test]
    fn the_dispatcher_experiment_is_a_valid_spec() {
        let spec = schedlab_spec::parse_at(
            "calibrate.toml",
            &dispatcher_spec(4),
            std::path::Path::new("."),
        )
        .unwrap();
        assert_eq!(spec.plan.cells.len(), 2);
    }
}
