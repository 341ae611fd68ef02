//! Sharding real plans (the plan crate cannot parse specs).

use crate::{Plan, ShardBy, ShardSpec, Step};
use std::collections::BTreeMap;

fn quick(extra: &str) -> Plan {
    let text =
        crate::BUILTIN_QUICK.replace("repetitions = 2", &format!("repetitions = 3\n{extra}"));
    crate::parse("quick.toml", &text).unwrap_or_else(|e| panic!("{e}")).plan
}

fn shards(plan: &Plan, n: u32, by: ShardBy) -> Vec<Vec<Step>> {
    (0..n).map(|k| plan.shard_steps(ShardSpec { index: k, count: n }, by)).collect()
}

#[test]
fn shards_split_the_measured_steps_exactly_once_whatever_n() {
    let plan = quick("");
    let all: Vec<Step> = plan.steps();
    for by in [ShardBy::Step, ShardBy::Cell] {
        for n in 1..=7 {
            let mut got: Vec<Step> = shards(&plan, n, by).concat();
            got.sort_by_key(|s| (s.cell, s.rep));
            let mut want = all.clone();
            want.sort_by_key(|s| (s.cell, s.rep));
            assert_eq!(got, want, "{n} shards by {by:?}");
        }
    }
}

#[test]
fn a_shard_depends_only_on_the_plan_and_n_and_keeps_the_plan_order() {
    let (a, b) = (quick("order = \"random\"\nseed = 5"), quick("order = \"random\"\nseed = 5"));
    assert_eq!(shards(&a, 3, ShardBy::Step), shards(&b, 3, ShardBy::Step));
    let order: BTreeMap<(u32, u32), usize> =
        a.steps().iter().enumerate().map(|(i, s)| ((s.cell, s.rep), i)).collect();
    for shard in shards(&a, 3, ShardBy::Step) {
        let pos: Vec<usize> = shard.iter().map(|s| order[&(s.cell, s.rep)]).collect();
        assert!(pos.windows(2).all(|w| w[0] < w[1]), "a shard runs its steps in the plan's order");
    }
    // Ownership does not depend on the execution order: the same cells, shuffled differently.
    let c = quick("order = \"random\"\nseed = 6");
    let owned = |p: &Plan| {
        let mut s = p.shard_steps(ShardSpec { index: 1, count: 3 }, ShardBy::Step);
        s.sort_by_key(|s| (s.cell, s.rep));
        s
    };
    assert_eq!(owned(&a), owned(&c));
}

#[test]
fn shards_are_balanced_by_estimated_work_within_one_unit() {
    let plan = quick("");
    let work: Vec<f64> = plan.cells.iter().map(|c| plan.estimated_work(c)).collect();
    assert!(work.iter().all(|w| *w > 0.0));
    let cpu = plan.cells.iter().position(|c| c.key.starts_with("cpu/")).unwrap();
    let io = plan.cells.iter().position(|c| c.key.starts_with("io/")).unwrap();
    assert!(
        work[cpu] > 5.0 * work[io],
        "100M pi iterations outweigh copying 50 KiB in 50 synchronous writes: {} vs {}",
        work[cpu],
        work[io]
    );
    for n in [2, 3, 5] {
        let map = plan.shard_map(n, ShardBy::Step);
        let total: f64 = map.loads().iter().sum();
        let biggest = work.iter().cloned().fold(0.0, f64::max);
        for (k, l) in map.loads().iter().enumerate() {
            assert!(
                (l - total / n as f64).abs() <= biggest + 1e-9,
                "shard {k}/{n} has {l} of {total}"
            );
        }
    }
}

#[test]
fn by_cell_keeps_every_repetition_of_a_cell_in_one_shard_with_its_warmups() {
    let plan = quick("warmup = 1");
    for (k, shard) in shards(&plan, 4, ShardBy::Cell).iter().enumerate() {
        let cells: std::collections::BTreeSet<u32> = shard.iter().map(|s| s.cell).collect();
        for c in cells {
            let reps: Vec<(u32, bool)> =
                shard.iter().filter(|s| s.cell == c).map(|s| (s.rep, s.warmup)).collect();
            assert_eq!(
                reps,
                vec![(0, true), (0, false), (1, false), (2, false)],
                "shard {k}, cell {c}"
            );
        }
    }
    // By step, a cell split between two shards is warmed up in each.
    for shard in shards(&plan, 4, ShardBy::Step) {
        for s in shard.iter().filter(|s| !s.warmup) {
            let first = shard.iter().position(|x| x.cell == s.cell).unwrap();
            assert!(shard[first].warmup, "cell {} is warmed up first in its shard", s.cell);
        }
    }
}

#[test]
fn a_shard_is_written_k_slash_n_from_zero() {
    assert_eq!("1/4".parse::<ShardSpec>(), Ok(ShardSpec { index: 1, count: 4 }));
    for bad in ["4/4", "1", "a/2", "0/0", "-1/2"] {
        assert!(bad.parse::<ShardSpec>().is_err(), "{bad}");
    }
    assert_eq!(ShardSpec { index: 2, count: 5 }.to_string(), "2/5");
}
