//! The originals' outputs read into the benchmark figures a native kind reports
//! (`model::BenchFigures`), for a `command` workload with `parse`: hackbench's and `perf bench
//! sched messaging`'s time, `perf bench sched pipe`'s µs per op and ops per second, and
//! schbench's percentiles (its text on stderr, or its `--json` on stdout, in each shape its
//! versions wrote). Every line of the stream read must be one the original prints: any other
//! line, or a figure missing, is an [`Unparsed`] naming the line.

use schedlab_model::{BenchFigures, LatencyPercentiles, RpsPercentiles};
use schedlab_plan::OutputParser;
use std::collections::BTreeMap;

/// Why an output did not give its figures: the line that did not match (or the last line
/// read, when a figure was missing) and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{parser} output did not parse: {why}: {line:?}")]
pub struct Unparsed {
    /// The parser's name.
    pub parser: &'static str,
    /// What was expected.
    pub why: String,
    /// The line.
    pub line: String,
}

/// The figures `parser` reads from a command's `stdout` and `stderr`.
pub fn parse(parser: OutputParser, stdout: &str, stderr: &str) -> Result<BenchFigures, Unparsed> {
    let mut f = match parser {
        OutputParser::Hackbench => hackbench(stdout),
        OutputParser::PerfBenchPipe => perf_pipe(stdout),
        OutputParser::Schbench => match stdout.trim_start().starts_with('{') {
            true => schbench_json(stdout),
            false => schbench_text(stderr),
        },
    }
    .map_err(|(why, line)| Unparsed { parser: parser.name(), why, line })?;
    f.source = parser.name().to_string();
    Ok(f)
}

type Failed = (String, String);

/// The last non-empty line, for a figure that never came.
fn last_line(text: &str) -> String {
    text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("(no output)").to_string()
}

/// The number after `prefix` (and before `suffix`) in `line`, trimmed.
fn number(line: &str, prefix: &str, suffix: &str) -> Option<f64> {
    let rest = line.trim().strip_prefix(prefix)?.trim();
    rest.strip_suffix(suffix)?.trim().parse().ok()
}

/// `Time: 0.123` (hackbench) or `Total time: 0.123 [sec]` (perf bench sched messaging).
fn hackbench(out: &str) -> Result<BenchFigures, Failed> {
    let mut time = None;
    for line in out.lines() {
        let t = line.trim();
        if t.is_empty()
            || t.starts_with('#')
            || t.starts_with("Running in ")
            || t.starts_with("Each sender will pass ")
        {
            continue;
        }
        match number(t, "Time:", "").or_else(|| number(t, "Total time:", "[sec]")) {
            Some(x) => time = Some(x),
            None => return Err(("not a line hackbench prints".into(), line.to_string())),
        }
    }
    let time_s =
        time.ok_or_else(|| ("no `Time:` or `Total time:` line".to_string(), last_line(out)))?;
    Ok(BenchFigures { time_s: Some(time_s), ..Default::default() })
}

/// `Total time: X [sec]`, `X usecs/op`, `N ops/sec`.
fn perf_pipe(out: &str) -> Result<BenchFigures, Failed> {
    let (mut us, mut ops) = (None, None);
    for line in out.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') || number(t, "Total time:", "[sec]").is_some() {
            continue;
        }
        if let Some(x) = number(t, "", "usecs/op") {
            us = Some(x);
        } else if let Some(x) = number(t, "", "ops/sec") {
            ops = Some(x);
        } else {
            return Err(("not a line perf bench sched pipe prints".into(), line.to_string()));
        }
    }
    match (us, ops) {
        (Some(us), Some(ops)) => {
            Ok(BenchFigures { us_per_op: Some(us), ops_per_s: Some(ops), ..Default::default() })
        }
        _ => Err(("no `usecs/op` and `ops/sec` lines".into(), last_line(out))),
    }
}

/// The lines schbench prints besides its percentile blocks.
const SCHBENCH_OTHER: [&str; 9] = [
    "setting worker threads to ",
    "average rps: ",
    "current rps: ",
    "sched delay: ",
    "warmup done",
    "Pinning to ",
    "split mode",
    "matrix sizes",
    "final rps goal was ",
];

/// A block's percentiles as printed, (percentile, value), and its total samples.
#[derive(Default)]
struct Printed {
    at: Vec<(f64, f64)>,
    samples: u64,
}

impl Printed {
    fn get(&self, p: f64) -> Option<f64> {
        self.at.iter().find(|(q, _)| (*q - p).abs() < 1e-9).map(|(_, v)| *v)
    }

    fn latency(&self) -> Option<LatencyPercentiles> {
        Some(LatencyPercentiles {
            p50: self.get(50.0)?,
            p90: self.get(90.0)?,
            p99: self.get(99.0)?,
            p999: self.get(99.9)?,
            samples: self.samples,
        })
    }

    fn rps(&self) -> Option<RpsPercentiles> {
        Some(RpsPercentiles {
            p20: self.get(20.0)?,
            p50: self.get(50.0)?,
            p90: self.get(90.0)?,
            samples: self.samples,
        })
    }
}

/// schbench's stderr: the last block of each kind (the final report follows the interval
/// reports of a long run).
fn schbench_text(err: &str) -> Result<BenchFigures, Failed> {
    const HEADS: [&str; 3] =
        ["Wakeup Latencies percentiles", "Request Latencies percentiles", "RPS percentiles"];
    let mut blocks: [Printed; 3] = Default::default();
    let mut current: Option<usize> = None;
    let mut average = None;
    for line in err.lines() {
        let t = line.trim();
        if let Some(b) = HEADS.iter().position(|h| t.starts_with(h)) {
            // `... runtime 2 (s) (1825 total samples)`
            let samples = t
                .rsplit_once('(')
                .and_then(|(_, r)| r.split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            blocks[b] = Printed { at: Vec::new(), samples };
            current = Some(b);
            continue;
        }
        if let Some(p) = percentile_line(t) {
            match current {
                Some(b) => blocks[b].at.push(p),
                None => {
                    return Err(("a percentile outside a schbench block".into(), line.to_string()))
                }
            }
            continue;
        }
        if t.is_empty() || t.starts_with("min=") {
            continue;
        }
        if let Some(x) = number(t, "average rps:", "") {
            average = Some(x);
        }
        if !SCHBENCH_OTHER.iter().any(|o| t.starts_with(o)) {
            return Err(("not a line schbench prints".into(), line.to_string()));
        }
    }
    let missing = |what: &str| (format!("no {what} percentiles"), last_line(err));
    Ok(BenchFigures {
        wakeup_us: Some(
            blocks[0].latency().ok_or_else(|| missing("Wakeup Latencies (50, 90, 99, 99.9)"))?,
        ),
        request_us: Some(
            blocks[1].latency().ok_or_else(|| missing("Request Latencies (50, 90, 99, 99.9)"))?,
        ),
        rps: Some(blocks[2].rps().ok_or_else(|| missing("RPS (20, 50, 90)"))?),
        average_rps: average,
        ..Default::default()
    })
}

/// `* 99.0th: 3180       (164 samples)` as (99.0, 3180).
fn percentile_line(t: &str) -> Option<(f64, f64)> {
    let t = t.strip_prefix("* ").unwrap_or(t);
    let (p, rest) = t.split_once("th:")?;
    Some((p.trim().parse().ok()?, rest.split_whitespace().next()?.parse().ok()?))
}

/// schbench's `--json`, in each shape its versions wrote: `{"schbench": {"wakeup_latency":
/// {"percentiles": {"50.0": ..}}, ..}}` (its first), then `wakeup_latency_pct50.0` keys
/// under `normal` or `int`.
#[derive(serde::Deserialize)]
struct SchbenchJson {
    #[serde(default)]
    normal: BTreeMap<String, Scalar>,
    #[serde(default)]
    int: BTreeMap<String, Scalar>,
    #[serde(default)]
    schbench: BTreeMap<String, Field>,
}

/// A value of the flat shapes: a number, or text (the kernel version, the host, ...).
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Scalar {
    Number(f64),
    Other(serde::de::IgnoredAny),
}

/// A value of the first shape: a statistic's percentiles, or anything else.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Field {
    Stats { percentiles: BTreeMap<String, f64> },
    Other(serde::de::IgnoredAny),
}

fn schbench_json(out: &str) -> Result<BenchFigures, Failed> {
    let first = |why: &str| (why.to_string(), out.lines().next().unwrap_or("").to_string());
    let doc: SchbenchJson = serde_json::from_str(out.trim())
        .map_err(|e| first(&format!("not schbench's JSON ({e})")))?;
    // Every number by its flat name (`wakeup_latency_pct50.0`).
    let mut flat: BTreeMap<String, f64> = doc
        .normal
        .into_iter()
        .chain(doc.int)
        .filter_map(|(k, v)| match v {
            Scalar::Number(x) => Some((k, x)),
            Scalar::Other(_) => None,
        })
        .collect();
    for (name, field) in doc.schbench {
        if let Field::Stats { percentiles } = field {
            flat.extend(percentiles.into_iter().map(|(p, x)| (format!("{name}_pct{p}"), x)));
        }
    }
    let get = |k: &str| {
        flat.get(k).copied().ok_or_else(|| first(&format!("no \"{k}\" in schbench's JSON")))
    };
    let lat = |what: &str| -> Result<LatencyPercentiles, Failed> {
        Ok(LatencyPercentiles {
            p50: get(&format!("{what}_pct50.0"))?,
            p90: get(&format!("{what}_pct90.0"))?,
            p99: get(&format!("{what}_pct99.0"))?,
            p999: get(&format!("{what}_pct99.9"))?,
            samples: 0,
        })
    };
    Ok(BenchFigures {
        wakeup_us: Some(lat("wakeup_latency")?),
        request_us: Some(lat("request_latency")?),
        rps: Some(RpsPercentiles {
            p20: get("rps_pct20.0")?,
            p50: get("rps_pct50.0")?,
            p90: get("rps_pct90.0")?,
            samples: 0,
        }),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests;
