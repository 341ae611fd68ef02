//! `[policies.NAME]`: a scheduling class with its priority, nice, slice or SCHED_DEADLINE
//! parameters, and the built-in policies named after their class.

use super::{Ctx, Locations};
use crate::error::SpecError;
use crate::raw::RawPolicy;
use schedlab_plan::axis::DEFAULT_RT_PRIORITY;
use schedlab_plan::{
    Class, DeadlineParams, Policy, MAX_SLICE_US, MAX_WORKER_PRIORITY, MIN_SLICE_US,
};
use serde_spanned::Spanned;

/// The kernel refuses SCHED_DEADLINE runtimes below 1024 ns.
const MIN_DL_RUNTIME_NS: u64 = 1024;

/// The policy a class name stands for when no `[policies.NAME]` defines it.
pub(super) fn builtin_policy(class: Class) -> Policy {
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

/// One `[policies.NAME]` entry, checked; its nice and slice are recorded for the machine checks.
pub(super) fn policy(cx: &Ctx, p: &RawPolicy, locs: &mut Locations) -> Result<Policy, SpecError> {
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
