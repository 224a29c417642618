//! What leaves the terminal: recordings of raw Samples, result files of headless runs (JSON,
//! CSV, text), the OpenMetrics endpoint, and plots.

pub mod atomic;
pub mod latency;
pub mod machine;
pub mod metrics;
pub mod other_tasks;
pub mod plot;
pub mod recording;
pub mod results;
pub mod suite;
pub mod text;
