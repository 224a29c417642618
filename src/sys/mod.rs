//! Host plumbing used by many layers: cgroups, shared-memory counters and latency histograms,
//! the send-time stamp carried in a message (`stamp`),
//! the size guard, SysV objects and their ledger, process groups at exit, the lifeline,
//! stdout/stderr that never panic, a prompt sampling thread, /proc outside the probe's sampling
//! (`proc`), shared memory mappings (`shm`), the lists of what to kill on the way out
//! (`kill_list`), CPU lists as the kernel prints them (`cpuset`), and room in the descriptor
//! table made before the sampler needs it (`fdtable`).

pub mod cgroup;
pub mod counters;
pub mod cpuset;
pub mod fdtable;
pub mod groups;
pub mod guard;
pub mod histogram;
pub mod kill_list;
pub mod lifeline;
pub mod output;
pub mod priority;
pub mod proc;
pub mod shm;
pub mod stamp;
pub mod sysv;
