//! Host plumbing used by many layers: shared-memory counters, SysV objects and their ledger,
//! and the lifeline.

pub mod counters;
pub mod lifeline;
pub mod sysv;
