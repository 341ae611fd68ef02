//! Writes N shard databases of one campaign, M cell repetitions each (4 worker samples a
//! cell, as the quick experiment's small cells), for timing `schedlab merge`
//! (docs/BENCHMARKS.md). Usage: merge_shards DIR [N] [M]

use schedlab_model::{CellParams, CellRecord, CellStatus, Environment, Mode, Sample, StatDelta};
use schedlab_store::{NewRun, Shard, Store};
use std::path::PathBuf;

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().expect("usage: merge_shards DIR [N] [M]"));
    let n: u32 = args.next().map(|s| s.parse().expect("N")).unwrap_or(100);
    let m: u32 = args.next().map(|s| s.parse().expect("M")).unwrap_or(1000);
    std::fs::create_dir_all(&dir).unwrap();
    let env = Environment {
        kernel: "6.18".into(),
        cpu_model: "bench".into(),
        cpus: 2,
        ..Default::default()
    };
    for k in 0..n {
        let path = dir.join(format!("shard-{k}.db"));
        let mut s = Store::open(&path).unwrap();
        let id = s
            .create_run(&NewRun {
                name: "bench",
                mode: Mode::Measured,
                spec_path: "bench.toml",
                spec_text: "name = 'bench'",
                spec_hash: "bench",
                plan_json: "{\"repetitions\": 10}",
                scale: 1.0,
                env: &env,
                command_line: "merge_shards",
            })
            .unwrap();
        s.set_campaign(id, "bench", Shard { index: k, count: n }).unwrap();
        for i in 0..m {
            let cell = k * m + i;
            let rec = CellRecord {
                params: CellParams {
                    cell_id: cell / 10,
                    key: format!("cpu/other/n{}", cell / 10),
                    workload: "cpu".into(),
                    workload_kind: "pi".into(),
                    policy: "other".into(),
                    class: "other".into(),
                    processes: 4,
                    ..Default::default()
                },
                rep: cell % 10,
                ordinal: i,
                status: CellStatus::Ok,
                makespan_s: 1.0,
                stat: StatDelta { user: 100, ctxt: 1000, ..Default::default() },
                samples: (0..4)
                    .map(|w| Sample {
                        index: w,
                        group: "main".into(),
                        pid: 1000 + w as i32,
                        wall_s: 1.0,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            };
            s.insert_cell(id, &rec).unwrap();
        }
        s.finish_run(id, &schedlab_store::RunStatus::Complete, &[]).unwrap();
    }
    eprintln!("wrote {n} shard databases of {m} cell repetitions each in {}", dir.display());
}
