//! The experiment file exactly as written: serde structs that reject unknown keys.
//! Every value that validation may complain about keeps its span.

use serde::Deserialize;
use serde_spanned::Spanned;
use std::collections::BTreeMap;
use std::ops::Range;

/// The top level of an experiment file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSpec {
    pub name: Spanned<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub repetitions: Option<Spanned<toml::Value>>,
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
    #[serde(default)]
    pub cpu_dma_latency: Option<Spanned<toml::Value>>,
    #[serde(default)]
    pub trace: Option<Spanned<toml::Value>>,
    #[serde(default)]
    pub trace_buffer_kb: Option<Spanned<i64>>,
    pub matrix: Spanned<RawMatrix>,
    #[serde(default)]
    pub workloads: BTreeMap<Spanned<String>, Spanned<RawWorkload>>,
    #[serde(default)]
    pub policies: BTreeMap<Spanned<String>, Spanned<RawPolicy>>,
    #[serde(default)]
    pub groups: BTreeMap<Spanned<String>, Spanned<RawGroup>>,
    #[serde(default)]
    pub device: Option<Spanned<RawDevice>>,
    #[serde(default)]
    pub iosched: BTreeMap<Spanned<String>, Spanned<RawIosched>>,
    #[serde(default)]
    pub knobs: BTreeMap<Spanned<String>, Spanned<toml::Value>>,
    #[serde(default)]
    pub allow_rt_unthrottled: Option<Spanned<bool>>,
}

/// `[matrix.knobs]`: each knob's values, one cell per value.
pub type RawKnobAxes = BTreeMap<Spanned<String>, Spanned<Vec<Spanned<toml::Value>>>>;

/// `[device]`: where I/O workloads put their files.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDevice {
    #[serde(default)]
    pub path: Option<Spanned<String>>,
    #[serde(default)]
    pub size_mib: Option<Spanned<i64>>,
    #[serde(default)]
    pub fs: Option<Spanned<String>>,
    #[serde(default)]
    pub direct_io: Option<Spanned<bool>>,
    #[serde(default)]
    pub queue: Option<Spanned<String>>,
    #[serde(default)]
    pub confirm_device: Option<Spanned<String>>,
    #[serde(default)]
    pub drop_caches: Option<Spanned<bool>>,
}

/// `[iosched.NAME]`: a scheduler with tunables, usable on the `iosched` axis.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawIosched {
    pub scheduler: Spanned<String>,
    #[serde(default)]
    pub tunables: BTreeMap<Spanned<String>, Spanned<toml::Value>>,
}

/// One written value of an axis key, typed as its line in [`axis_keys!`] declares it.
#[derive(Debug, Clone, Copy)]
pub enum RawValue<'a> {
    Str(&'a Spanned<String>),
    Int(&'a Spanned<i64>),
    Float(&'a Spanned<f64>),
    Toml(&'a Spanned<toml::Value>),
}

impl RawValue<'_> {
    /// Where the value is written.
    pub fn span(&self) -> Range<usize> {
        match self {
            RawValue::Str(v) => v.span(),
            RawValue::Int(v) => v.span(),
            RawValue::Float(v) => v.span(),
            RawValue::Toml(v) => v.span(),
        }
    }
}

/// A TOML type an axis key may be declared with in [`axis_keys!`].
pub trait RawType: Sized {
    /// The written value, typed.
    fn raw(v: &Spanned<Self>) -> RawValue<'_>;
}

impl RawType for String {
    fn raw(v: &Spanned<Self>) -> RawValue<'_> {
        RawValue::Str(v)
    }
}

impl RawType for i64 {
    fn raw(v: &Spanned<Self>) -> RawValue<'_> {
        RawValue::Int(v)
    }
}

impl RawType for f64 {
    fn raw(v: &Spanned<Self>) -> RawValue<'_> {
        RawValue::Float(v)
    }
}

impl RawType for toml::Value {
    fn raw(v: &Spanned<Self>) -> RawValue<'_> {
        RawValue::Toml(v)
    }
}

/// An axis key's list of values as written.
#[derive(Debug)]
pub struct RawList<'a> {
    /// Where the list is written.
    pub span: Range<usize>,
    /// Its values.
    pub values: Vec<RawValue<'a>>,
}

fn list<T: RawType>(l: &Spanned<Vec<Spanned<T>>>) -> RawList<'_> {
    RawList { span: l.span(), values: l.get_ref().iter().map(T::raw).collect() }
}

/// Declares the axis keys of `[matrix]`, `[matrix.groups.NAME]` and `[groups.NAME]` (each
/// axis's checks are in `crate::axes`, by name): `group` and `group_later` are group
/// settings, `[groups.NAME] background` is declared between them and `[matrix] groups`
/// before the `cell` axes, so that serde lists every table's keys in the order it always
/// has. A new group axis goes at the end of `group_later`, a new cell axis at the end of
/// `cell`.
macro_rules! axis_keys {
    (
        group { $($g:ident: $gt:ty,)* }
        group_later { $($l:ident: $lt:ty,)* }
        cell { $($c:ident: $ct:ty,)* }
    ) => {
        /// A named worker group: its fixed settings.
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct RawGroup {
            $(#[serde(default)] pub $g: Option<Spanned<$gt>>,)*
            #[serde(default)]
            pub background: Option<Spanned<bool>>,
            $(#[serde(default)] pub $l: Option<Spanned<$lt>>,)*
        }

        impl RawGroup {
            /// Each setting written, by key, in declaration order.
            pub fn given(&self) -> Vec<(&'static str, RawValue<'_>)> {
                let mut out = Vec::new();
                $(if let Some(v) = &self.$g { out.push((stringify!($g), RawType::raw(v))); })*
                $(if let Some(v) = &self.$l { out.push((stringify!($l), RawType::raw(v))); })*
                out
            }
        }

        /// Axes for one group: every group setting may be swept.
        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct RawGroupAxes {
            $(#[serde(default)] pub $g: Option<Spanned<Vec<Spanned<$gt>>>>,)*
            $(#[serde(default)] pub $l: Option<Spanned<Vec<Spanned<$lt>>>>,)*
        }

        impl RawGroupAxes {
            /// Each axis written, by key, with its list.
            pub fn given(&self) -> Vec<(&'static str, RawList<'_>)> {
                let mut out = Vec::new();
                $(if let Some(l) = &self.$g { out.push((stringify!($g), list(l))); })*
                $(if let Some(l) = &self.$l { out.push((stringify!($l), list(l))); })*
                out
            }
        }

        /// The cell axes of `[matrix]`, taken out of it by [`RawMatrix::split`].
        #[derive(Debug, Default)]
        pub struct RawCellAxes {
            $(pub $c: Option<Spanned<Vec<Spanned<$ct>>>>,)*
        }

        impl RawCellAxes {
            /// Each axis written, by key, with its list.
            pub fn given(&self) -> Vec<(&'static str, RawList<'_>)> {
                let mut out = Vec::new();
                $(if let Some(l) = &self.$c { out.push((stringify!($c), list(l))); })*
                out
            }
        }

        /// The axes whose product is the set of cells. The top-level group axes are those of
        /// the group "main"; `groups.NAME` holds the axes of other groups.
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct RawMatrix {
            $(#[serde(default)] pub $g: Option<Spanned<Vec<Spanned<$gt>>>>,)*
            $(#[serde(default)] pub $l: Option<Spanned<Vec<Spanned<$lt>>>>,)*
            #[serde(default)]
            pub groups: BTreeMap<Spanned<String>, Spanned<RawGroupAxes>>,
            $(#[serde(default)] pub $c: Option<Spanned<Vec<Spanned<$ct>>>>,)*
            #[serde(default)]
            pub knobs: RawKnobAxes,
        }

        impl RawMatrix {
            /// Splits the cell axes, the top-level group axes (the "main" group's), the
            /// other groups' axes and the knob axes.
            pub fn split(self) -> (RawCellAxes, RawGroupAxes, BTreeMap<Spanned<String>, Spanned<RawGroupAxes>>, RawKnobAxes) {
                let cell = RawCellAxes { $($c: self.$c,)* };
                let main = RawGroupAxes { $($g: self.$g,)* $($l: self.$l,)* };
                (cell, main, self.groups, self.knobs)
            }
        }

        /// The keys of the group axes, as declared.
        #[cfg(test)]
        pub const GROUP_KEYS: &[&str] = &[$(stringify!($g),)* $(stringify!($l),)*];
        /// The keys of the cell axes, as declared.
        #[cfg(test)]
        pub const CELL_KEYS: &[&str] = &[$(stringify!($c),)*];
    };
}

axis_keys! {
    group {
        workload: String,
        processes: i64,
        policy: String,
        priority: i64,
        nice: i64,
        affinity: toml::Value,
        cpu_weight: i64,
        cpu_max: toml::Value,
        cpuset: toml::Value,
    }
    group_later {
        scheduler: String,
        utilisation: f64,
        slice_us: i64,
        work_scale: f64,
    }
    cell {
        iosched: String,
        cpu_scheduler: toml::Value,
    }
}

/// A named workload definition; which keys apply depends on `kind`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWorkload {
    pub kind: Spanned<String>,
    #[serde(default)]
    pub trace: Option<Spanned<toml::Value>>,
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
    #[serde(default)]
    pub parse: Option<Spanned<String>>,
    #[serde(default)]
    pub hashes: Option<Spanned<i64>>,
    #[serde(default)]
    pub files: Option<Spanned<i64>>,
    #[serde(default)]
    pub file_bytes: Option<Spanned<i64>>,
    /// A count for par_write/par_read, a bool for messaging and pipe.
    #[serde(default)]
    pub threads: Option<Spanned<toml::Value>>,
    #[serde(default)]
    pub buffer_bytes: Option<Spanned<i64>>,
    #[serde(default)]
    pub mode: Option<Spanned<String>>,
    // periodic
    #[serde(default)]
    pub body: Option<Spanned<String>>,
    #[serde(default)]
    pub duration_s: Option<Spanned<f64>>,
    #[serde(default)]
    pub quantum_ms: Option<Spanned<f64>>,
    #[serde(default)]
    pub cpu: Option<Spanned<i64>>,
    #[serde(default)]
    pub cpus: Option<Spanned<toml::Value>>,
    #[serde(default)]
    pub work_fraction: Option<Spanned<f64>>,
    #[serde(default)]
    pub fill: Option<Spanned<bool>>,
    #[serde(default)]
    pub scheduler: Option<Spanned<String>>,
    #[serde(default)]
    pub read_kib: Option<Spanned<i64>>,
    #[serde(default)]
    pub tasks: Option<Spanned<Vec<Spanned<RawTask>>>>,
    #[serde(default)]
    pub generate: Option<Spanned<RawGenerate>>,
    #[serde(default)]
    pub canonical: Option<Spanned<RawCanonical>>,
    #[serde(default)]
    pub packets: Option<Spanned<i64>>,
    #[serde(default)]
    pub packet_bytes: Option<Spanned<i64>>,
    #[serde(default)]
    pub reads: Option<Spanned<i64>>,
    #[serde(default)]
    pub read_bytes: Option<Spanned<i64>>,
    // messaging, pipe, schbench
    #[serde(default)]
    pub groups: Option<Spanned<i64>>,
    #[serde(default)]
    pub fds: Option<Spanned<i64>>,
    #[serde(default)]
    pub loops: Option<Spanned<i64>>,
    #[serde(default)]
    pub ipc: Option<Spanned<String>>,
    #[serde(default)]
    pub message_bytes: Option<Spanned<i64>>,
    #[serde(default)]
    pub pairs: Option<Spanned<i64>>,
    #[serde(default)]
    pub message_threads: Option<Spanned<i64>>,
    #[serde(default)]
    pub workers: Option<Spanned<i64>>,
    #[serde(default)]
    pub runtime_s: Option<Spanned<f64>>,
    #[serde(default)]
    pub operations: Option<Spanned<i64>>,
    #[serde(default)]
    pub footprint_kb: Option<Spanned<i64>>,
    #[serde(default)]
    pub sleep_us: Option<Spanned<i64>>,
    #[serde(default)]
    pub rps: Option<Spanned<i64>>,
}

/// One task of an explicit periodic set, times in milliseconds.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTask {
    pub c_ms: Spanned<f64>,
    pub t_ms: Spanned<f64>,
    #[serde(default)]
    pub d_ms: Option<Spanned<f64>>,
    #[serde(default)]
    pub x: Option<Spanned<i64>>,
    #[serde(default)]
    pub y: Option<Spanned<i64>>,
    #[serde(default)]
    pub phase_ms: Option<Spanned<f64>>,
    #[serde(default)]
    pub priority: Option<Spanned<i64>>,
}

/// A generated periodic set (UUniFast-Discard, log-uniform periods).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGenerate {
    pub tasks: Spanned<i64>,
    #[serde(default)]
    pub utilisation: Option<Spanned<f64>>,
    #[serde(default)]
    pub measure: Option<Spanned<String>>,
    #[serde(default)]
    pub min_period_ms: Option<Spanned<f64>>,
    #[serde(default)]
    pub max_period_ms: Option<Spanned<f64>>,
    #[serde(default)]
    pub c_granularity_ms: Option<Spanned<f64>>,
    #[serde(default)]
    pub x: Option<Spanned<i64>>,
    #[serde(default)]
    pub y: Option<Spanned<i64>>,
    #[serde(default)]
    pub seed: Option<Spanned<i64>>,
    #[serde(default)]
    pub canonical: Option<Spanned<bool>>,
    #[serde(default)]
    pub sets: Option<Spanned<i64>>,
    #[serde(default)]
    pub live: Option<Spanned<i64>>,
    #[serde(default)]
    pub job_records: Option<Spanned<bool>>,
    #[serde(default)]
    pub horizon: Option<Spanned<String>>,
}

/// A canonical DWCS set: C = the quantum, T = period_quanta quanta.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCanonical {
    pub tasks: Spanned<i64>,
    #[serde(default)]
    pub x: Option<Spanned<i64>>,
    #[serde(default)]
    pub y: Option<Spanned<i64>>,
    pub period_quanta: Spanned<i64>,
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
    pub slice_us: Option<Spanned<i64>>,
    #[serde(default)]
    pub runtime_us: Option<Spanned<i64>>,
    #[serde(default)]
    pub deadline_us: Option<Spanned<i64>>,
    #[serde(default)]
    pub period_us: Option<Spanned<i64>>,
}
