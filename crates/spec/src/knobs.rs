//! `[knobs]` (held for the whole run) and `[matrix.knobs]` (one cell per value): names and
//! values checked by `schedlab_plan::knob`'s rules at their place in the text, then against
//! what the machine says about each knob ([`check`]) before anything is changed.

use crate::error::SpecError;
use crate::raw::RawKnobAxes;
use crate::validate::{Ctx, Location, Locations};
use schedlab_plan::knob::{rt_share, Knob, KnobValue, Knobs, DEFAULT_RT_SHARE};
use schedlab_plan::{KnobFact, KnobFacts, Plan};
use serde_spanned::Spanned;
use std::collections::BTreeMap;

/// Where a knob is written: its key and each value.
#[derive(Debug, Clone)]
pub struct KnobAt {
    /// The knob's name.
    pub name: String,
    /// Its key.
    pub key: Location,
    /// Each value written for it, with its span.
    pub values: Vec<(KnobValue, Location)>,
}

const RUNTIME: &str = "kernel.sched_rt_runtime_us";
const PERIOD: &str = "kernel.sched_rt_period_us";
/// The kernel's default RT runtime and period, µs.
const KERNEL_RUNTIME: i64 = 950_000;
const KERNEL_PERIOD: i64 = 1_000_000;

fn knob(cx: &Ctx, name: &Spanned<String>) -> Result<Knob, SpecError> {
    Knob::parse(name.get_ref()).or_else(|msg| cx.err(name.span(), msg))
}

fn value(cx: &Ctx, k: &Knob, v: &Spanned<toml::Value>) -> Result<KnobValue, SpecError> {
    let value = match v.get_ref() {
        toml::Value::Integer(i) => KnobValue::Int(*i),
        toml::Value::Boolean(b) => KnobValue::Bool(*b),
        toml::Value::String(s) => KnobValue::Word(s.clone()),
        other => {
            return cx.err(
                v.span(),
                format!(
                    "{}: a knob's value is a number, true/false or a string, not a {}",
                    k.name,
                    other.type_str()
                ),
            )
        }
    };
    k.check(&value).or_else(|msg| cx.err(v.span(), msg))?;
    Ok(value)
}

/// `[knobs]`: each knob's one value.
pub(crate) fn fixed(
    cx: &Ctx,
    raw: &BTreeMap<Spanned<String>, Spanned<toml::Value>>,
    locs: &mut Locations,
) -> Result<Knobs, SpecError> {
    let mut out = Knobs::new();
    for (name, v) in raw {
        let k = knob(cx, name)?;
        let x = value(cx, &k, v)?;
        locs.knobs.push(KnobAt {
            name: k.name.clone(),
            key: name.span(),
            values: vec![(x.clone(), v.span())],
        });
        out.insert(k.name, x);
    }
    Ok(out)
}

/// `[matrix.knobs]`: each knob's values, in name order; a knob also in `[knobs]` is an error.
pub(crate) fn swept(
    cx: &Ctx,
    raw: &RawKnobAxes,
    fixed: &Knobs,
    locs: &mut Locations,
) -> Result<Vec<(String, Vec<KnobValue>)>, SpecError> {
    let mut out = Vec::new();
    for (name, list) in raw {
        let k = knob(cx, name)?;
        if fixed.contains_key(&k.name) {
            return cx.err(
                name.span(),
                format!("{} is both held in [knobs] and swept in [matrix.knobs]: keep one", k.name),
            );
        }
        let mut values: Vec<KnobValue> = Vec::new();
        let mut at = KnobAt { name: k.name.clone(), key: name.span(), values: Vec::new() };
        for v in list.get_ref() {
            let x = value(cx, &k, v)?;
            if values.contains(&x) {
                return cx.err(v.span(), format!("the {} axis lists {} twice", k.name, x.label()));
            }
            at.values.push((x.clone(), v.span()));
            values.push(x);
        }
        if values.is_empty() {
            return cx
                .err(list.span(), format!("the {} axis must list at least one value", k.name));
        }
        locs.knobs.push(at);
        out.push((k.name, values));
    }
    Ok(out)
}

/// Every combination of the swept knobs' values, the last knob varying fastest; one empty
/// combination when none is swept.
pub(crate) fn combos(swept: &[(String, Vec<KnobValue>)]) -> Vec<Knobs> {
    let mut out = vec![Knobs::new()];
    for (name, values) in swept {
        out = out
            .into_iter()
            .flat_map(|k| values.iter().map(move |v| (k.clone(), v.clone())))
            .map(|(mut k, v)| {
                k.insert(name.clone(), v);
                k
            })
            .collect();
    }
    out
}

/// Checks every knob the plan names against the machine (it exists, this process may
/// write it, the value is one its file offers), and that no cell disables or weakens RT
/// throttling unless the spec allows it. Errors point at the knob's key or value.
pub(crate) fn check(
    plan: &Plan,
    locs: &Locations,
    src: &str,
    facts: &KnobFacts,
) -> Result<(), SpecError> {
    if let Some((span, msg)) = locs.knobs.iter().find_map(|at| refused(at, facts, None)) {
        return Err(SpecError::at(&plan.source_path, src, span, msg));
    }
    rt_guard(plan, locs, facts)
        .map_err(|(span, msg)| SpecError::at(&plan.source_path, src, span, msg))
}

/// Why `cell` cannot have its knobs here (one missing, unusable, not writable, or a value
/// its file does not offer), and where the spec set it.
pub(crate) fn cell_refused(
    plan: &Plan,
    locs: &Locations,
    facts: &KnobFacts,
    cell: &schedlab_plan::Cell,
) -> Option<(Location, String)> {
    plan.knobs_for(cell)
        .iter()
        .find_map(|(name, v)| refused(locs.knobs.iter().find(|a| a.name == *name)?, facts, Some(v)))
}

/// Why knob `at` cannot be set here to `only` (or to any value the spec gives it): where,
/// and why.
fn refused(at: &KnobAt, facts: &KnobFacts, only: Option<&KnobValue>) -> Option<(Location, String)> {
    let k = Knob::parse(&at.name).ok()?;
    let key = |msg: String| Some((at.key.clone(), msg));
    match facts.get(&at.name)? {
        KnobFact::Missing(why) => key(format!("this kernel has no {}: {why}", at.name)),
        KnobFact::Unusable(why) => {
            key(format!("{} cannot be used on this machine: {why}", at.name))
        }
        KnobFact::Present { unwritable: Some(why), .. } => {
            key(format!("setting {}: {why}", at.name))
        }
        KnobFact::Present { offered, path, .. } => {
            at.values.iter().filter(|(v, _)| only.is_none_or(|o| o == v)).find_map(|(v, span)| {
                let text = k.text(v);
                let unoffered = !offered.is_empty()
                    && matches!(v, KnobValue::Word(_))
                    && !offered.contains(&text);
                unoffered.then(|| {
                    let msg = format!(
                        "{} = \"{text}\": this kernel offers {} ({path})",
                        at.name,
                        offered.join(", ")
                    );
                    (span.clone(), msg)
                })
            })
        }
    }
}

/// The RT bandwidth each cell would run with: refused when the kernel would refuse it
/// (runtime above period), and when it disables throttling or leaves non-RT tasks less than
/// the default 5% unless `allow_rt_unthrottled = true`.
fn rt_guard(plan: &Plan, locs: &Locations, facts: &KnobFacts) -> Result<(), (Location, String)> {
    let now = |name: &str| match facts.get(name) {
        Some(KnobFact::Present { value, .. }) => value.parse::<i64>().ok(),
        _ => None,
    };
    let at = |name: &str, v: &KnobValue| {
        let knob = locs.knobs.iter().find(|a| a.name == name)?;
        knob.values.iter().find(|(x, _)| x == v).map(|(_, s)| s.clone()).or(Some(knob.key.clone()))
    };
    for cell in &plan.cells {
        let knobs = plan.knobs_for(cell);
        let set = |name: &str| match knobs.get(name) {
            Some(KnobValue::Int(i)) => Some(*i),
            _ => None,
        };
        if set(RUNTIME).is_none() && set(PERIOD).is_none() {
            continue;
        }
        // The preflight reads only the knobs a plan names: a partner it did not read is
        // taken at the kernel's default, so `runtime = -1` alone is judged, not let through.
        let runtime = set(RUNTIME).or_else(|| now(RUNTIME)).unwrap_or(KERNEL_RUNTIME);
        let period = set(PERIOD).or_else(|| now(PERIOD)).unwrap_or(KERNEL_PERIOD);
        let span = set(RUNTIME)
            .and_then(|v| at(RUNTIME, &KnobValue::Int(v)))
            .or_else(|| at(PERIOD, knobs.get(PERIOD)?))
            .unwrap_or(locs.matrix.clone());
        if runtime > period {
            return Err((
                span,
                format!("{RUNTIME} ({runtime}) above {PERIOD} ({period}): the kernel refuses it"),
            ));
        }
        let weak = rt_share(runtime, period).is_none_or(|s| s > DEFAULT_RT_SHARE);
        if weak && !plan.allow_rt_unthrottled {
            let what = if runtime < 0 {
                "disables RT throttling".to_string()
            } else {
                format!(
                    "gives real-time tasks {:.1}% of each period (the default is {:.0}%)",
                    100.0 * runtime as f64 / period as f64,
                    100.0 * DEFAULT_RT_SHARE
                )
            };
            return Err((
                span,
                format!(
                    "cell {}: {RUNTIME} = {runtime} with {PERIOD} = {period} {what}, so real-time workers could starve this machine; set allow_rt_unthrottled = true in the spec if you mean it (the engine then must supervise at SCHED_FIFO 99)",
                    cell.key
                ),
            ));
        }
    }
    Ok(())
}

/// True when some cell runs with RT throttling off or weakened by the plan's knobs
/// (judged with the machine's current values for what the plan leaves alone).
pub fn unthrottles(plan: &Plan, facts: &KnobFacts) -> bool {
    let locs = Locations::default();
    let strict = Plan { allow_rt_unthrottled: false, ..plan.clone() };
    rt_guard(&strict, &locs, facts).is_err()
}

#[cfg(test)]
mod tests;
