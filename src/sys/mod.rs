//! Host plumbing used by many layers: SysV objects and their ledger, and the lifeline.

pub mod lifeline;
pub mod sysv;
