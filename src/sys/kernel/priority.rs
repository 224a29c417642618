//! A prompt sampler: the thread that samples runs under SCHED_FIFO at the lowest real-time
//! priority when the machine lets it (root, CAP_SYS_NICE, or an RLIMIT_RTPRIO above 0), so the
//! load it watches cannot keep it off the CPU and late. SCHED_RESET_ON_FORK keeps whatever it
//! starts (workloads, threads) out of real time. The fairness model sees it as the real-time
//! task it is, and the dashboard says so.

/// How the sampling thread is scheduled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum SamplerPriority {
    /// SCHED_FIFO priority 1 when permitted, else as any other thread.
    #[default]
    Realtime,
    /// As any other thread (SCHED_OTHER, the process's nice).
    Normal,
}

/// Puts the calling thread under SCHED_FIFO priority 1 (children reset to normal). True when
/// the kernel agreed.
pub(crate) fn promote_this_thread() -> bool {
    let param = libc::sched_param { sched_priority: 1 };
    // Raw libc: nix has no sched_setscheduler (nor sched_getscheduler, below).
    // SAFETY: sched_setscheduler with pid 0 changes only the calling thread; `param` is a
    // valid, initialised sched_param that outlives the call.
    let rc = unsafe {
        libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param)
    };
    rc == 0
}

#[cfg(test)]
/// Whether the calling thread runs under a real-time policy now.
pub(crate) fn this_thread_is_realtime() -> bool {
    // SAFETY: sched_getscheduler(0) only reads the calling thread's policy.
    let policy = unsafe { libc::sched_getscheduler(0) };
    policy >= 0 && (policy & !libc::SCHED_RESET_ON_FORK) == libc::SCHED_FIFO
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promotion_is_refused_or_real_and_children_are_not_real_time() {
        // On its own thread: a test must not leave the harness's thread in real time.
        std::thread::spawn(|| {
            if promote_this_thread() {
                assert!(this_thread_is_realtime());
                // A thread it starts is back to normal.
                let child = std::thread::spawn(this_thread_is_realtime).join().unwrap();
                assert!(
                    !child,
                    "SCHED_RESET_ON_FORK keeps children out of real time"
                );
            } else {
                assert!(!this_thread_is_realtime());
            }
        })
        .join()
        .unwrap();
    }
}
