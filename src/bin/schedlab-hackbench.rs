//! One hackbench run in process mode as a small program of its own: make the group's pipes or
//! socketpairs, fork the senders and receivers, release them at once, time until the last is
//! reaped. `schedlab hackbench` execs it once per run (src/workload/hackbench.rs).
//!
//! Why a program of its own: the clock runs until the last of the 400 tasks is reaped, so each
//! task's exit, which tears down every mapping and page it inherited, is inside the timed run.
//! A task forked from schedlab inherits its 43 mappings and 428 kB of private pages (relocated
//! data, heap, stack, the signal thread's stack and arena); the original's, a small C
//! program's, 24 and 100 kB. A C hackbench given schedlab's footprint ran 1.054 of its own
//! time, while schedlab ran 0.991 of that bloated C (51 alternating runs, docs/performance.md):
//! the whole gap was the tasks' size. Built like schedlab-forker: no std, no Rust `main`
//! shim, only libc.
//!
//! Usage (from `schedlab hackbench` only): schedlab-hackbench GROUPS FDS LOOPS DATASIZE PIPE
//! EVERY RESULT_FD COUNTERS_FD then, per receiver (GROUPS * FDS of them, in order), SLOT_OFFSET
//! HISTOGRAM_OFFSET. PIPE is 1 for pipes, 0 for socketpairs; EVERY stamps one message in that
//! many per sender (0: none); RESULT_FD gets `T <ns>` (the run's time) or `E <why>`;
//! COUNTERS_FD is the counter region, SLOT_OFFSET a receiver's slot in it and
//! HISTOGRAM_OFFSET its message-latency histogram (0: none), in bytes. schedlab execs it with
//! SIGINT and SIGHUP ignored, as its tasks then are: schedlab handles them for the whole
//! group, and its death kills this program (PR_SET_PDEATHSIG), whose death kills the tasks.
// Under `cargo test` (clippy --all-targets) the harness brings std and its own main.
#![cfg_attr(not(test), no_std)]
#![cfg_attr(not(test), no_main)]

// The one description of the stamp's layout, core only: the same code stamps here as in
// every other workload.
#[cfg(not(test))]
#[allow(dead_code)]
#[path = "../sys/shared/stamp.rs"]
mod stamp;

// Clock, errno, arguments, the panic handler and the histogram's layout, shared with
// schedlab-forker.
#[cfg(not(test))]
#[path = "lean/common.rs"]
mod lean;

#[cfg(not(test))]
mod run {
    use crate::lean::{errno, histogram, now_ns, number};
    use crate::stamp;
    use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

    #[repr(C)]
    struct PollFd {
        fd: i32,
        events: i16,
        revents: i16,
    }

    #[link(name = "c")]
    extern "C" {
        #[link_name = "_Fork"]
        fn bare_fork() -> i32;
        fn pipe2(fds: *mut i32, flags: i32) -> i32;
        fn socketpair(domain: i32, kind: i32, protocol: i32, fds: *mut i32) -> i32;
        fn read(fd: i32, buf: *mut u8, len: usize) -> isize;
        fn write(fd: i32, buf: *const u8, len: usize) -> isize;
        fn close(fd: i32) -> i32;
        fn poll(fds: *mut PollFd, n: u64, timeout: i32) -> i32;
        fn prctl(option: i32, arg: u64, ...) -> i32;
        fn getpid() -> i32;
        fn getppid() -> i32;
        fn kill(pid: i32, sig: i32) -> i32;
        fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
        fn mmap(addr: *mut u8, len: usize, prot: i32, flags: i32, fd: i32, off: i64) -> *mut u8;
        fn _exit(code: i32) -> !;
    }

    const PROT_READ: i32 = 1;
    const PROT_WRITE: i32 = 2;
    const MAP_SHARED: i32 = 1;
    const MAP_PRIVATE: i32 = 2;
    const MAP_ANONYMOUS: i32 = 0x20;
    const MAP_FAILED: *mut u8 = !0usize as *mut u8;
    const O_CLOEXEC: i32 = 0o2000000;
    const AF_UNIX: i32 = 1;
    const SOCK_STREAM: i32 = 1;
    const SOCK_CLOEXEC: i32 = O_CLOEXEC;
    const POLLIN: i16 = 1;
    const PR_SET_PDEATHSIG: i32 = 1;
    const SIGKILL: i32 = 9;
    const WNOHANG: i32 = 1;
    const EINTR: i32 = 4;
    const LINE: usize = 64;
    const PAGE: usize = 4096;
    /// Set-up failed (bad arguments, no memory, no descriptors): the line on RESULT_FD says.
    const EXIT_SETUP: i32 = 3;
    /// A task failed: the line on RESULT_FD says which.
    const EXIT_TASK: i32 = 1;

    /// Moves `len` bytes by repeated calls of `io(done)` (the bytes moved by one call, or -1):
    /// after a short transfer too, again after EINTR; false at end of file or on an error.
    #[inline(always)]
    fn full(len: usize, mut io: impl FnMut(usize) -> isize) -> bool {
        let mut done = 0;
        while done < len {
            let n = io(done);
            if n > 0 {
                done += n as usize;
            } else if !(n < 0 && errno() == EINTR) {
                return false;
            }
        }
        true
    }

    /// Writes all of `buf`, after a short write too, as the original's sender does.
    fn write_full(fd: i32, buf: &[u8]) -> bool {
        // SAFETY: `buf[done..]` is live for its length; write only reads it.
        full(buf.len(), |done| unsafe {
            write(fd, buf.as_ptr().add(done), buf.len() - done)
        })
    }

    /// Reads exactly `buf.len()` bytes; false at end of file or on an error.
    fn read_full(fd: i32, buf: &mut [u8]) -> bool {
        let len = buf.len();
        let at = buf.as_mut_ptr();
        // SAFETY: `buf[done..]` is live and exclusively borrowed for its length.
        full(len, |done| unsafe { read(fd, at.add(done), len - done) })
    }

    /// A line on a descriptor: the parts, one after another (no allocation).
    fn say(fd: i32, parts: &[&[u8]]) {
        for p in parts {
            write_full(fd, p);
        }
    }

    /// `n` in decimal, in `buf`.
    fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
        let mut i = buf.len();
        loop {
            i -= 1;
            buf[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                return &buf[i..];
            }
        }
    }

    /// `len` bytes of fresh memory, or of `fd` shared; None when mmap fails.
    fn map(len: usize, fd: i32) -> Option<*mut u8> {
        let flags = if fd < 0 {
            MAP_PRIVATE | MAP_ANONYMOUS
        } else {
            MAP_SHARED
        };
        // SAFETY: a new mapping touches no existing memory; a bad `fd` fails.
        let p = unsafe {
            mmap(
                core::ptr::null_mut(),
                len,
                PROT_READ | PROT_WRITE,
                flags,
                fd,
                0,
            )
        };
        (p != MAP_FAILED).then_some(p)
    }

    /// (read end, write end) of a pipe or a socketpair, close-on-exec.
    fn fdpair(pipe: bool) -> Option<(i32, i32)> {
        let mut fds = [0i32; 2];
        let rc = if pipe {
            // SAFETY: `fds` is a live array of two ints for pipe2 to fill.
            unsafe { pipe2(fds.as_mut_ptr(), O_CLOEXEC) }
        } else {
            // SAFETY: `fds` is a live array of two ints for socketpair to fill.
            unsafe { socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds.as_mut_ptr()) }
        };
        (rc == 0).then_some((fds[0], fds[1]))
    }

    /// The ready and wake descriptors every task shares.
    #[derive(Clone, Copy)]
    struct Gate {
        ready_w: i32,
        wake_r: i32,
    }

    impl Gate {
        /// Tells the parent this task is ready, then blocks until the wake byte arrives.
        fn wait(self) -> bool {
            if !write_full(self.ready_w, &[0]) {
                return false;
            }
            let mut pfd = PollFd {
                fd: self.wake_r,
                events: POLLIN,
                revents: 0,
            };
            loop {
                // SAFETY: `pfd` is one live, writable pollfd and nfds is 1.
                let rc = unsafe { poll(&mut pfd, 1, -1) };
                if rc == 1 {
                    return true;
                }
                if !(rc < 0 && errno() == EINTR) {
                    return false;
                }
            }
        }
    }

    /// A receiver's counter and histogram in the shared region.
    struct Tally {
        slot: *const AtomicU64,
        /// Null: not timed.
        latency: *const AtomicU64,
    }

    /// Writes each page of `len` bytes at `p` back as it is: a forked child faults in each page
    /// it first writes, and these faults belong before the start, not inside the timed run.
    ///
    /// # Safety
    /// `p` must point to `len` bytes of memory this process may write, 8-byte aligned, that no
    /// other thread of it writes.
    unsafe fn prefault(p: *mut u8, len: usize) {
        let mut at = 0;
        while at < len {
            let w = &*(p.add(at & !7) as *const AtomicU64);
            w.store(w.load(Relaxed), Relaxed);
            at += PAGE;
        }
        if len > 0 {
            let w = &*(p.add((len - 1) & !7) as *const AtomicU64);
            w.store(w.load(Relaxed), Relaxed);
        }
    }

    /// A receiver: reads `packets` messages from `fd`, counting each and taking the stamped
    /// ones' ages into its histogram. The exit code.
    fn receiver(fd: i32, packets: usize, buf: &mut [u8], tally: &Tally, gate: Gate) -> i32 {
        // SAFETY: the slot's line and the histogram lie inside the counter mapping (checked
        // at start-up) and this task is their only writer; `buf` is this task's own.
        unsafe {
            prefault(tally.slot as *mut u8, 8);
            if !tally.latency.is_null() {
                prefault(tally.latency as *mut u8, histogram::HISTOGRAM_BYTES);
            }
            prefault(buf.as_mut_ptr(), buf.len());
        }
        if !gate.wait() {
            return fail(b"hackbench: receiver: ready failed\n");
        }
        // SAFETY: as above: inside the mapping, and this task its only writer.
        let slot = unsafe { &*tally.slot };
        for _ in 0..packets {
            if !read_full(fd, buf) {
                return fail(b"hackbench: receiver: read failed\n");
            }
            // One writer per slot: a plain load and store, as CounterSlot::add.
            slot.store(slot.load(Relaxed).wrapping_add(1), Relaxed);
            if !tally.latency.is_null() {
                match stamp::taken(buf, now_ns) {
                    stamp::Taken::Untimed => {}
                    // SAFETY: this receiver's own histogram, mapped in full (checked at
                    // start-up), this task its only writer.
                    stamp::Taken::Age(ns) => unsafe { histogram::record(tally.latency, ns) },
                    stamp::Taken::Rejected => {
                        // SAFETY: as above; H_REJECTED is a header word.
                        let w = unsafe { &*tally.latency.add(histogram::H_REJECTED) };
                        w.store(w.load(Relaxed).wrapping_add(1), Relaxed);
                    }
                }
            }
        }
        0
    }

    /// A sender: `loops` times, one message down every descriptor of its group; with `every`,
    /// one message in that many carries its send time. The exit code.
    fn sender(out: &[i32], loops: usize, data: &mut [u8], every: u32, gate: Gate) -> i32 {
        if every > 0 {
            // Its first write to the data (inherited, copied on write) is a page fault: before
            // the start, not inside the timed run.
            stamp::prepare(data);
        }
        if !gate.wait() {
            return fail(b"hackbench: sender: ready failed\n");
        }
        let mut left = 1u32;
        for _ in 0..loops {
            for &fd in out {
                let ok = if every > 0 {
                    left -= 1;
                    if left == 0 {
                        left = every;
                        stamp::stamp(data, now_ns());
                        let ok = write_full(fd, data);
                        stamp::clear(data);
                        ok
                    } else {
                        write_full(fd, data)
                    }
                } else {
                    write_full(fd, data)
                };
                if !ok {
                    return fail(b"hackbench: sender: write failed\n");
                }
            }
        }
        0
    }

    fn fail(line: &[u8]) -> i32 {
        say(2, &[line]);
        1
    }

    /// The run's shape, from the command line.
    struct Shape {
        groups: usize,
        fds: usize,
        loops: usize,
        datasize: usize,
        pipe: bool,
        every: u32,
    }

    /// Forks a task that runs `body` and exits with its code; its pid, or None.
    fn fork_task(parent: i32, result_fd: i32, body: impl FnOnce() -> i32) -> Option<i32> {
        // SAFETY: `_Fork` is fork(2) without atfork handlers; this process has one thread, and
        // the child only makes system calls and touches memory set up before the fork.
        let pid = unsafe { bare_fork() };
        if pid == 0 {
            // SAFETY: plain system calls on this process's own state; _exit ends the child.
            unsafe {
                prctl(PR_SET_PDEATHSIG, SIGKILL as u64);
                close(result_fd);
                if getppid() != parent {
                    _exit(1);
                }
                _exit(body())
            }
        }
        (pid > 0).then_some(pid)
    }

    /// Kills the tasks of `pids` still running and reaps every task left. A pid is checked to
    /// be an unreaped child of ours first (one reaped is no longer ours, and may name another
    /// process by now), so the timed loop need not mark the tasks it reaps.
    fn kill_rest(pids: &[i32]) {
        let mut status = 0;
        for &pid in pids {
            // SAFETY: `status` is a live int for waitpid to fill; kill takes no pointer, and
            // the pid is our own child still running (waitpid with WNOHANG returned 0).
            unsafe {
                if waitpid(pid, &mut status, WNOHANG) == 0 {
                    kill(pid, SIGKILL);
                }
            }
        }
        loop {
            // SAFETY: as above.
            let rc = unsafe { waitpid(-1, &mut status, 0) };
            if rc < 0 && errno() != EINTR {
                break;
            }
        }
    }

    /// The run: the tasks forked and released, the time until the last is reaped.
    fn run(shape: &Shape, tallies: &[Tally], result_fd: i32) -> Result<u64, i32> {
        let setup = |what: &[u8]| {
            say(result_fd, &[b"E ", what, b"\n"]);
            EXIT_SETUP
        };
        let tasks = shape.groups * shape.fds * 2;
        // The tasks' data, the pid list and a group's write ends: one private mapping, made
        // before any fork.
        let data_len = shape.datasize.next_multiple_of(LINE);
        let Some(mem) = map(2 * data_len + 4 * (tasks + shape.fds), -1) else {
            return Err(setup(b"no memory for the run's buffers"));
        };
        // SAFETY: the four parts lie apart inside the fresh mapping, `mem` is page-aligned
        // and data_len a multiple of 64, so the i32 arrays are aligned; the mapping is never
        // unmapped, and this process (and each child, in its own copy) its only user.
        let (data, buf, pids, out) = unsafe {
            let ints = mem.add(2 * data_len) as *mut i32;
            (
                core::slice::from_raw_parts_mut(mem, shape.datasize),
                core::slice::from_raw_parts_mut(mem.add(data_len), shape.datasize),
                core::slice::from_raw_parts_mut(ints, tasks),
                core::slice::from_raw_parts_mut(ints.add(tasks), shape.fds),
            )
        };
        let (Some((ready_r, ready_w)), Some((wake_r, wake_w))) =
            (fdpair(shape.pipe), fdpair(shape.pipe))
        else {
            return Err(setup(b"creating the ready and wake descriptors failed"));
        };
        let gate = Gate { ready_w, wake_r };
        // SAFETY: getpid takes nothing.
        let me = unsafe { getpid() };
        let packets = shape.fds * shape.loops;
        let mut forked = 0;
        for group in 0..shape.groups {
            for (i, w) in out.iter_mut().enumerate() {
                let Some((r, wr)) = fdpair(shape.pipe) else {
                    kill_rest(&pids[..forked]);
                    return Err(setup(b"creating a descriptor pair failed (ulimit -n?)"));
                };
                let tally = &tallies[group * shape.fds + i];
                let buf = &mut *buf;
                let pid = fork_task(me, result_fd, || {
                    // SAFETY: closing this task's copy of the write end it does not use.
                    unsafe { close(wr) };
                    receiver(r, packets, buf, tally, gate)
                });
                // SAFETY: the parent's copy of the read end, now the receiver's alone.
                unsafe { close(r) };
                let Some(pid) = pid else {
                    // SAFETY: the write end no sender will use now.
                    unsafe { close(wr) };
                    kill_rest(&pids[..forked]);
                    return Err(setup(b"fork failed (ulimit -u, or the cgroup's pids.max)"));
                };
                pids[forked] = pid;
                forked += 1;
                *w = wr;
            }
            let group_out = &*out;
            for _ in 0..shape.fds {
                let data = &mut *data;
                let pid = fork_task(me, result_fd, || {
                    sender(group_out, shape.loops, data, shape.every, gate)
                });
                let Some(pid) = pid else {
                    kill_rest(&pids[..forked]);
                    return Err(setup(b"fork failed (ulimit -u, or the cgroup's pids.max)"));
                };
                pids[forked] = pid;
                forked += 1;
            }
            for &w in group_out {
                // SAFETY: the parent's copies of the group's write ends, now the senders'.
                unsafe { close(w) };
            }
        }
        // Every task ready, then all released at once; the clock starts just before.
        let mut byte = [0u8];
        for _ in 0..tasks {
            if !read_full(ready_r, &mut byte) {
                kill_rest(pids);
                say(result_fd, &[b"E a task died before it was ready\n"]);
                return Err(EXIT_TASK);
            }
        }
        let start = now_ns();
        if !write_full(wake_w, &[0]) {
            kill_rest(pids);
            return Err(setup(b"releasing the tasks failed"));
        }
        let mut reaped = 0;
        while reaped < tasks {
            let mut status = 0;
            // SAFETY: `status` is a live int for waitpid to fill.
            let pid = unsafe { waitpid(-1, &mut status, 0) };
            if pid < 0 {
                if errno() == EINTR {
                    continue;
                }
                kill_rest(pids);
                return Err(setup(b"reaping the tasks failed"));
            }
            reaped += 1;
            let (signal, code) = (status & 0x7f, (status >> 8) & 0xff);
            if signal != 0 || code != 0 {
                // Its peers would wait forever for the messages it will never send or read:
                // stop the run now instead of hanging.
                kill_rest(pids);
                let mut n = [0u8; 20];
                let mut m = [0u8; 20];
                let mut c = [0u8; 20];
                let how: [&[u8]; 2] = if signal != 0 {
                    [b" was killed by signal ", decimal(signal as u64, &mut c)]
                } else {
                    [b" exited with code ", decimal(code as u64, &mut c)]
                };
                say(
                    result_fd,
                    &[
                        b"E task ",
                        decimal(pid as u64, &mut n),
                        b" of ",
                        decimal(tasks as u64, &mut m),
                        how[0],
                        how[1],
                        b"; stopping the run\n",
                    ],
                );
                return Err(EXIT_TASK);
            }
        }
        Ok(now_ns().saturating_sub(start))
    }

    /// # Safety
    /// Called by the C runtime, with `argv` holding `argc` pointers to NUL-terminated strings.
    #[no_mangle]
    pub unsafe extern "C" fn main(argc: i32, argv: *const *const u8) -> i32 {
        let argc = argc.max(0) as usize;
        // Sound: every index below is checked against argc first.
        let arg = |i: usize| if i < argc { number(*argv.add(i)) } else { None };
        let (Some(groups), Some(fds), Some(loops), Some(datasize), Some(pipe), Some(every)) =
            (arg(1), arg(2), arg(3), arg(4), arg(5), arg(6))
        else {
            return EXIT_SETUP;
        };
        let (Some(result_fd), Some(counters_fd)) = (arg(7), arg(8)) else {
            return EXIT_SETUP;
        };
        let result_fd = result_fd as i32;
        let receivers = groups.saturating_mul(fds);
        if argc != 9 + 2 * receivers || datasize == 0 || every > u32::MAX as usize {
            say(result_fd, &[b"E bad arguments\n"]);
            return EXIT_SETUP;
        }
        // The counter region's extent: every slot and histogram named must lie inside it.
        let mut len = LINE;
        for r in 0..receivers {
            let (Some(slot), Some(hist)) = (arg(9 + 2 * r), arg(10 + 2 * r)) else {
                say(result_fd, &[b"E bad arguments\n"]);
                return EXIT_SETUP;
            };
            if slot % LINE != 0 || hist % LINE != 0 {
                say(result_fd, &[b"E bad arguments\n"]);
                return EXIT_SETUP;
            }
            len = len.max(slot + LINE);
            if hist > 0 {
                len = len.max(hist + histogram::HISTOGRAM_BYTES);
            }
        }
        let Some(counters) = map(len, counters_fd as i32) else {
            say(result_fd, &[b"E mapping the counter region failed\n"]);
            return EXIT_SETUP;
        };
        // The mapping stays; the tasks need not inherit the descriptor.
        close(counters_fd as i32);
        // The receivers' tallies, in a mapping of their own.
        let tally_len = receivers * core::mem::size_of::<Tally>();
        let Some(tally_mem) = map(tally_len.max(1), -1) else {
            say(result_fd, &[b"E no memory for the run's counters\n"]);
            return EXIT_SETUP;
        };
        let tallies = tally_mem as *mut Tally;
        for r in 0..receivers {
            // Sound: both offsets were read and checked above; the slot's line and the
            // histogram lie inside the mapping of `len` bytes, aligned to 64 bytes.
            let (slot, hist) = (arg(9 + 2 * r).unwrap_or(0), arg(10 + 2 * r).unwrap_or(0));
            tallies.add(r).write(Tally {
                slot: counters.add(slot) as *const AtomicU64,
                latency: if hist > 0 {
                    counters.add(hist) as *const AtomicU64
                } else {
                    core::ptr::null()
                },
            });
        }
        let tallies = core::slice::from_raw_parts(tallies, receivers);
        let shape = Shape {
            groups,
            fds,
            loops,
            datasize,
            pipe: pipe != 0,
            every: every as u32,
        };
        match run(&shape, tallies, result_fd) {
            Ok(ns) => {
                let mut n = [0u8; 20];
                say(result_fd, &[b"T ", decimal(ns, &mut n), b"\n"]);
                0
            }
            Err(code) => code,
        }
    }
}
