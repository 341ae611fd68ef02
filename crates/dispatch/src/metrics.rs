//! The dispatcher's self-describing metrics: records, so they live in `schedlab_model::dispatch`.

pub use schedlab_model::dispatch::{Latency, Metrics, PolicyView, TaskMetrics, METRICS_SCHEMA};
