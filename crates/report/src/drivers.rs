//! One policy, three drivers: a periodic set scheduled by schedlab's user-space dispatcher
//! (`dwcs`, `edf`), by schedlab's sched_ext scheduler (`dwcs-scx`, `edf-scx`) and by the
//! simulator, side by side. The two live drivers come from one run, the simulation from the
//! other run of a comparison (`report RUN --compare SIM`, either way round).

use crate::cols::Col;
use crate::tables::fmt_summary;
use schedlab_analysis::rt::FIGURES;
use schedlab_analysis::RtStats;

/// The pairs of schedulers that run one policy: by priorities and on sched_ext.
const PAIRS: [(&str, &str); 2] = [("dwcs", "dwcs-scx"), ("edf", "edf-scx")];

/// One figure of one set under the three drivers.
pub struct DriverRow {
    /// The set: its cell key without the scheduler.
    pub set: String,
    /// The policy (`dwcs`, `edf`).
    pub policy: &'static str,
    /// The figure's header.
    pub figure: &'static str,
    /// Its value under the dispatcher, the sched_ext scheduler and the simulation.
    pub values: [String; 3],
}

/// A cell's key without its scheduler: what the drivers of one set share.
fn set_key(s: &RtStats) -> String {
    let parts: Vec<&str> = s.params.key.split('/').filter(|p| *p != s.scheduler).collect();
    parts.join("/")
}

/// The three-driver rows of every set that `live` ran under both drivers of a policy and
/// `simulated` has, under either: one per real-time figure marked `drivers`; empty when there
/// is none.
pub fn rows(live: &[RtStats], simulated: &[RtStats]) -> Vec<DriverRow> {
    let mut out = Vec::new();
    for (plain, scx) in PAIRS {
        for d in live.iter().filter(|s| s.scheduler == plain) {
            let set = set_key(d);
            let of = |stats: &'_ [RtStats], name: &str| -> Option<usize> {
                stats.iter().position(|s| s.scheduler == name && set_key(s) == set)
            };
            let Some(x) = of(live, scx) else { continue };
            let Some(sim) = of(simulated, plain).or_else(|| of(simulated, scx)) else {
                continue;
            };
            for f in FIGURES.iter().filter(|f| f.drivers) {
                out.push(DriverRow {
                    set: set.clone(),
                    policy: plain,
                    figure: f.header,
                    values: [d, &live[x], &simulated[sim]]
                        .map(|s| fmt_summary(&s.figures[f], f.digits)),
                });
            }
        }
    }
    out
}

/// The table's columns, the live drivers labelled with `live` (their run) and the simulation
/// with `simulated`.
pub fn columns(live: &str, simulated: &str) -> Vec<Col<DriverRow>> {
    let value =
        |header: String, i: usize| Col::num(header, move |r: &DriverRow| r.values[i].clone());
    vec![
        Col::text("set", |r: &DriverRow| r.set.clone()),
        Col::text("policy", |r: &DriverRow| r.policy.to_string()),
        Col::text("figure", |r: &DriverRow| r.figure.to_string()),
        value(format!("user-space dispatcher ({live})"), 0),
        value(format!("sched_ext scheduler ({live})"), 1),
        value(format!("simulation ({simulated})"), 2),
    ]
}
