//! schedlab: the classic Linux scheduler workloads, run faithfully and watched live.
//!
//! Data flows one way: workloads (child processes) → kernel → [`probe`] → Sample →
//! [`model`] → Frame → [`ui`] and the exporters. See DESIGN in the README.

pub mod cli;
pub mod engine;
pub mod model;
pub mod probe;
pub mod record;
pub mod scenario;
pub mod supervisor;
pub mod sys;
pub mod ui;
pub mod workload;
