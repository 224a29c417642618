//! Live operation counters shared between a workload and whoever watches it.
//!
//! The watcher (dashboard, `run`, contest) creates a memfd-backed region and hands its
//! descriptor to the workload child through `SCHEDLAB_COUNTERS_FD`. A standalone run creates
//! a private region, so both paths run the same code. Each worker thread claims one
//! cache-line-sized slot once, then only stores to it: counting a message costs a load and a
//! store to a line no other thread writes, no lock, no atomic read-modify-write, no syscall.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use anyhow::{bail, Context, Result};

/// Environment variable carrying the inherited descriptor of the region.
pub const ENV_FD: &str = "SCHEDLAB_COUNTERS_FD";
const MAGIC: u64 = 0x5c4e_d1ab_c0de_0001;
const LINE: usize = 64;
/// Slots a region holds unless asked otherwise: enough for 200 chat rooms' client threads.
pub const DEFAULT_CAPACITY: usize = 16_384;

#[repr(C, align(64))]
struct Header {
    magic: AtomicU64,
    capacity: AtomicU64,
    /// Slots handed out so far (claims are rare: once per thread).
    claimed: AtomicU64,
    /// Operations a finite run will do in all (0 = open-ended), for progress bars.
    expected_total: AtomicU64,
    /// Set by the workload once its measured part is over.
    finished: AtomicU64,
}

#[repr(C, align(64))]
struct Slot {
    value: AtomicU64,
}

const _: () = assert!(std::mem::size_of::<Header>() == LINE);
const _: () = assert!(std::mem::size_of::<Slot>() == LINE);

struct Mapping {
    base: *mut u8,
    len: usize,
    fd: OwnedFd,
}

// SAFETY: Send: a `Mapping` owns its mapping and descriptor, unmaps once in Drop, and the memory is
// only ever reached through atomics, so any thread may own it.
unsafe impl Send for Mapping {}
// SAFETY: Sync: a shared `Mapping` gives out the memory only as `&AtomicU64` (Header, Slot), which
// is Sync.
unsafe impl Sync for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base` and `len` are exactly what mmap returned in `map`; every reference into
        // the mapping borrows a region or holds this Arc, so none outlives the unmap.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// A counter region, cheap to clone (the mapping is shared).
#[derive(Clone)]
pub struct CounterRegion {
    map: Arc<Mapping>,
    capacity: usize,
}

/// One thread's counter. Only its owner writes it.
pub struct CounterSlot {
    value: *const AtomicU64,
    _map: Arc<Mapping>,
}

// SAFETY: Send: the slot points into a mapping its `_map` keeps alive and is reached only through
// an atomic; one writer per slot is the counting protocol, not a memory-safety need.
unsafe impl Send for CounterSlot {}

impl CounterSlot {
    /// Counts `n` operations: a plain load and store, never a locked instruction.
    #[inline(always)]
    pub fn add(&self, n: u64) {
        // SAFETY: `value` points to an AtomicU64 inside the mapping (64-byte aligned slot), kept
        // mapped by `self._map`.
        let v = unsafe { &*self.value };
        v.store(v.load(Relaxed).wrapping_add(n), Relaxed);
    }

    pub fn get(&self) -> u64 {
        // SAFETY: `value` points to an AtomicU64 inside the mapping, kept mapped by `self._map`.
        unsafe { &*self.value }.load(Relaxed)
    }

    /// Where the slot lies in its region, in bytes: how a program exec'd with the region's
    /// descriptor finds it.
    pub fn offset(&self) -> usize {
        self.value as usize - self._map.base as usize
    }
}

impl CounterRegion {
    /// Creates a fresh region with room for `capacity` slots.
    pub fn create(capacity: usize) -> Result<Self> {
        // SAFETY: the name is a NUL-terminated C string literal; memfd_create reads nothing else.
        let raw = unsafe { libc::memfd_create(c"schedlab-counters".as_ptr(), libc::MFD_CLOEXEC) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error()).context("memfd_create for counters");
        }
        // SAFETY: `raw` is the new descriptor memfd_create just returned (checked non-negative);
        // nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let len = LINE * (capacity + 1);
        // SAFETY: `fd` is an open descriptor this function owns; ftruncate takes no pointer.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
            return Err(std::io::Error::last_os_error()).context("sizing the counter region");
        }
        let region = Self::map(fd, len)?;
        region.header().capacity.store(capacity as u64, Relaxed);
        region.header().magic.store(MAGIC, Relaxed);
        Ok(region)
    }

    /// Maps the region a parent handed down through `SCHEDLAB_COUNTERS_FD`, if any.
    pub fn from_env() -> Result<Option<Self>> {
        let Ok(text) = std::env::var(ENV_FD) else {
            return Ok(None);
        };
        let raw: RawFd = text
            .parse()
            .with_context(|| format!("{ENV_FD}={text:?} is not a descriptor"))?;
        // SAFETY: fcntl(F_DUPFD_CLOEXEC) takes no pointer; a `raw` that is not open fails with
        // EBADF, handled below.
        let dup = unsafe { libc::fcntl(raw, libc::F_DUPFD_CLOEXEC, 3) };
        if dup < 0 {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("{ENV_FD}={raw} is not an open descriptor"));
        }
        // SAFETY: `raw` was handed to this process for the region alone (SCHEDLAB_COUNTERS_FD); no
        // Rust object owns it, and it is closed once, after the dup above took its place.
        unsafe { libc::close(raw) };
        // SAFETY: `dup` is the new descriptor fcntl just returned (checked non-negative); nothing
        // else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(dup) };
        // SAFETY: libc::stat is plain old data: all-zero bytes are a valid value.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `st` is a live, writable libc::stat for fstat to fill; `fd` is open.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 || (st.st_size as usize) < LINE {
            bail!("{ENV_FD}={raw} is not a counter region");
        }
        let region = Self::map(fd, st.st_size as usize)?;
        if region.header().magic.load(Relaxed) != MAGIC {
            bail!("{ENV_FD}={raw} is not a counter region");
        }
        Ok(Some(region))
    }

    /// The region a workload counts into: its parent's when supervised, else a private one.
    pub fn for_workload() -> Result<Self> {
        match Self::from_env()? {
            Some(region) => Ok(region),
            None => Self::create(DEFAULT_CAPACITY),
        }
    }

    fn map(fd: OwnedFd, len: usize) -> Result<Self> {
        // SAFETY: a new shared mapping (null hint) of `len` bytes of a descriptor we own: no
        // existing memory is touched; MAP_FAILED is checked below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error()).context("mapping the counter region");
        }
        let capacity = len / LINE - 1;
        Ok(Self {
            map: Arc::new(Mapping {
                base: base.cast(),
                len,
                fd,
            }),
            capacity,
        })
    }

    fn header(&self) -> &Header {
        // SAFETY: `base` is a live, page-aligned mapping of at least LINE bytes (create sizes it
        // so, from_env checks st_size >= LINE); Header is 64 bytes of atomics, valid for any bits.
        unsafe { &*(self.map.base as *const Header) }
    }

    fn slot(&self, i: usize) -> &Slot {
        debug_assert!(i < self.capacity);
        // SAFETY: callers pass i < capacity = len / LINE - 1, so LINE * (i + 2) <= len: the slot
        // lies inside the mapping, 64-byte aligned as the page is; atomics are valid for any bits.
        unsafe { &*(self.map.base.add(LINE * (i + 1)) as *const Slot) }
    }

    /// Hands out the next free slot. Call once per thread, before the measured part.
    pub fn claim(&self) -> Result<CounterSlot> {
        let i = self.header().claimed.fetch_add(1, Relaxed) as usize;
        if i >= self.capacity {
            bail!(
                "counter region full: {} slots, more threads than that",
                self.capacity
            );
        }
        Ok(CounterSlot {
            value: &self.slot(i).value,
            _map: self.map.clone(),
        })
    }

    /// Sum of all claimed slots: the workload's operations so far.
    pub fn total(&self) -> u64 {
        let n = (self.header().claimed.load(Relaxed) as usize).min(self.capacity);
        (0..n).map(|i| self.slot(i).value.load(Relaxed)).sum()
    }

    /// Slots claimed so far (about one per worker thread).
    pub fn claimed(&self) -> usize {
        (self.header().claimed.load(Relaxed) as usize).min(self.capacity)
    }

    pub fn set_expected_total(&self, n: u64) {
        self.header().expected_total.store(n, Relaxed);
    }

    /// Operations a finite run will do in all, if it said.
    pub fn expected_total(&self) -> Option<u64> {
        Some(self.header().expected_total.load(Relaxed)).filter(|&n| n > 0)
    }

    pub fn mark_finished(&self) {
        self.header().finished.store(1, Relaxed);
    }

    pub fn finished(&self) -> bool {
        self.header().finished.load(Relaxed) != 0
    }

    /// The descriptor to hand to a child (the supervisor clears its close-on-exec flag there).
    pub fn raw_fd(&self) -> RawFd {
        self.map.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_private_and_summed() {
        let region = CounterRegion::create(8).unwrap();
        let a = region.claim().unwrap();
        let b = region.claim().unwrap();
        a.add(3);
        b.add(4);
        a.add(1);
        assert_eq!(region.total(), 8);
        assert_eq!(region.claimed(), 2);
        assert_eq!(a.get(), 4);
    }

    #[test]
    fn threads_count_without_losing_updates() {
        let region = CounterRegion::create(4).unwrap();
        std::thread::scope(|s| {
            for _ in 0..4 {
                let slot = region.claim().unwrap();
                s.spawn(move || {
                    for _ in 0..100_000 {
                        slot.add(1);
                    }
                });
            }
        });
        assert_eq!(region.total(), 400_000);
    }

    #[test]
    fn full_region_refuses_claims() {
        let region = CounterRegion::create(1).unwrap();
        let _a = region.claim().unwrap();
        assert!(region.claim().is_err());
    }

    #[test]
    fn progress_fields_round_trip() {
        let region = CounterRegion::create(1).unwrap();
        assert_eq!(region.expected_total(), None);
        region.set_expected_total(20_000);
        assert_eq!(region.expected_total(), Some(20_000));
        assert!(!region.finished());
        region.mark_finished();
        assert!(region.finished());
    }
}
