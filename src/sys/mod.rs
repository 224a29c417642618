//! Host plumbing used by many layers: cgroups, shared-memory counters, the size guard, SysV
//! objects and their ledger, process groups at exit, the lifeline, stdout/stderr that never
//! panic, and a prompt sampling thread.

pub mod cgroup;
pub mod counters;
pub mod groups;
pub mod guard;
pub mod lifeline;
pub mod output;
pub mod priority;
pub mod sysv;
