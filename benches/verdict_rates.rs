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
//!
//! A/B in one run: verdict_rates DB FLOOR_RUNS AB_RUNS --within [--per-arm N] [--trials T]
//! takes runs whose matrix has a `work_scale` axis (1 and slowed levels, interleaved in
//! random order). A/A trials split 2N repetitions of level 1 of one run into two arms;
//! slowdown trials draw N of level 1 and N of a slowed level of the same run. Both arms are
//! in one run, so the floors' drift between runs is left out (as `compare RUN --by` does).
//! Affected pairs at a slowed level: below 1.05, the time and throughput figures the
//! slowdown moves (wall, makespan and time_s of every kind but schbench, whose run is fixed
//! in length; schbench's rps_p50); at 1.05 and above, the p99s it moves (schbench's
//! request_p99_us).

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
    /// Per slowed level: (affected pairs, detected).
    slow: BTreeMap<String, (usize, usize)>,
}

fn ids(list: &str) -> Vec<String> {
    list.split(',').filter(|s| !s.is_empty()).map(str::to_string).collect()
}

/// A cell key without its `work_scale` tag, and the tag's level ("1" when there is none).
fn level_of(key: &str) -> (String, String) {
    let mut level = "1".to_string();
    let base: Vec<&str> = key
        .split('/')
        .filter(|part| match part.strip_prefix("work_scale=") {
            Some(l) => {
                level = l.to_string();
                false
            }
            None => true,
        })
        .collect();
    (base.join("/"), level)
}

/// Whether a slowdown of `level` (as the `work_scale` axis makes it) moves figure `m` of
/// cell `key`, for the power count (see the module's text).
fn affected_within(key: &str, m: Metric, level: &str) -> bool {
    let schbench = key.starts_with("schbench");
    let factor: f64 = level.parse().unwrap_or(1.0);
    if factor < 1.05 {
        match m.name() {
            "wall" | "makespan" | "time_s" => !schbench,
            "rps_p50" => schbench,
            _ => false,
        }
    } else {
        m.name() == "request_p99_us" && schbench
    }
}

/// The family's verdicts by every rule: schedlab's first, then [`OtherRule::ALL`]'s.
fn verdicts_of(
    fam: &Family,
    floors: &BTreeMap<(String, String), Floor>,
    params: &Params,
    drift: bool,
) -> Vec<Vec<Verdict>> {
    let pairs: Vec<Pair> = fam
        .iter()
        .map(|((key, m), a, b)| Pair {
            a,
            b,
            better: schedlab_session::verdicts::better(*m),
            floor: floors
                .get(&(level_of(key).0, m.name().to_string()))
                .map(|f| Floor { run_sd: if drift { f.run_sd } else { 0.0 }, ..*f }),
        })
        .collect();
    let mut calls: Vec<Vec<Verdict>> =
        vec![judge(&pairs, params).into_iter().map(|j| j.verdict).collect()];
    for r in OtherRule::ALL {
        calls.push(
            fam.iter()
                .map(|((_, m), a, b)| r.call(a, b, schedlab_session::verdicts::better(*m)))
                .collect(),
        );
    }
    calls
}

/// Counts one A/A family in each rule's tally.
fn count_aa(tallies: &mut [Tally], calls: &[Vec<Verdict>]) {
    for (t, verdicts) in tallies.iter_mut().zip(calls) {
        t.families_alarmed += usize::from(verdicts.iter().any(|v| v.is_change()));
        t.pairs += verdicts.len();
        t.same += verdicts.iter().filter(|v| **v == Verdict::Same).count();
    }
}

/// Counts one slowdown family of `level` in each rule's tally, over the pairs `affected`.
fn count_slow(
    tallies: &mut [Tally],
    calls: &[Vec<Verdict>],
    fam: &Family,
    level: &str,
    affected: impl Fn(&str, Metric) -> bool,
) {
    for (t, verdicts) in tallies.iter_mut().zip(calls) {
        let entry = t.slow.entry(level.to_string()).or_default();
        for (((key, m), ..), v) in fam.iter().zip(verdicts) {
            if affected(key, *m) {
                entry.0 += 1;
                entry.1 += usize::from(*v == Verdict::Regressed);
            }
        }
    }
}

const RULES: [&str; 5] = ["schedlab", "lkp", "pinpoint", "mmtests", "welch (uncorrected)"];

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let within = args.iter().position(|a| a == "--within").map(|i| args.remove(i)).is_some();
    let o = opts(&mut args);
    let (db, floor_run) = match &args[..] {
        [db, floor, ..] => (db, floor),
        _ => {
            panic!("usage: verdict_rates DB FLOOR_RUNS (NORMAL_RUNS SLOW_RUNS | AB_RUNS --within)")
        }
    };
    let store = schedlab_store::Store::open(std::path::Path::new(db)).expect("the database");
    let floor_runs: Vec<Vec<CellRecord>> =
        ids(floor_run).iter().map(|id| load(&store, id)).collect();
    let floors: BTreeMap<(String, String), Floor> = schedlab_session::floor::measure_runs(
        &floor_runs.iter().map(Vec::as_slice).collect::<Vec<_>>(),
    );
    let drift = !within && std::env::var_os("NO_DRIFT").is_none();
    let params = Params { same_within: o.same_within, ..Params::default() };
    let mut tallies: Vec<Tally> = RULES.iter().map(|_| Tally::default()).collect();
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(45);
    let mut family_size = 0;
    let described;
    if within {
        let [_, _, ab] = &args[..] else {
            panic!("usage: verdict_rates DB FLOOR_RUNS AB_RUNS --within")
        };
        let runs: Vec<Vec<CellRecord>> = ids(ab).iter().map(|id| load(&store, id)).collect();
        // Per run, per level, the repetitions of each cell by its key without the level.
        let mut levels: Vec<BTreeMap<String, Pool>> = Vec::new();
        for run in &runs {
            let mut by_level: BTreeMap<String, Pool> = BTreeMap::new();
            for (key, reps) in pool(run) {
                let (base, level) = level_of(&key);
                by_level.entry(level).or_default().insert(base, reps);
            }
            levels.push(by_level);
        }
        let slowed: Vec<String> = {
            let mut l: Vec<String> =
                levels.iter().flat_map(|m| m.keys().filter(|k| *k != "1").cloned()).collect();
            l.sort();
            l.dedup();
            l
        };
        for _ in 0..o.trials {
            let run = &levels[rand::Rng::random_range(&mut rng, 0..levels.len())];
            let base = run.get("1").expect("every A/B run has level 1 of work_scale");
            let (mut a, mut b) = (Pool::new(), Pool::new());
            for (key, reps) in base {
                let mut reps = reps.clone();
                reps.shuffle(&mut rng);
                assert!(
                    reps.len() >= 2 * o.per_arm,
                    "A/A in one run needs {} repetitions of {key}",
                    2 * o.per_arm
                );
                a.insert(key.clone(), reps[..o.per_arm].to_vec());
                b.insert(key.clone(), reps[o.per_arm..2 * o.per_arm].to_vec());
            }
            let fam = draw(&mut rng, &a, &b, o.per_arm, &o.figures);
            family_size = fam.len();
            count_aa(&mut tallies, &verdicts_of(&fam, &floors, &params, drift));
        }
        for level in &slowed {
            let with: Vec<&BTreeMap<String, Pool>> =
                levels.iter().filter(|m| m.contains_key(level)).collect();
            for _ in 0..o.trials {
                let run = with[rand::Rng::random_range(&mut rng, 0..with.len())];
                let fam = draw(&mut rng, &run["1"], &run[level], o.per_arm, &o.figures);
                let calls = verdicts_of(&fam, &floors, &params, drift);
                count_slow(&mut tallies, &calls, &fam, level, |k, m| affected_within(k, m, level));
            }
        }
        described =
            format!("{} A/B runs in one run each (levels 1 and {})", runs.len(), slowed.join(", "));
    } else {
        let [_, _, normal, slow] = &args[..] else {
            panic!("usage: verdict_rates DB FLOOR_RUN NORMAL_RUNS SLOW_RUNS [--per-arm N] [--trials T]")
        };
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
        for _ in 0..o.trials {
            let i = rand::Rng::random_range(&mut rng, 0..normal.len());
            let mut j = rand::Rng::random_range(&mut rng, 0..normal.len() - 1);
            j += usize::from(j >= i);
            let fam = draw(&mut rng, &normal[i], &normal[j], o.per_arm, &o.figures);
            family_size = fam.len();
            count_aa(&mut tallies, &verdicts_of(&fam, &floors, &params, drift));
        }
        for _ in 0..if slow.is_empty() { 0 } else { o.trials } {
            let i = rand::Rng::random_range(&mut rng, 0..normal.len());
            let k = rand::Rng::random_range(&mut rng, 0..slow.len());
            let fam = draw(&mut rng, &normal[i], &slow[k], o.per_arm, &o.figures);
            let calls = verdicts_of(&fam, &floors, &params, drift);
            count_slow(&mut tallies, &calls, &fam, "slow", |k, m| {
                o.affected.iter().any(|f| f == m.name()) && !k.starts_with("schbench")
            });
        }
        described = format!("{} ordinary runs, {} slow", normal.len(), slow.len());
    }
    println!(
        "{} trials each, {} repetitions per arm, {family_size} cell-figure pairs a family ({} floors); {described}; figures {}",
        o.trials,
        o.per_arm,
        floors.len(),
        o.figures.iter().map(|m| m.name()).collect::<Vec<_>>().join(",")
    );
    let levels: Vec<String> = tallies[0].slow.keys().cloned().collect();
    let columns: String =
        levels.iter().map(|l| format!(" slowdown {l} detected (affected pairs) |")).collect();
    println!("| rule | A/A families with a false change | A/A pairs called same |{columns}");
    println!("|---|---:|---:|{}", "---:|".repeat(levels.len()));
    let share = |a: usize, b: usize| {
        if b == 0 {
            "-".to_string()
        } else {
            format!("{:.1}% ({a}/{b})", 100.0 * a as f64 / b as f64)
        }
    };
    for (name, t) in RULES.iter().zip(&tallies) {
        let slow: String = levels
            .iter()
            .map(|l| {
                let (affected, detected) = t.slow.get(l).copied().unwrap_or_default();
                format!(" {} |", share(detected, affected))
            })
            .collect();
        println!(
            "| {name} | {} | {} |{slow}",
            share(t.families_alarmed, o.trials),
            share(t.same, t.pairs),
        );
    }
}
