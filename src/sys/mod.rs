//! Host plumbing used by many layers: cgroups, shared-memory counters, the size guard, SysV
//! objects and their ledger, process groups at exit, the lifeline, stdout/stderr that never
//! panic, a prompt sampling thread, /proc outside the probe's sampling (`proc`), and shared
//! memory mappings (`shm`).

pub mod cgroup;
pub mod counters;
pub mod groups;
pub mod guard;
pub mod lifeline;
pub mod output;
pub mod priority;
pub mod proc;
pub mod shm;
pub mod sysv;
