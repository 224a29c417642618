//! Pure functions from Samples to Frames: rates, CPU share, context-switch rates, run-queue
//! wait, fair share, Jain's index, latency percentiles, where tasks ran, and statistics over
//! repeated runs (means and Welch's test; a rank test for percentiles). No I/O.

pub(crate) mod account;
pub(crate) mod chains;
pub(crate) mod contention;
pub mod cpus;
// The CPU-list type lives with the plumbing (the probe parses and prints lists too).
pub use crate::sys::kernel::cpuset;
pub mod demand;
pub mod derive;
pub mod explain;
pub mod fair;
pub mod frame;
pub mod host;
pub mod latency;
pub mod rank;
pub mod rest;
#[cfg(test)]
mod rest_props;
pub mod solver;
pub(crate) mod stats;
pub(crate) mod thread_rates;
pub mod tree;
pub mod window;

pub use derive::{derive, Model};
pub use frame::{
    Accounting, Cause, CpuFrame, CpuShare, Due, Frame, Latency, MachineFrame, RestGroup, Verdict,
    WorkloadFrame, WorkloadState,
};
