//! The shared-memory format between a workload and whoever watches it: the mapping (`shm`),
//! the per-thread operation counters and latency histograms (`counters`), the histograms'
//! layout (`histogram`) and the send-time stamp a message carries (`stamp`), the last two
//! core only, so that the std-less programs of `src/bin/` include them as they are.

pub mod counters;
pub mod histogram;
pub mod shm;
pub mod stamp;
