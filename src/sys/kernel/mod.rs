//! The kernel's interfaces outside the probe's sampling: /proc (`proc`), cgroups, CPU lists
//! (`cpuset`), SysV IPC and its ledger (`sysv`), the machine's limits (`guard`), a prompt
//! sampling thread (`priority`), room in the descriptor table (`fdtable`), and raw read and write
//! for the measured message loops (`raw_io`), the scheduler's tracepoints (`tracefs`) and its
//! debug table of group entities (`sched_debug`), and network addresses (`net`).

pub mod cgroup;
pub(crate) mod cgroup_attached;
pub mod cpuset;
pub mod fdtable;
pub mod guard;
pub mod net;
pub mod priority;
pub mod proc;
pub(crate) mod raw_io;
pub mod sched_debug;
pub mod sysv;
pub mod tracefs;
