//! The experiment file exactly as written: serde structs that reject unknown keys.
//! Every value that validation may complain about keeps its span.

use serde::Deserialize;
use serde_spanned::Spanned;
use std::collections::BTreeMap;

/// The top level of an experiment file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSpec {
    pub name: Spanned<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub repetitions: Option<Spanned<i64>>,
    #[serde(default)]
    pub warmup: Option<Spanned<i64>>,
    #[serde(default)]
    pub order: Option<Spanned<String>>,
    #[serde(default)]
    pub seed: Option<Spanned<i64>>,
    #[serde(default)]
    pub timeout_s: Option<Spanned<f64>>,
    #[serde(default)]
    pub dir: Option<Spanned<String>>,
    pub matrix: Spanned<RawMatrix>,
    #[serde(default)]
    pub workloads: BTreeMap<Spanned<String>, Spanned<RawWorkload>>,
    #[serde(default)]
    pub policies: BTreeMap<Spanned<String>, Spanned<RawPolicy>>,
}

/// The axes whose product is the set of cells.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMatrix {
    pub workload: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    pub policy: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub processes: Option<Spanned<Vec<Spanned<i64>>>>,
    #[serde(default)]
    pub priority: Option<Spanned<Vec<Spanned<i64>>>>,
    #[serde(default)]
    pub nice: Option<Spanned<Vec<Spanned<i64>>>>,
}

/// A named workload definition; which keys apply depends on `kind`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWorkload {
    pub kind: Spanned<String>,
    #[serde(default)]
    pub iterations: Option<Spanned<i64>>,
    #[serde(default)]
    pub write_every: Option<Spanned<i64>>,
    #[serde(default)]
    pub transfer_bytes: Option<Spanned<i64>>,
    #[serde(default)]
    pub block_bytes: Option<Spanned<i64>>,
    #[serde(default)]
    pub input_bytes: Option<Spanned<i64>>,
    #[serde(default)]
    pub argv: Option<Spanned<Vec<Spanned<String>>>>,
}

/// A named policy definition.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPolicy {
    pub class: Spanned<String>,
    #[serde(default)]
    pub priority: Option<Spanned<i64>>,
    #[serde(default)]
    pub nice: Option<Spanned<i64>>,
    #[serde(default)]
    pub runtime_us: Option<Spanned<i64>>,
    #[serde(default)]
    pub deadline_us: Option<Spanned<i64>>,
    #[serde(default)]
    pub period_us: Option<Spanned<i64>>,
}
