//! `export --format parquet` read back by pyarrow and pandas, value for value against the
//! JSON export, and `export --format hyperfine` against the stored cells (issue #21 item 4).

use crate::util::Lab;
use serde_json::Value;
use std::process::Command;

const SPEC: &str = r#"name = "formats"
repetitions = 3
[matrix]
workload = ["pi"]
policy = ["other", "batch"]
processes = [2]
[workloads.pi]
kind = "pi"
iterations = 200000
"#;

/// Reads a Parquet file with pyarrow (exact values, nulls as null) and pandas (rows, dtypes).
const READ: &str = r#"
import json, sys
try:
    import pandas, pyarrow.parquet as pq
except ImportError as e:
    print(e, file=sys.stderr); sys.exit(3)
t = pq.read_table(sys.argv[1])
df = pandas.read_parquet(sys.argv[1])
print(json.dumps({"rows": t.to_pylist(), "types": {f.name: str(f.type) for f in t.schema}, "pandas_rows": len(df), "pandas_columns": list(df.columns)}))
"#;

#[test]
fn the_parquet_export_reads_in_pandas_with_the_json_exports_values() {
    let lab = Lab::new();
    let spec = lab.spec("f.toml", SPEC);
    lab.ok(&["run", spec.to_str().unwrap(), "-q"]);
    let json: Vec<Value> = lab.samples();
    assert_eq!(json.len(), 2 * 3 * 2);
    let file = lab.path("s.parquet");
    lab.ok(&["export", "--format", "parquet", "-o", file.to_str().unwrap()]);
    let out =
        Command::new(crate::trace_export::python()).args(["-c", READ]).arg(&file).output().unwrap();
    require!(
        out.status.code() != Some(3),
        format!("{} (pip install pandas pyarrow)", String::from_utf8_lossy(&out.stderr).trim())
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got["pandas_rows"], json.len());
    let names: Vec<&String> = json[0].as_object().unwrap().keys().collect();
    let cols: Vec<String> = got["pandas_columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    assert_eq!(cols.iter().collect::<Vec<_>>(), names, "the same columns in the same order");
    let types = &got["types"];
    for (col, want) in [
        ("pid", "int64"),
        ("wall_s", "double"),
        ("policy", "string"),
        ("warmup", "bool"),
        ("user_s", "double"),
    ] {
        assert_eq!(types[col], want, "{col}");
    }
    let rows = got["rows"].as_array().unwrap();
    for (j, p) in json.iter().zip(rows) {
        for (k, v) in j.as_object().unwrap() {
            let w = &p[k];
            let same = match (v, w) {
                (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
                _ => v == w,
            };
            assert!(same, "{k}: json {v}, parquet {w}");
        }
    }
    // An existing file is never overwritten, and parquet needs a file.
    let again = lab.run(&["export", "--format", "parquet", "-o", file.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(2));
    let stdout = lab.run(&["export", "--format", "parquet"]);
    assert_eq!(stdout.status.code(), Some(2), "{}", String::from_utf8_lossy(&stdout.stderr));
}

#[test]
fn the_hyperfine_export_has_a_result_per_cell_with_its_repetitions() {
    let lab = Lab::new();
    let spec = lab.spec("f.toml", SPEC);
    lab.ok(&["run", spec.to_str().unwrap(), "-q"]);
    let doc: Value = serde_json::from_str(&lab.ok(&["export", "--format", "hyperfine"])).unwrap();
    let results = doc["results"].as_array().unwrap();
    let rows = lab.samples();
    assert_eq!(results.len(), 2);
    for r in results {
        let key = r["command"].as_str().unwrap();
        let mine: Vec<&Value> = rows.iter().filter(|s| s["cell_key"] == key).collect();
        let times: Vec<f64> =
            r["times"].as_array().unwrap().iter().map(|t| t.as_f64().unwrap()).collect();
        assert_eq!(times.len(), 3, "{key}");
        for (rep, t) in times.iter().enumerate() {
            let m =
                mine.iter().find(|s| s["rep"] == rep).unwrap()["cell_makespan_s"].as_f64().unwrap();
            assert_eq!(*t, m, "{key} rep {rep}");
        }
        let mean = times.iter().sum::<f64>() / 3.0;
        assert!((r["mean"].as_f64().unwrap() - mean).abs() < 1e-12);
        let user: f64 = mine.iter().map(|s| s["user_s"].as_f64().unwrap()).sum::<f64>() / 3.0;
        assert!((r["user"].as_f64().unwrap() - user).abs() < 1e-9, "{key}");
        for k in ["stddev", "median", "system", "min", "max"] {
            assert!(r[k].is_number(), "{k} in {r}");
        }
        assert_eq!(r["exit_codes"], serde_json::json!([0, 0, 0]));
        assert_eq!(r["parameters"]["processes"], "2");
    }
    let jobs = lab.run(&["export", "--format", "hyperfine", "--jobs"]);
    assert_eq!(jobs.status.code(), Some(2));
}
