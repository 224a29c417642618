//! The kernel's interfaces outside the probe's sampling: /proc (`proc`), cgroups, CPU lists
//! (`cpuset`), SysV IPC and its ledger (`sysv`), the machine's limits (`guard`), a prompt
//! sampling thread (`priority`), and room in the descriptor table (`fdtable`).

pub mod cgroup;
pub(crate) mod cgroup_attached;
pub mod cpuset;
pub mod fdtable;
pub mod guard;
pub mod priority;
pub mod proc;
pub mod sysv;
