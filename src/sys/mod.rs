//! Host plumbing used by many layers: cgroups, shared-memory counters and latency histograms,
//! the size guard, SysV objects and their ledger, the lifeline, and stdout/stderr that never
//! panic.

pub mod cgroup;
pub mod counters;
pub mod guard;
pub mod histogram;
pub mod lifeline;
pub mod output;
pub mod sysv;
