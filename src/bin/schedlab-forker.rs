//! One fork-load forker as a small program of its own: fork, exec PROGRAM, wait, count,
//! repeat until the stop flag is raised. `schedlab fork-load` execs one per forker.
//!
//! Why a program of its own: fork copies the forker's mappings and page tables, and exec
//! tears the child's copy down again, so the forker's size is part of every cycle. A forker
//! forked from schedlab carries the 32 MB binary's 43 mappings; contest's was a small C
//! program (24). Measured with bench/loads.sh: 0.91-0.95 of the C loop's forks/s before.
//! Built like schedlab-nil: no std, no Rust `main` shim, only libc.
//!
//! Usage (from fork-load only): schedlab-forker PROGRAM CONTROL_FD FORKER FORKERS
//! COUNTERS_FD SLOT_OFFSET HISTOGRAM_OFFSET. CONTROL_FD is fork-load's control region (64-byte
//! lines: stop flag, then each forker's EAGAIN count, then each forker's finished flag),
//! COUNTERS_FD the counter region, SLOT_OFFSET this forker's slot in it and HISTOGRAM_OFFSET
//! its cycle-latency histogram (0: none), in bytes. Each cycle is timed from just before the
//! fork to just after the reap, with the histogram code of schedlab itself.
// Under `cargo test` (clippy --all-targets) the harness brings std and its own main.
#![cfg_attr(not(test), no_std)]
#![cfg_attr(not(test), no_main)]

// Clock, errno, arguments, the panic handler and the histogram's layout, shared with
// schedlab-hackbench.
#[cfg(not(test))]
#[path = "lean/common.rs"]
mod lean;

#[cfg(not(test))]
mod forker {
    use crate::lean::{errno, histogram, now_ns, number, Timespec};
    use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

    #[link(name = "c")]
    extern "C" {
        fn fork() -> i32;
        fn execv(path: *const u8, argv: *const *const u8) -> i32;
        fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
        fn nanosleep(req: *const Timespec, rem: *mut Timespec) -> i32;
        fn mmap(addr: *mut u8, len: usize, prot: i32, flags: i32, fd: i32, off: i64) -> *mut u8;
        fn _exit(code: i32) -> !;
        fn close(fd: i32) -> i32;
    }

    const PROT_READ: i32 = 1;
    const PROT_WRITE: i32 = 2;
    const MAP_SHARED: i32 = 1;
    const MAP_FAILED: *mut u8 = !0usize as *mut u8;
    const EINTR: i32 = 4;
    const EAGAIN: i32 = 11;
    const LINE: usize = 64;
    /// As fork-load's: how long to wait after fork fails with EAGAIN.
    const BACKOFF_NS: i64 = 10_000_000;
    /// fork-load's exit codes: usage or set-up, fork failed, the program failed.
    const EXIT_SETUP: i32 = 3;
    const EXIT_FORK_FAILED: i32 = 1;
    const EXIT_PROGRAM_FAILED: i32 = 2;

    /// Maps `len` bytes of `fd` shared, or None.
    ///
    /// # Safety
    /// None beyond mmap's own: a new mapping touches no existing memory, and a bad `fd` fails.
    unsafe fn map(fd: usize, len: usize) -> Option<*mut u8> {
        let p = mmap(
            core::ptr::null_mut(),
            len,
            PROT_READ | PROT_WRITE,
            MAP_SHARED,
            fd as i32,
            0,
        );
        (p != MAP_FAILED).then_some(p)
    }

    /// # Safety
    /// Called by the C runtime, with `argv` holding `argc` pointers to NUL-terminated strings.
    #[no_mangle]
    pub unsafe extern "C" fn main(argc: i32, argv: *const *const u8) -> i32 {
        if argc != 8 {
            return EXIT_SETUP;
        }
        // Sound: i < argc = 8 at every call below, so argv[i] is a valid entry.
        let arg = |i: usize| *argv.add(i);
        let (Some(ctrl_fd), Some(i), Some(n), Some(counters_fd), Some(offset), Some(hist)) = (
            number(arg(2)),
            number(arg(3)),
            number(arg(4)),
            number(arg(5)),
            number(arg(6)),
            number(arg(7)),
        ) else {
            return EXIT_SETUP;
        };
        if i >= n || offset % LINE != 0 || hist % LINE != 0 {
            return EXIT_SETUP;
        }
        let counters_len = if hist > 0 {
            (offset + LINE).max(hist + histogram::HISTOGRAM_BYTES)
        } else {
            offset + LINE
        };
        let (Some(ctrl), Some(counters)) = (
            map(ctrl_fd, LINE * (1 + 2 * n)),
            map(counters_fd, counters_len),
        ) else {
            return EXIT_SETUP;
        };
        // The mappings stay; the children need not inherit the descriptors.
        close(ctrl_fd as i32);
        close(counters_fd as i32);
        // Sound: k <= 1 + n + i < 1 + 2 * n lines, all inside the control mapping, 64-byte
        // aligned as the page is; the mappings are never unmapped and AtomicU64 is valid for
        // any bits.
        let line = |k: usize| &*(ctrl.add(LINE * k) as *const AtomicU64);
        let (stop, eagain, finished) = (line(0), line(1 + i), line(1 + n + i));
        // Sound: the slot's line lies inside the counters mapping of at least offset + LINE
        // bytes, and offset is a multiple of LINE (checked above), so it is aligned.
        let slot = &*(counters.add(offset) as *const AtomicU64);
        // Sound: a histogram at hist > 0 lies inside the counters mapping of at least
        // hist + HISTOGRAM_BYTES bytes, aligned as hist is a multiple of LINE (checked above).
        let latency = (hist > 0).then(|| counters.add(hist) as *const AtomicU64);
        let program = arg(1);
        let child_argv = [program, core::ptr::null()];
        let backoff = Timespec {
            tv_sec: 0,
            tv_nsec: BACKOFF_NS,
        };

        let mut code = 0;
        while stop.load(Relaxed) == 0 {
            let start = if latency.is_some() { now_ns() } else { 0 };
            let pid = fork();
            if pid == 0 {
                execv(program, child_argv.as_ptr());
                _exit(127);
            }
            if pid < 0 {
                if errno() == EAGAIN {
                    eagain.fetch_add(1, Relaxed);
                    nanosleep(&backoff, core::ptr::null_mut());
                    continue;
                }
                code = EXIT_FORK_FAILED;
                break;
            }
            let mut status = 0;
            while waitpid(pid, &mut status, 0) < 0 {
                if errno() != EINTR {
                    break;
                }
            }
            if let Some(words) = latency {
                // Sound: `words` is this forker's own histogram, mapped above in full, and this
                // process its only writer.
                histogram::record(words, now_ns().saturating_sub(start));
            }
            // One writer per slot: a plain load and store, as CounterSlot::add.
            slot.store(slot.load(Relaxed).wrapping_add(1), Relaxed);
            let exited_ok = status & 0x7f == 0 && (status >> 8) & 0xff == 0;
            if !exited_ok {
                code = EXIT_PROGRAM_FAILED;
                break;
            }
        }
        finished.store(1, Relaxed);
        code
    }
}
