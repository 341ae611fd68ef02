//! The error rates of schedlab's verdicts and of other tools' rules on the same data
//! (benches/verdicts.sh, docs/FINDINGS.md "Verdicts"). From stored runs of one spec: a noise
//! run (the floor), several ordinary runs and several runs with an injected slowdown, made
//! alternately. Each trial picks two different runs (A/A: two ordinary ones; slowdown: an
//! ordinary one as A and a slow one as B), so the drift between runs is in every trial, and
//! draws N repetitions of every cell from each without replacement (whole repetitions: every
//! figure of a drawn repetition comes with it); then it judges the whole family of cells and
//! figures with each rule and counts:
//! - A/A: trials with any `regressed` or `improved` (family-wise false alarms), and the share
//!   of pairs called `same`;
//! - slowdown: the share of affected pairs (figures the slowdown lengthens) called
//!   `regressed`.
//!
//! Usage: verdict_rates DB FLOOR_RUNS NORMAL_RUNS SLOW_RUNS [--per-arm N] [--trials T]
//!        [--figures a,b,...] [--affected a,b,...] [--same-within PCT]
//! (runs as comma lists: `2,4,6,8`; the noise runs' drift is left out with NO_DRIFT=1).

use rand::seq::SliceRandom;
use rand::SeedableRng;
use schedlab_analysis::Metric;
use schedlab_model::CellRecord;
use schedlab_verdict::{judge, Floor, OtherRule, Pair, Params, Verdict};
use std::collections::BTreeMap;

/// Per cell key, its measured repetitions.
type Pool<'r> = BTreeMap<String, Vec<&'r CellRecord>>;

fn pool(records: &[CellRecord]) -> Pool<'_> {
    let mut out: Pool = BTreeMap::new();
    for r in records.iter().filter(|r| !r.warmup && r.status.is_ok()) {
        out.entry(r.params.key.clone()).or_default().push(r);
    }
    out
}

fn load(store: &schedlab_store::Store, id: &str) -> Vec<CellRecord> {
    schedlab_session::subject::load(store, Some(id)).expect("a stored run").cells
}

struct Opts {
    per_arm: usize,
    trials: usize,
    figures: Vec<Metric>,
    affected: Vec<String>,
    same_within: Option<f64>,
}

fn metrics(list: &str) -> Vec<Metric> {
    list.split(',')
        .map(|m| Metric::parse(m).unwrap_or_else(|| panic!("unknown figure {m}")))
        .collect()
}

fn opts(args: &mut Vec<String>) -> Opts {
    let mut take = |flag: &str| {
        let i = args.iter().position(|a| a == flag)?;
        let v = args.remove(i + 1);
        args.remove(i);
        Some(v)
    };
    let figures = take("--figures").unwrap_or_else(|| {
        "wall,makespan,throughput,time_s,us_per_op,wakeup_p99_us,rps_p50,request_p99_us".into()
    });
    let affected = take("--affected").unwrap_or_else(|| "wall,makespan,time_s".into());
    Opts {
        per_arm: take("--per-arm").map_or(10, |v| v.parse().expect("N")),
        trials: take("--trials").map_or(200, |v| v.parse().expect("T")),
        figures: metrics(&figures),
        affected: affected.split(',').map(str::to_string).collect(),
        same_within: take("--same-within")
            .map(|v| v.trim_end_matches('%').parse::<f64>().expect("PCT") / 100.0),
    }
}

/// One drawn family: per (cell, figure), A's and B's values.
type Family = Vec<((String, Metric), Vec<f64>, Vec<f64>)>;

fn draw(
    rng: &mut rand_xoshiro::Xoshiro256PlusPlus,
    a: &Pool,
    b: &Pool,
    n: usize,
    figures: &[Metric],
) -> Family {
    let mut out = Vec::new();
    for (key, reps) in a {
        let Some(other) = b.get(key) else { continue };
        let (mut ra, mut rb) = (reps.clone(), other.clone());
        ra.shuffle(rng);
        rb.shuffle(rng);
        let (ra, rb) = (&ra[..n], &rb[..n]);
        for m in figures {
            let va: Vec<f64> = ra.iter().filter_map(|r| m.value(r)).collect();
            let vb: Vec<f64> = rb.iter().filter_map(|r| m.value(r)).collect();
            if va.len() >= 2 && vb.len() >= 2 {
                out.push(((key.clone(), *m), va, vb));
            }
        }
    }
    out
}

/// One rule's tallies over the trials.
#[derive(Default)]
struct Tally {
    families_alarmed: usize,
    pairs: usize,
    same: usize,
    affected: usize,
    detected: usize,
}

fn ids(list: &str) -> Vec<String> {
    list.split(',').filter(|s| !s.is_empty()).map(str::to_string).collect()
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let o = opts(&mut args);
    let [db, floor_run, normal, slow] = &args[..] else {
        panic!("usage: verdict_rates DB FLOOR_RUN NORMAL_RUNS SLOW_RUNS [--per-arm N] [--trials T]")
    };
    let store = schedlab_store::Store::open(std::path::Path::new(db)).expect("the database");
    let floor_runs: Vec<Vec<CellRecord>> =
        ids(floor_run).iter().map(|id| load(&store, id)).collect();
    let mut floors: BTreeMap<(String, String), Floor> = schedlab_session::floor::measure_runs(
        &floor_runs.iter().map(Vec::as_slice).collect::<Vec<_>>(),
    );
    if std::env::var_os("NO_DRIFT").is_some() {
        floors.values_mut().for_each(|f| f.run_sd = 0.0);
    }
    let normal: Vec<Vec<CellRecord>> = ids(normal).iter().map(|id| load(&store, id)).collect();
    let slow: Vec<Vec<CellRecord>> = ids(slow).iter().map(|id| load(&store, id)).collect();
    let normal: Vec<Pool> = normal.iter().map(|r| pool(r)).collect();
    let slow: Vec<Pool> = slow.iter().map(|r| pool(r)).collect();
    assert!(normal.len() >= 2, "A/A trials need two ordinary runs or more");
    let small =
        normal.iter().chain(&slow).flat_map(|p| p.values().map(Vec::len)).min().unwrap_or(0);
    assert!(
        small >= o.per_arm,
        "every run needs {} repetitions of every cell, one has {small}",
        o.per_arm
    );
    let params = Params { same_within: o.same_within, ..Params::default() };
    let rules = ["schedlab", "lkp", "pinpoint", "mmtests", "welch (uncorrected)"];
    let mut tallies: Vec<Tally> = rules.iter().map(|_| Tally::default()).collect();
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(45);
    let mut family_size = 0;
    for side in ["aa", "slow"] {
        if side == "slow" && slow.is_empty() {
            continue;
        }
        for _ in 0..o.trials {
            let i = rand::Rng::random_range(&mut rng, 0..normal.len());
            let (a, b) = match side {
                "aa" => {
                    let mut j = rand::Rng::random_range(&mut rng, 0..normal.len() - 1);
                    j += usize::from(j >= i);
                    (&normal[i], &normal[j])
                }
                _ => (&normal[i], &slow[rand::Rng::random_range(&mut rng, 0..slow.len())]),
            };
            let fam = draw(&mut rng, a, b, o.per_arm, &o.figures);
            family_size = fam.len();
            let pairs: Vec<Pair> = fam
                .iter()
                .map(|((key, m), a, b)| Pair {
                    a,
                    b,
                    better: schedlab_session::verdicts::better(*m),
                    floor: floors.get(&(key.clone(), m.name().to_string())).copied(),
                })
                .collect();
            let mut calls: Vec<Vec<Verdict>> =
                vec![judge(&pairs, &params).into_iter().map(|j| j.verdict).collect()];
            for r in OtherRule::ALL {
                calls.push(
                    fam.iter()
                        .map(|((_, m), a, b)| r.call(a, b, schedlab_session::verdicts::better(*m)))
                        .collect(),
                );
            }
            for (t, verdicts) in tallies.iter_mut().zip(&calls) {
                if side == "aa" {
                    t.families_alarmed += usize::from(verdicts.iter().any(|v| v.is_change()));
                    t.pairs += verdicts.len();
                    t.same += verdicts.iter().filter(|v| **v == Verdict::Same).count();
                } else {
                    for (((key, m), ..), v) in fam.iter().zip(verdicts) {
                        if o.affected.iter().any(|f| f == m.name()) && !key.starts_with("schbench")
                        {
                            t.affected += 1;
                            t.detected += usize::from(*v == Verdict::Regressed);
                        }
                    }
                }
            }
        }
    }
    println!(
        "{} trials each, {} repetitions per arm, {family_size} cell-figure pairs a family ({} floors); {} ordinary runs, {} slow; figures {}",
        o.trials,
        o.per_arm,
        floors.len(),
        normal.len(),
        slow.len(),
        o.figures.iter().map(|m| m.name()).collect::<Vec<_>>().join(",")
    );
    println!("| rule | A/A families with a false change | A/A pairs called same | slowdown detected (affected pairs) |");
    println!("|---|---:|---:|---:|");
    for (name, t) in rules.iter().zip(&tallies) {
        let share = |a: usize, b: usize| {
            if b == 0 {
                "-".to_string()
            } else {
                format!("{:.1}% ({a}/{b})", 100.0 * a as f64 / b as f64)
            }
        };
        println!(
            "| {name} | {} | {} | {} |",
            share(t.families_alarmed, o.trials),
            share(t.same, t.pairs),
            share(t.detected, t.affected)
        );
    }
}
