//! Pure functions from Samples to Frames: rates, CPU share, context-switch rates, run-queue
//! wait, fair share, Jain's index, and statistics over repeated runs. No I/O.

pub mod cpuset;
pub mod derive;
pub mod fair;
pub mod frame;
pub mod solver;
pub mod stats;

pub use derive::{derive, Model};
pub use frame::{Accounting, Frame, MachineFrame, WorkloadFrame, WorkloadState};
