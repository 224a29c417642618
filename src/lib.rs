//! schedlab: the classic Linux scheduler workloads, run faithfully and watched live.
//!
//! Data flows one way: workloads (child processes) → kernel → [`probe`] → Sample →
//! [`model`] → Frame → [`engine`] → [`ui`] and [`cli`], with the recordings and exporters in
//! [`record`]. The pieces, in that order:
//!
//! - [`workload`]: the load generators; the same code runs standalone and under the engine.
//! - [`scenario`]: scenario files (TOML) and presets: which workloads, knobs, and how long;
//!   [`knobs`]: a workload's knobs, their limits and their words.
//! - [`supervisor`]: starts workloads in process groups of their own, and makes sure they end.
//! - [`probe`]: everything that reads the kernel (/proc, cgroups, PSI) into raw Samples.
//! - [`model`]: pure maths from Samples to Frames: rates, CPU shares, fair share, statistics.
//! - [`engine`]: the Lab, the Backend/Command/Event contract, the engine thread, and replay.
//! - [`record`]: what leaves the terminal: recordings, result files, OpenMetrics, plots.
//! - [`explain`]: counterfactual variants of a scenario and what their runs say about a
//!   workload's deviation from its fair share.
//! - [`ui`]: the ratatui dashboard: draws Frames and turns keys into Commands.
//! - [`cli`]: one file per command: tui, run, contest, compare, replay, plot, cleanup.
//! - [`sys`]: host plumbing under them all: the kernel's interfaces, the shared-memory format
//!   the workloads write, and exit safety.

// Output goes through crate::outln!/out!/errln! (sys::exit::output), which never panic on a closed
// pipe; tests keep println!/eprintln!, which the test harness captures.
#![cfg_attr(not(test), warn(clippy::print_stdout, clippy::print_stderr))]

pub mod cli;
pub mod engine;
pub mod explain;
pub mod finding;
pub mod knobs;
pub mod model;
pub mod probe;
pub mod record;
pub mod scenario;
pub mod serve;
pub mod supervisor;
pub mod sys;
pub mod ui;
pub mod workload;
