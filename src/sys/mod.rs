//! Host plumbing under every layer, in four parts:
//!
//! - [`kernel`]: the kernel's interfaces outside the probe's sampling: /proc (one process's
//!   stat, sysctls, this process's own files), cgroups, CPU lists as the kernel prints them,
//!   SysV semaphores and queues with their ledger, the size guard (the machine's limits), a
//!   prompt sampling thread, and room in the descriptor table made before the sampler needs
//!   it.
//! - [`shared`]: the shared-memory format a workload writes and its watcher reads: the mapping,
//!   the operation counters, the latency histograms' layout and the send-time stamp a message
//!   carries (the last two core only, shared with the std-less programs of `src/bin/`).
//! - [`exit`]: leaving nothing behind on any way out: the lifeline (signals, panics, a lost
//!   parent), the lists of what to kill, whole process groups at exit, and output that never
//!   panics on a closed pipe.
//! - [`heap`]: the C library's heap told to keep what the model frees at every step.

pub mod exit;
pub mod heap;
pub mod kernel;
pub mod shared;
