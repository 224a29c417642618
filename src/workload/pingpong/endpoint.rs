//! The two ends of a ping-pong pair for each mechanism, and the loops that bounce the token.
//!
//! Per round trip the pinger does one send and one receive and the ponger the mirror image:
//! exactly the system calls of the originals (pmsg: msgsnd/msgrcv on one queue with two
//! message types; psem: semop -1/+1 on two semaphores; perf bench sched pipe: a 4-byte
//! write/read on two pipes). Nothing else happens per round trip but a relaxed load of the
//! stop flag and a plain store to the pinger's counter; one round trip in 16 is also timed
//! (two vDSO clock readings and plain stores to the pinger's histogram). The calls are raw
//! libc (the pipe's through `syscall`, as hackbench's: sys::kernel::raw_io) on purpose: these loops were measured against the C originals, and a wrapper's error
//! conversion and descriptor borrowing are code the originals did not run.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering::Relaxed, Ordering::SeqCst};

use crate::sys::kernel::raw_io;
use crate::sys::shared::counters::{now_ns, CounterSlot, Histogram, Sampler};

/// Bytes carried by each message (as `perf bench sched pipe`'s int).
pub(crate) const TOKEN_LEN: usize = 4;

/// Which system call failed, kept as a number so a forked task can report it through
/// shared memory without allocating.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Call {
    Msgsnd = 1,
    Msgrcv,
    Semop,
    Write,
    Read,
    Affinity,
}

impl Call {
    pub fn name(self) -> &'static str {
        match self {
            Call::Msgsnd => "msgsnd",
            Call::Msgrcv => "msgrcv",
            Call::Semop => "semop",
            Call::Write => "write",
            Call::Read => "read",
            Call::Affinity => "sched_setaffinity",
        }
    }

    fn from_u32(v: u32) -> Option<Call> {
        [
            Call::Msgsnd,
            Call::Msgrcv,
            Call::Semop,
            Call::Write,
            Call::Read,
            Call::Affinity,
        ]
        .into_iter()
        .find(|c| *c as u32 == v)
    }
}

/// A failed call and its errno (0: end of file, the other end closed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskError {
    pub call: Call,
    pub errno: i32,
}

impl TaskError {
    fn last(call: Call) -> Self {
        Self {
            call,
            errno: std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        }
    }

    /// True when the error means the partner or its object went away.
    pub(crate) fn peer_gone(&self) -> bool {
        matches!(self.errno, 0 | libc::EIDRM | libc::EINVAL | libc::EPIPE)
    }
}

impl std::fmt::Display for TaskError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.errno == 0 {
            write!(f, "{}: end of file", self.call.name())
        } else {
            let err = std::io::Error::from_raw_os_error(self.errno);
            write!(f, "{}: {err}", self.call.name())
        }
    }
}

/// One side of a pair: send the token, wait for it to come back.
pub(crate) trait Endpoint {
    fn send(&mut self) -> Result<(), TaskError>;
    fn recv(&mut self) -> Result<(), TaskError>;
}

/// One queue per pair; the pinger sends type 1 and receives type 2, the ponger the reverse.
pub(crate) struct MsgEnd {
    id: i32,
    buf: crate::sys::kernel::sysv::MsgBuf,
    send_type: libc::c_long,
    recv_type: libc::c_long,
}

impl MsgEnd {
    pub fn new(id: i32, pinger: bool) -> Self {
        let (send_type, recv_type) = if pinger { (1, 2) } else { (2, 1) };
        Self {
            id,
            buf: crate::sys::kernel::sysv::MsgBuf::new(send_type),
            send_type,
            recv_type,
        }
    }
}

impl Endpoint for MsgEnd {
    #[inline]
    fn send(&mut self) -> Result<(), TaskError> {
        self.buf.mtype = self.send_type;
        let ptr = (&self.buf as *const crate::sys::kernel::sysv::MsgBuf).cast();
        // SAFETY: `ptr` points to `self.buf`, a live MsgBuf (a long type, then MsgBuf::TEXT bytes);
        // msgsnd reads the type and TOKEN_LEN (4 <= TEXT) bytes of it.
        while unsafe { libc::msgsnd(self.id, ptr, TOKEN_LEN, 0) } < 0 {
            let err = TaskError::last(Call::Msgsnd);
            if err.errno != libc::EINTR {
                return Err(err);
            }
        }
        Ok(())
    }

    #[inline]
    fn recv(&mut self) -> Result<(), TaskError> {
        let ptr = (&mut self.buf as *mut crate::sys::kernel::sysv::MsgBuf).cast();
        let max = crate::sys::kernel::sysv::MsgBuf::TEXT;
        // SAFETY: `ptr` points to `self.buf`, exclusively borrowed; msgrcv writes at most the type
        // and `max` = MsgBuf::TEXT bytes, exactly its text's size.
        while unsafe { libc::msgrcv(self.id, ptr, max, self.recv_type, 0) } < 0 {
            let err = TaskError::last(Call::Msgrcv);
            if err.errno != libc::EINTR {
                return Err(err);
            }
        }
        Ok(())
    }
}

/// A set of two semaphores per pair: the pinger posts 0 and waits on 1, the ponger the reverse.
pub(crate) struct SemEnd {
    id: i32,
    post: u16,
    wait: u16,
}

impl SemEnd {
    pub fn new(id: i32, pinger: bool) -> Self {
        let (post, wait) = if pinger { (0, 1) } else { (1, 0) };
        Self { id, post, wait }
    }

    #[inline]
    fn op(&self, num: u16, delta: i16) -> Result<(), TaskError> {
        let mut op = libc::sembuf {
            sem_num: num,
            sem_op: delta,
            sem_flg: 0,
        };
        // SAFETY: `op` is one live, writable sembuf and nsops is 1.
        while unsafe { libc::semop(self.id, &mut op, 1) } < 0 {
            let err = TaskError::last(Call::Semop);
            if err.errno != libc::EINTR {
                return Err(err);
            }
        }
        Ok(())
    }
}

impl Endpoint for SemEnd {
    #[inline]
    fn send(&mut self) -> Result<(), TaskError> {
        self.op(self.post, 1)
    }

    #[inline]
    fn recv(&mut self) -> Result<(), TaskError> {
        self.op(self.wait, -1)
    }
}

/// Two pipes per pair: the pinger writes one and reads the other.
pub(crate) struct PipeEnd {
    write_fd: RawFd,
    read_fd: RawFd,
    token: [u8; TOKEN_LEN],
}

impl PipeEnd {
    pub fn new(write_fd: RawFd, read_fd: RawFd) -> Self {
        Self {
            write_fd,
            read_fd,
            token: [0; TOKEN_LEN],
        }
    }
}

/// One write or read of the whole token, `io` returning what the call returned, retried when
/// a signal interrupted it; a read of nothing is end of file. Inlined with `io`, so each end
/// compiles to its own loop around the one system call.
#[inline(always)]
fn whole_token(call: Call, mut io: impl FnMut() -> isize) -> Result<(), TaskError> {
    loop {
        let n = io();
        if n == TOKEN_LEN as isize {
            return Ok(());
        }
        if n == 0 && call == Call::Read {
            return Err(TaskError { call, errno: 0 });
        }
        let err = TaskError::last(call);
        if n >= 0 || err.errno != libc::EINTR {
            return Err(err);
        }
    }
}

impl Endpoint for PipeEnd {
    #[inline]
    fn send(&mut self) -> Result<(), TaskError> {
        whole_token(Call::Write, || raw_io::write(self.write_fd, &self.token))
    }

    #[inline]
    fn recv(&mut self) -> Result<(), TaskError> {
        whole_token(Call::Read, || raw_io::read(self.read_fd, &mut self.token))
    }
}

/// Round trips timed: one in this many. A round trip takes 2.1 µs or more here (sem, same
/// CPU) and a clock reading 22 ns, so timing each would cost 1% of it; one in 16 costs two
/// readings per 16 round trips, 0.13% (docs/latency.md).
pub(crate) const TIME_EVERY: u32 = 16;

/// Bounces the token until `stop` is set, counting round trips and timing one in
/// [`TIME_EVERY`] into `latency` (when given); then tells the ponger to quit (through
/// `pair.quit`, set before the last token, which the ponger reads on waking).
#[inline(never)]
pub fn ping<E: Endpoint>(
    end: &mut E,
    stop: &AtomicU32,
    pair: &PairControl,
    count: &CounterSlot,
    latency: Option<&Histogram>,
) -> Result<(), TaskError> {
    match latency {
        None => bounce(end, stop, count)?,
        Some(h) => bounce_timed(end, stop, count, h)?,
    }
    pair.quit.store(1, SeqCst);
    end.send()
}

/// The loop without timing: the originals' loop, and what recording is measured against.
#[inline(always)]
fn bounce<E: Endpoint>(
    end: &mut E,
    stop: &AtomicU32,
    count: &CounterSlot,
) -> Result<(), TaskError> {
    while stop.load(Relaxed) == 0 {
        end.send()?;
        end.recv()?;
        count.add(1);
    }
    Ok(())
}

#[inline(always)]
fn bounce_timed<E: Endpoint>(
    end: &mut E,
    stop: &AtomicU32,
    count: &CounterSlot,
    latency: &Histogram,
) -> Result<(), TaskError> {
    let mut sampler = Sampler::new(TIME_EVERY);
    while stop.load(Relaxed) == 0 {
        if sampler.due() {
            let start = now_ns();
            end.send()?;
            end.recv()?;
            latency.record_since(start);
        } else {
            end.send()?;
            end.recv()?;
        }
        count.add(1);
    }
    Ok(())
}

/// Returns the token until the pinger says quit.
#[inline(never)]
pub fn pong<E: Endpoint>(end: &mut E, pair: &PairControl) -> Result<(), TaskError> {
    loop {
        end.recv()?;
        if pair.quit.load(SeqCst) != 0 {
            return Ok(());
        }
        end.send()?;
    }
}

/// Per-pair control words, one cache line, in memory shared with forked tasks.
#[repr(C, align(64))]
pub(crate) struct PairControl {
    /// Set by the pinger before its last token.
    pub quit: AtomicU32,
    /// Failed call and errno of the pinger (index 0) and the ponger (1); call 0 = none.
    call: [AtomicU32; 2],
    errno: [AtomicI32; 2],
}

impl PairControl {
    pub fn record(&self, role: usize, err: TaskError) {
        self.errno[role].store(err.errno, SeqCst);
        self.call[role].store(err.call as u32, SeqCst);
    }

    pub fn error(&self, role: usize) -> Option<TaskError> {
        let call = Call::from_u32(self.call[role].load(SeqCst))?;
        Some(TaskError {
            call,
            errno: self.errno[role].load(SeqCst),
        })
    }
}

/// The run's control page: a global stop flag and one [`PairControl`] per pair, mapped
/// MAP_SHARED so that forked tasks see the parent's stores and the parent theirs.
pub(crate) struct Control {
    base: *mut u8,
    len: usize,
    pairs: usize,
}

// SAFETY: Send: `Control` owns its mapping, unmaps it once in Drop, and the page is only reached
// through atomics, so any thread may own it.
unsafe impl Send for Control {}
// SAFETY: Sync: shared references reach the page only as atomics (Header, PairControl), which are
// Sync.
unsafe impl Sync for Control {}

#[repr(C, align(64))]
struct Header {
    stop: AtomicU32,
}

impl Control {
    pub fn new(pairs: usize) -> std::io::Result<Self> {
        let len = 64 * (pairs + 1);
        // SAFETY: a new anonymous shared mapping (null hint, fd -1) of `len` bytes: no existing
        // memory is touched; MAP_FAILED is checked below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        // Anonymous mappings start zeroed: no stop, no quit, no error.
        Ok(Self {
            base: base.cast(),
            len,
            pairs,
        })
    }

    pub(crate) fn stop_flag(&self) -> &AtomicU32 {
        // SAFETY: `base` is a live, page-aligned mapping of at least 64 bytes (len = 64 * (pairs +
        // 1)); Header is one AtomicU32 padded to 64 bytes, valid for any bits.
        unsafe { &(*(self.base as *const Header)).stop }
    }

    pub fn pair(&self, k: usize) -> &PairControl {
        assert!(k < self.pairs);
        // SAFETY: k < pairs (asserted), so 64 * (k + 2) <= len: the PairControl lies inside the
        // mapping, 64-byte aligned as the page is; its atomics are valid for any bits.
        unsafe { &*(self.base.add(64 * (k + 1)) as *const PairControl) }
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        // SAFETY: `base` and `len` are what mmap returned in `new`; stop_flag and pair borrow
        // `self`, so no reference outlives the unmap.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

const _: () = assert!(std::mem::size_of::<PairControl>() == 64);
const _: () = assert!(std::mem::size_of::<Header>() == 64);
