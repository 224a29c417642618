//! Host plumbing used by many layers: cgroups, shared-memory counters, the size guard, SysV
//! objects and their ledger, the lifeline, stdout/stderr that never panic, and a prompt
//! sampling thread.

pub mod cgroup;
pub mod counters;
pub mod guard;
pub mod lifeline;
pub mod output;
pub mod priority;
pub mod sysv;
