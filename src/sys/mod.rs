//! Host plumbing used by many layers: cgroups, shared-memory counters, the size guard, SysV
//! objects and their ledger, and the lifeline.

pub mod cgroup;
pub mod counters;
pub mod guard;
pub mod lifeline;
pub mod sysv;
