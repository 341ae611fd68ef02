//! What a run says about its plan before the first step, as lines for the user: its
//! batches of generated sets, the DWCS feasibility test and SCHED_DEADLINE's admission on
//! each periodic task set, and the classic schedulability tests' verdicts.

use schedlab_schedulability::{
    priority_order, response_times, response_times_with_overheads, Outcome, Overheads, Priority,
    Task, Verdict, TESTS,
};
use schedlab_spec::Plan;

/// What `run` and `simulate` do with each workload that asks for many sets per cell:
/// (line, is_warning).
fn batch_lines(plan: &Plan) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for g in plan.cells.iter().flat_map(|c| &c.groups) {
        let (Some(p), false) = (g.workload.periodic(), seen.contains(&g.workload_name.as_str()))
        else {
            continue;
        };
        let Some(b) = p.batch else { continue };
        seen.push(&g.workload_name);
        let measured = match b.live {
            1 => "only set 0 (the set the lines below analyse)".to_string(),
            k => format!(
                "sets 0 to {} (set 0 under the cell's key, set i as KEY/set=i; `report SIM --compare RUN` puts them on the simulated curves)",
                k - 1
            ),
        };
        out.push((
            format!(
                "workload {}: {} generated sets per cell; `schedlab simulate` simulates them all, `run` measures {measured}{}",
                g.workload_name,
                b.sets,
                if b.hyperperiod { "; each simulated over its hyperperiod when shorter than duration_s" } else { "" }
            ),
            false,
        ));
    }
    out
}

/// What the DWCS feasibility test says about each distinct periodic task set of a plan,
/// printed before a run: (line, is_warning).
pub fn feasibility_lines(plan: &Plan, cpus: usize) -> Vec<(String, bool)> {
    let mut out = batch_lines(plan);
    let mut seen: Vec<(String, Vec<schedlab_periodic::TaskParams>)> = Vec::new();
    for c in &plan.cells {
        for g in &c.groups {
            // A batch's live sets beyond set 0 get no lines of their own (set 0 stands for them).
            let Some(p) = g.workload.periodic().filter(|p| p.live_set.is_none()) else { continue };
            if seen.iter().any(|(w, t)| *w == g.workload_name && *t == p.tasks) {
                continue;
            }
            seen.push((g.workload_name.clone(), p.tasks.clone()));
            let same_set = |s: schedlab_spec::RtScheduler| {
                plan.cells.iter().flat_map(|c| &c.groups).any(|h| {
                    h.workload.periodic().is_some_and(|q| q.tasks == p.tasks && q.scheduler == s)
                })
            };
            let f = schedlab_periodic::feasibility(&p.tasks);
            let at = match p.utilisation {
                Some(u) => format!("{} at utilisation {u}", g.workload_name),
                None => g.workload_name.clone(),
            };
            if same_set(schedlab_spec::RtScheduler::Deadline) {
                out.extend(deadline_admission(p, &at, cpus));
            }
            // The DWCS feasibility test (canonical, guaranteed) speaks only of sets DWCS
            // schedules; any scheduler confined to one CPU drops jobs of a set more than its worth.
            let one_cpu = plan.cells.iter().flat_map(|c| &c.groups).any(|h| {
                h.workload.periodic().is_some_and(|q| {
                    q.tasks == p.tasks && q.scheduler != schedlab_spec::RtScheduler::Deadline
                })
            });
            if !same_set(schedlab_spec::RtScheduler::Dwcs) {
                if one_cpu && f.min_utilisation > 1.0 + 1e-9 {
                    out.push((
                        format!(
                            "task set {at}: {} tasks, sum C/T = {:.3}, even the windows' minimum (sum (1 - x/y) C/T = {:.3}) is more than one CPU's worth, so window violations are expected",
                            p.tasks.len(),
                            f.utilisation,
                            f.min_utilisation
                        ),
                        true,
                    ));
                }
                continue;
            }
            let head = format!(
                "task set {at}: {} tasks, sum C/T = {:.3}, DWCS minimum utilisation sum (1 - x/y) C/T = {:.3}",
                p.tasks.len(),
                f.utilisation,
                f.min_utilisation
            );
            let placement = p.pinned_placement(cpus.saturating_sub(1) as u32);
            let per_cpu = p.feasibility_per_cpu(Some(&placement));
            if per_cpu.len() > 1 {
                let shares: Vec<String> = per_cpu
                    .iter()
                    .map(|(c, idx, f)| {
                        let tasks: Vec<String> = idx.iter().map(|i| i.to_string()).collect();
                        format!(
                            "CPU {c}: tasks {}, sum C/T = {:.3}, minimum utilisation = {:.3}",
                            tasks.join(" "),
                            f.utilisation,
                            f.min_utilisation
                        )
                    })
                    .collect();
                let line = format!("{head}; partitioned (first-fit decreasing by C/T; deadline tasks stay global): {}", shares.join("; "));
                if per_cpu.iter().all(|(_, _, f)| f.guaranteed) {
                    out.push((format!("{line}; every CPU's share is canonical and <= 1: the DWCS feasibility test guarantees every window (in theory, without overheads)"), false));
                } else if let Some((c, _, _)) =
                    per_cpu.iter().find(|(_, _, f)| f.min_utilisation > 1.0 + 1e-9)
                {
                    out.push((format!("{line}; CPU {c}'s share is more than one CPU's worth, so window violations are expected"), true));
                } else {
                    out.push((
                        format!("{line}; not every CPU's share is canonical, so the DWCS feasibility guarantee does not apply"),
                        true,
                    ));
                }
            } else if f.guaranteed {
                out.push((
                    format!("{head}; canonical (K = {} ms) and <= 1: the DWCS feasibility test guarantees every window (in theory, without overheads)", f.canonical_k_ns.unwrap_or(0) as f64 / 1e6),
                    false,
                ));
            } else if f.min_utilisation > 1.0 + 1e-9 {
                out.push((
                    format!("{head}: more than one CPU's worth, so window violations are expected"),
                    true,
                ));
            } else {
                let why = f.not_canonical_because.unwrap_or_default();
                out.push((format!("{head}; not canonical ({why}), so the DWCS feasibility guarantee does not apply"), true));
            }
        }
    }
    out
}

/// The warning that SCHED_DEADLINE's admission control will refuse set `p`, if it will.
fn deadline_admission(
    p: &schedlab_spec::Periodic,
    at: &str,
    cpus: usize,
) -> Option<(String, bool)> {
    let share = schedlab_spec::knob::DEFAULT_RT_SHARE;
    let limit = schedlab_spec::knob::admission_limit(cpus, share);
    (!schedlab_spec::knob::admits(p.deadline_bandwidth(), cpus, share)).then(|| {
        (
            format!(
                "task set {at}: SCHED_DEADLINE admission will refuse it: sum of runtime/period {:.3} exceeds {limit:.2} ({cpus} CPUs x {:.0}%)",
                p.deadline_bandwidth(),
                share * 100.0
            ),
            true,
        )
    })
}

/// The classic schedulability tests' verdicts on each distinct periodic task set of the plan
/// (`schedlab_schedulability::TESTS`): the uniprocessor tests for one CPU, the partitioned
/// and global ones for `cpus` when there are several; with `overheads`, their twins'
/// verdicts too; then each task's response time from RTA (rate- and deadline-monotonic),
/// plain and, with `overheads`, charged. Each line within 160 columns for the tests' names.
pub fn analysis_lines(plan: &Plan, cpus: usize, overheads: Option<&Overheads>) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen: Vec<&[schedlab_periodic::TaskParams]> = Vec::new();
    for g in plan.cells.iter().flat_map(|c| &c.groups) {
        let Some(p) = g.workload.periodic().filter(|p| p.live_set.is_none()) else { continue };
        if seen.contains(&p.tasks.as_slice()) {
            continue;
        }
        seen.push(&p.tasks);
        let set: Vec<Task> = p
            .tasks
            .iter()
            .map(|t| Task::new(t.c_ns, t.t_ns).deadline(t.d_ns.unwrap_or(t.t_ns)).window(t.x, t.y))
            .collect();
        let none = Overheads::default();
        let verdicts = |m: usize, multi: bool, o: Option<&Overheads>| -> String {
            TESTS
                .iter()
                // No explicit priorities here: the plan's order is not a priority.
                .filter(|t| t.plain_name() != "rta-priority")
                .filter(|t| t.uniprocessor != multi && t.overheads == o.is_some())
                .map(|t| {
                    format!("{} {}", t.plain_name(), word(&(t.run)(&set, m, o.unwrap_or(&none))))
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let at = match p.utilisation {
            Some(u) => format!("{} at utilisation {u}", g.workload_name),
            None => g.workload_name.clone(),
        };
        let offsets = if p.tasks.iter().any(|t| t.phase_ns > 0) {
            " (release offsets ignored: a set with offsets may do better)"
        } else {
            ""
        };
        out.push(format!(
            "analysis of task set {at}{offsets}, one CPU: {}",
            verdicts(1, false, None)
        ));
        if let Some(o) = overheads {
            out.push(format!(
                "  with overheads ({}), one CPU: {}",
                described(o),
                verdicts(1, false, Some(o))
            ));
        }
        if cpus > 1 {
            out.push(format!("  on {cpus} CPUs: {}", verdicts(cpus, true, None)));
            if let Some(o) = overheads {
                out.push(format!(
                    "  with overheads, on {cpus} CPUs: {}",
                    verdicts(cpus, true, Some(o))
                ));
            }
        }
        out.extend(response_lines(&set, overheads));
    }
    if !out.is_empty() {
        out.push(
            "  (yes = schedulable, no = not, ? = a sufficient test could not tell; `schedlab_schedulability` names each test's source)"
                .into(),
        );
    }
    out
}

/// A verdict as `check` words it.
fn word(outcome: &Outcome) -> &'static str {
    match outcome.verdict {
        Verdict::Schedulable => "yes",
        Verdict::NotSchedulable => "no",
        Verdict::Inconclusive => "?",
    }
}

/// Where the overheads came from and which percentile they are.
fn described(o: &Overheads) -> String {
    match o.percentile {
        Some(p) => format!("{}, p{p}", o.source),
        None => o.source.clone(),
    }
}

/// Each task's response time from RTA, in ms, in the set's order: one line per priority
/// order (one for both when rate- and deadline-monotonic agree), with the overheads' twin
/// beside it when they are known.
fn response_lines(set: &[Task], overheads: Option<&Overheads>) -> Vec<String> {
    let rm = priority_order(set, Priority::Rate);
    let orders: &[(Priority, &str)] = if rm == priority_order(set, Priority::Deadline) {
        &[(Priority::Rate, "rate- and deadline-monotonic")]
    } else {
        &[(Priority::Rate, "rate-monotonic"), (Priority::Deadline, "deadline-monotonic")]
    };
    orders
        .iter()
        .map(|&(by, name)| {
            let mut line = format!(
                "  RTA response times (ms), {name}: {}",
                times(&response_times(set, by), set)
            );
            if let Some(o) = overheads {
                let charged = response_times_with_overheads(set, by, o);
                line.push_str(&format!("; with overheads: {}", times(&charged, set)));
            }
            line
        })
        .collect()
}

/// An outcome's response times in ms (at most three decimals) and its verdict; a task whose
/// deadline the analysis found passed as the textbooks write it, "R3 = 9 > D3 = 8", numbered
/// in the set's order.
fn times(out: &Outcome, set: &[Task]) -> String {
    let ms = |ns: u64| {
        let ms = format!("{:.3}", ns as f64 / 1e6);
        ms.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    let each: Vec<String> = out
        .response_times
        .iter()
        .zip(set)
        .enumerate()
        .map(|(i, (r, t))| {
            if r.met {
                ms(r.time)
            } else {
                format!("R{n} = {} > D{n} = {}", ms(r.time), ms(t.deadline), n = i + 1)
            }
        })
        .collect();
    format!("{} ({})", each.join(", "), word(out))
}
