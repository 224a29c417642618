//! What system calls tell of a live thread, without a file to format: its allowed CPUs
//! (sched_getaffinity), its policy, nice and real-time priority (sched_getattr), and a
//! SCHED_DEADLINE thread's reserved bandwidth. Cheaper than the /proc files that say the same
//! (an affinity call 0.3 µs here against a status read's 6.3), and only for the real /proc,
//! whose ids name live tasks.

use std::sync::Arc;

/// The last allowed-CPU mask read, and its list: a process's threads nearly always share one,
/// so 8,000 threads make one string.
pub(super) type CpusMemo = Option<(nix::sched::CpuSet, Arc<str>)>;

/// A thread's allowed CPUs as the kernel lists them ("0-3"), by sched_getaffinity: the list of
/// `memo` when the mask is the same as the last one's.
pub(super) fn allowed_cpus(tid: u32, memo: &mut CpusMemo) -> Option<Arc<str>> {
    let mask = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(tid as i32)).ok()?;
    if let Some((last, list)) = memo {
        if *last == mask {
            return Some(list.clone());
        }
    }
    let mut set = crate::sys::kernel::cpuset::CpuSet::new();
    for cpu in 0..nix::sched::CpuSet::count() {
        if mask.is_set(cpu).unwrap_or(false) {
            set.insert(cpu as u32);
        }
    }
    let list: Arc<str> = set.to_string().into();
    *memo = Some((mask, list.clone()));
    Some(list)
}

/// sched_attr(7): what sched_getattr(2) fills in.
#[repr(C)]
#[derive(Default)]
pub(super) struct SchedAttr {
    size: u32,
    pub(super) policy: u32,
    flags: u64,
    pub(super) nice: i32,
    pub(super) priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
    util_min: u32,
    util_max: u32,
}

/// A thread's scheduling attributes, from sched_getattr(2); None when it is gone.
pub(super) fn sched_attr(tid: u32) -> Option<SchedAttr> {
    let mut attr = SchedAttr::default();
    // Raw syscall: neither libc nor nix wraps sched_getattr.
    // SAFETY: sched_getattr writes at most `size` bytes (the struct's size, passed as such)
    // into `attr`, a live, properly aligned value of that size.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid as libc::pid_t,
            &mut attr as *mut SchedAttr,
            std::mem::size_of::<SchedAttr>() as u32,
            0u32,
        )
    };
    (rc == 0).then_some(attr)
}

/// A SCHED_DEADLINE thread's reserved bandwidth (runtime / period), from sched_getattr(2).
pub(super) fn deadline_bandwidth(tid: u32) -> Option<f64> {
    let attr = sched_attr(tid)?;
    if attr.runtime == 0 {
        return None;
    }
    let period = if attr.period != 0 {
        attr.period
    } else {
        attr.deadline
    };
    (period > 0).then(|| attr.runtime as f64 / period as f64)
}
