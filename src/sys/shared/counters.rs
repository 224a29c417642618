//! Live operation counters and latency histograms shared between a workload and whoever
//! watches it.
//!
//! The watcher (dashboard, `run`, contest) creates a memfd-backed region and hands its
//! descriptor to the workload child through `SCHEDLAB_COUNTERS_FD`. A standalone run creates
//! a private region, so both paths run the same code. Each worker thread claims one
//! cache-line-sized slot once, then only stores to it: counting a message costs a load and a
//! store to a line no other thread writes, no lock, no atomic read-modify-write, no syscall.
//!
//! A thread that times its operations also claims a histogram (its own 113 cache lines after
//! the slots, laid out as [`histogram`](super::histogram) says) and records into it the same
//! way; the only system call added is the vDSO clock. The watcher reads every histogram, merged
//! per kind of latency, into raw cumulative bucket counts ([`CounterRegion::read_latency`]).
//! `SCHEDLAB_LATENCY=off` in a workload's environment turns recording off, so that a
//! benchmark can compare the two.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use anyhow::{bail, Context, Result};

use super::histogram::{self, Unit, BUCKETS, HISTOGRAM_BYTES};
use super::shm::{self, Shareable, SharedMapping};

/// Environment variable carrying the inherited descriptor of the region.
pub const ENV_FD: &str = "SCHEDLAB_COUNTERS_FD";
/// Environment variable that turns latency recording off when it is `off` or `0`.
pub const ENV_LATENCY: &str = "SCHEDLAB_LATENCY";
const MAGIC: u64 = 0x5c4e_d1ab_c0de_0002;
const LINE: usize = 64;
/// Slots a region holds unless asked otherwise: enough for 200 chat rooms' client threads.
pub(crate) const DEFAULT_CAPACITY: usize = 16_384;
/// Histograms a region holds unless asked otherwise (7 KiB each, 7.1 MiB in all, of memory
/// that stays unallocated until a thread claims it): 50 chat rooms' receive threads, 51
/// hackbench groups' receivers. Threads beyond it do not record; the others still show the
/// distribution, as their work is the same.
pub(crate) const DEFAULT_HISTOGRAMS: usize = 1024;

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
    /// Histograms the region holds, and how many are handed out.
    histograms: AtomicU64,
    histograms_claimed: AtomicU64,
    /// Closed loops its tasks form (0 = none said): ping-pong pairs, fork loops. One task
    /// of each is runnable whenever none of it runs, so each wants a whole CPU (the
    /// fairness model's demand, model/chains.rs).
    closed_loops: AtomicU64,
}

#[repr(C, align(64))]
struct Slot {
    value: AtomicU64,
}

const _: () = assert!(std::mem::size_of::<Header>() == LINE);
const _: () = assert!(std::mem::size_of::<Slot>() == LINE);
const _: () = assert!(HISTOGRAM_BYTES.is_multiple_of(LINE));

// SAFETY: Header is repr(C) and made of atomics only: valid for any bits, accessed atomically.
unsafe impl Shareable for Header {}
// SAFETY: Slot is repr(C) and made of one atomic: valid for any bits, accessed atomically.
unsafe impl Shareable for Slot {}

/// The region's memfd and its shared mapping, unmapped when the last slot, histogram and
/// region holding it is dropped. The descriptor stays open as long, for children to inherit.
struct Mapping {
    shared: SharedMapping,
    fd: OwnedFd,
}

impl Mapping {
    /// Where the region starts in this process.
    fn base(&self) -> usize {
        self.shared.addr()
    }
}

/// A counter region, cheap to clone (the mapping is shared).
#[derive(Clone)]
pub struct CounterRegion {
    map: Arc<Mapping>,
    capacity: usize,
    histograms: usize,
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

    /// Maps the slot's page into this process now (a forked child faults in each page of the
    /// shared region it first writes): done before a timed run, the fault is not inside it.
    pub fn prefault(&self) {
        self.add(0);
    }

    /// Where the slot lies in its region, in bytes: how a program exec'd with the region's
    /// descriptor finds it.
    pub fn offset(&self) -> usize {
        self.value as usize - self._map.base()
    }
}

/// One thread's latency histogram. Only its owner writes it.
pub struct Histogram {
    words: *const AtomicU64,
    _map: Arc<Mapping>,
}

// SAFETY: Send: the histogram points into a mapping its `_map` keeps alive and is reached only
// through atomics; one writer per histogram is the recording protocol, not a memory-safety need.
unsafe impl Send for Histogram {}

impl Histogram {
    /// Records one latency in ns: plain loads and stores to this thread's own lines.
    #[inline(always)]
    pub fn record(&self, ns: u64) {
        // SAFETY: `words` is this histogram's first word in the mapping `_map` keeps alive,
        // and the owner (whoever holds `&self`; the type is not Sync) is its only writer.
        unsafe { histogram::record(self.words, ns) }
    }

    /// Records the time from `start` (a [`now_ns`] reading) to now.
    #[inline(always)]
    pub fn record_since(&self, start: u64) {
        self.record(now_ns().saturating_sub(start));
    }

    /// Counts an operation whose latency could not be read: its stamp did not survive the
    /// trip (a peer that does not relay the bytes it was sent).
    #[inline]
    pub(crate) fn reject(&self) {
        // SAFETY: as in `record`.
        let w = unsafe { &*self.words.add(histogram::H_REJECTED) };
        w.store(w.load(Relaxed).wrapping_add(1), Relaxed);
    }

    /// Maps the histogram's pages into this process now, by writing each back as it is (a
    /// forked child faults in each page of the shared region it first writes): done before a
    /// timed run, the faults are not inside it.
    pub fn prefault(&self) {
        const WORDS_PER_PAGE: usize = 4096 / 8;
        let words = histogram::HISTOGRAM_BYTES / 8;
        for w in (0..words).step_by(WORDS_PER_PAGE).chain([words - 1]) {
            // SAFETY: as in `record`; `w` lies within the histogram, and the owner writing a
            // word back unchanged is what `record` does to it with a zero.
            let word = unsafe { &*self.words.add(w) };
            word.store(word.load(Relaxed), Relaxed);
        }
    }

    /// Values recorded so far.
    pub fn samples(&self) -> u64 {
        // SAFETY: as in `record`.
        unsafe { &*self.words.add(histogram::H_SAMPLES) }.load(Relaxed)
    }

    /// Its counts so far, as [`CounterRegion::read_latency`] reads them.
    pub fn totals(&self) -> LatencyTotals {
        let mut totals = LatencyTotals::default();
        // SAFETY: as in `record`; reading only loads.
        unsafe { read_histogram(self.words, &mut totals) };
        totals
    }

    /// Where the histogram lies in its region, in bytes (for a program exec'd with the
    /// region's descriptor).
    pub fn offset(&self) -> usize {
        self.words as usize - self._map.base()
    }
}

/// CLOCK_MONOTONIC in ns, through the vDSO (no system call): about 22 ns here
/// (docs/latency.md). The same clock in every process of the machine. rustix's, not nix's
/// (docs/architecture.md): it returns the time with no errno to check, on the path of every
/// timed operation.
#[inline(always)]
pub fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Whether this process records latency: on unless `SCHEDLAB_LATENCY` is `off` or `0`.
pub(crate) fn latency_enabled() -> bool {
    !matches!(std::env::var(ENV_LATENCY).as_deref(), Ok("off" | "0"))
}

/// Picks one operation in `every` for timing: a countdown, a decrement and a predictable
/// branch per operation.
#[derive(Clone, Debug)]
pub struct Sampler {
    every: u32,
    left: u32,
}

impl Sampler {
    /// The first operation is timed, then every `every`-th.
    pub fn new(every: u32) -> Self {
        Self {
            every: every.max(1),
            left: 1,
        }
    }

    #[inline(always)]
    pub fn due(&mut self) -> bool {
        self.left -= 1;
        if self.left == 0 {
            self.left = self.every;
            true
        } else {
            false
        }
    }
}

/// A region's histograms of one unit, merged: raw cumulative counts, as the observer reads
/// them. `buckets` lists the non-empty buckets (index, count), overflow as index `BUCKETS`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatencyTotals {
    pub unit: Option<Unit>,
    pub samples: u64,
    pub sum_ns: u64,
    pub rejected: u64,
    pub buckets: Vec<(u16, u64)>,
}

/// Reads the histogram at `words` into `out` (its buckets replaced, sorted by index, overflow
/// last as index `BUCKETS`); false when it carries no unit yet (claimed a moment ago). Reads
/// the header line and only the lines of buckets it ever wrote.
///
/// # Safety
/// `words` points to a histogram (`HISTOGRAM_BYTES` of mapped memory, 8-byte aligned).
unsafe fn read_histogram(words: *const AtomicU64, out: &mut LatencyTotals) -> bool {
    use histogram::{BUCKETS_PER_LINE, HEADER_WORDS, H_OVERFLOW, H_REJECTED, H_SAMPLES, H_SUM};
    // SAFETY: the caller vouches for `words`; every index used is within the histogram, and
    // reading only loads.
    let word = |w: usize| unsafe { &*words.add(w) }.load(Relaxed);
    let Some(unit) = Unit::from_code(word(histogram::H_UNIT)) else {
        return false;
    };
    out.unit = Some(unit);
    out.samples = word(H_SAMPLES);
    out.sum_ns = word(H_SUM);
    out.rejected = word(H_REJECTED);
    out.buckets.clear();
    for half in 0..2 {
        let mut touched = word(histogram::H_TOUCHED + half);
        while touched != 0 {
            let line = half * 64 + touched.trailing_zeros() as usize;
            touched &= touched - 1;
            let first = line * BUCKETS_PER_LINE;
            for b in first..first + BUCKETS_PER_LINE {
                let count = word(HEADER_WORDS + b);
                if count > 0 {
                    out.buckets.push((b as u16, count));
                }
            }
        }
    }
    let overflow = word(H_OVERFLOW);
    if overflow > 0 {
        out.buckets.push((BUCKETS as u16, overflow));
    }
    true
}

/// The non-empty buckets of `dense`, as (index, count).
fn sparse(dense: &[u64]) -> Vec<(u16, u64)> {
    dense
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(i, &c)| (i as u16, c))
        .collect()
}

impl CounterRegion {
    /// Creates a fresh region with room for `capacity` slots and the default histograms.
    pub fn create(capacity: usize) -> Result<Self> {
        Self::create_with(capacity, DEFAULT_HISTOGRAMS)
    }

    /// Creates a fresh region with room for `capacity` slots and `histograms` histograms.
    pub fn create_with(capacity: usize, histograms: usize) -> Result<Self> {
        let len = Self::len_for(capacity, histograms);
        // Sparse until written: a histogram costs memory only once a thread claims it.
        let fd = shm::memfd(c"schedlab-counters", len).context("creating the counter region")?;
        let region = Self::map(fd, len, capacity, histograms)?;
        // Nobody else has the region yet: the magic, stored last, says it is ready.
        let header = region.header();
        header.capacity.store(capacity as u64, Relaxed);
        header.histograms.store(histograms as u64, Relaxed);
        header.magic.store(MAGIC, Relaxed);
        Ok(region)
    }

    fn len_for(capacity: usize, histograms: usize) -> usize {
        LINE * (capacity + 1) + HISTOGRAM_BYTES * histograms
    }

    /// Maps the region a parent handed down through `SCHEDLAB_COUNTERS_FD`, if any.
    pub(crate) fn from_env() -> Result<Option<Self>> {
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
        Self::from_fd(fd)
            .map(Some)
            .with_context(|| format!("{ENV_FD}={raw} is not a counter region"))
    }

    /// Maps the region behind `fd`, checking that it is one.
    pub(crate) fn from_fd(fd: OwnedFd) -> Result<Self> {
        let len = std::fs::File::from(fd.try_clone()?).metadata()?.len() as usize;
        if len < LINE {
            bail!("too short for a counter region");
        }
        // Mapped with no slots or histograms until the header is checked; an error unmaps it.
        let region = Self::map(fd, len, 0, 0)?;
        let header = region.header();
        let magic = header.magic.load(Relaxed);
        let capacity = header.capacity.load(Relaxed) as usize;
        let histograms = header.histograms.load(Relaxed) as usize;
        let fits = capacity
            .checked_add(1)
            .and_then(|lines| lines.checked_mul(LINE))
            .zip(histograms.checked_mul(HISTOGRAM_BYTES))
            .and_then(|(a, b)| a.checked_add(b))
            .is_some_and(|need| need <= len);
        if magic != MAGIC || !fits {
            bail!("no counter region's header");
        }
        Ok(Self {
            capacity,
            histograms,
            ..region
        })
    }

    /// The region a workload counts into: its parent's when supervised, else a private one.
    pub(crate) fn for_workload() -> Result<Self> {
        // rustix finds the vDSO's clock at its first use. Found here, before a generator forks,
        // every child inherits it, instead of each looking it up (the auxiliary vector, the
        // vDSO's symbols: 9 page faults a child) at its first timed operation, inside the run.
        let _ = now_ns();
        match Self::from_env()? {
            Some(region) => Ok(region),
            None => Self::create(DEFAULT_CAPACITY),
        }
    }

    /// The first `len` bytes of `fd`, shared (MAP_SHARED, page-aligned) with every process
    /// that maps the memfd: the children it is handed to.
    fn map(fd: OwnedFd, len: usize, capacity: usize, histograms: usize) -> Result<Self> {
        let shared = SharedMapping::of_fd(&fd, len).context("mapping the counter region")?;
        Ok(Self {
            map: Arc::new(Mapping { shared, fd }),
            capacity,
            histograms,
        })
    }

    fn header(&self) -> &Header {
        // At least LINE bytes: create sizes it so, from_fd checks the file's length.
        self.map.shared.get(0)
    }

    fn slot(&self, i: usize) -> &Slot {
        debug_assert!(i < self.capacity);
        // Line i + 1, after the header: inside the mapping, which holds LINE * (capacity + 1)
        // bytes at least (create sizes it so, from_fd checks it).
        self.map.shared.get(LINE * (i + 1))
    }

    /// Histogram i's first word. Its owner records through the pointer, which the Arc the
    /// owner holds keeps mapped.
    fn histogram_words(&self, i: usize) -> *const AtomicU64 {
        assert!(i < self.histograms);
        let offset = LINE * (self.capacity + 1) + HISTOGRAM_BYTES * i;
        let words = HISTOGRAM_BYTES / std::mem::size_of::<AtomicU64>();
        self.map.shared.slice::<AtomicU64>(offset, words).as_ptr()
    }

    /// Hands out the next free slot. Call once per thread, before the measured part.
    pub(crate) fn claim(&self) -> Result<CounterSlot> {
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

    /// Hands out the next free histogram for latencies of `unit`, once per thread, before the
    /// measured part; None when recording is off (`SCHEDLAB_LATENCY=off`) or every histogram
    /// is taken (the thread then does not time its operations).
    pub fn claim_histogram(&self, unit: Unit) -> Option<Histogram> {
        if !latency_enabled() {
            return None;
        }
        let header = self.header();
        // A claim past the end is given back, so a full region stays full, not wrapped.
        let i = header.histograms_claimed.fetch_add(1, Relaxed) as usize;
        if i >= self.histograms {
            header.histograms_claimed.fetch_sub(1, Relaxed);
            return None;
        }
        let words = self.histogram_words(i);
        // SAFETY: histogram i is ours alone from here on; its first word is its unit.
        unsafe { &*words.add(histogram::H_UNIT) }.store(unit as u64, Relaxed);
        Some(Histogram {
            words,
            _map: self.map.clone(),
        })
    }

    /// Histograms handed out so far (each thread that times its operations has one).
    pub(crate) fn histograms_claimed(&self) -> usize {
        (self.header().histograms_claimed.load(Relaxed) as usize).min(self.histograms)
    }

    /// Reads histogram `i` alone into `out` (its buckets replaced, sorted by index, overflow
    /// last as index `BUCKETS`): for an observer that reads a big workload's histograms in
    /// rotation and merges them itself. False when `i` is not claimed or carries no unit yet.
    pub(crate) fn read_histogram_into(&self, i: usize, out: &mut LatencyTotals) -> bool {
        if i >= self.histograms_claimed() {
            return false;
        }
        // SAFETY: a claimed histogram lies inside the mapping.
        unsafe { read_histogram(self.histogram_words(i), out) }
    }

    /// Every claimed histogram, merged per unit: raw cumulative counts, in unit order. Reads
    /// each histogram's header line and only the lines of buckets it ever wrote.
    pub fn read_latency(&self) -> Vec<LatencyTotals> {
        LatencyMerge::default().read(self, 1, 0)
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

    pub(crate) fn set_expected_total(&self, n: u64) {
        self.header().expected_total.store(n, Relaxed);
    }

    /// Operations a finite run will do in all, if it said.
    pub fn expected_total(&self) -> Option<u64> {
        Some(self.header().expected_total.load(Relaxed)).filter(|&n| n > 0)
    }

    /// Says its tasks form `n` closed loops (see the header's field).
    pub(crate) fn set_closed_loops(&self, n: u64) {
        self.header().closed_loops.store(n, Relaxed);
    }

    /// The closed loops its tasks form, if it said.
    pub fn closed_loops(&self) -> Option<u32> {
        Some(self.header().closed_loops.load(Relaxed) as u32).filter(|&n| n > 0)
    }

    pub(crate) fn mark_finished(&self) {
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

/// One unit's histograms merged: cumulative counts, every bucket (overflow last).
struct UnitSum {
    unit: Unit,
    samples: u64,
    sum_ns: u64,
    rejected: u64,
    dense: Vec<u64>,
}

/// A region's histograms merged per unit, kept between reads, so that an observer can read a
/// big workload's histograms in rotation: the merge holds each histogram's counts as last
/// read, and a read adds only what that histogram gained since its last one. Nothing is
/// counted twice or lost; a value recorded is counted at its histogram's next turn.
#[derive(Default)]
pub(crate) struct LatencyMerge {
    /// Each histogram as last read (by its index in the region).
    last: Vec<LatencyTotals>,
    units: Vec<UnitSum>,
    /// The read in progress, swapped into `last`.
    scratch: LatencyTotals,
}

impl LatencyMerge {
    /// Reads one in `stride` of the region's histograms (turning with `phase`; a histogram
    /// never read yet is read at once) and returns every unit's merged counts, in unit order.
    pub fn read(&mut self, region: &CounterRegion, stride: u32, phase: u32) -> Vec<LatencyTotals> {
        let claimed = region.histograms_claimed();
        if self.last.len() < claimed {
            self.last.resize_with(claimed, LatencyTotals::default);
        }
        let stride = stride.max(1) as usize;
        for i in 0..claimed {
            let turn = (i + phase as usize).is_multiple_of(stride);
            if !(turn || self.last[i].unit.is_none()) {
                continue;
            }
            if region.read_histogram_into(i, &mut self.scratch) {
                self.add_growth(i);
            }
        }
        self.units.sort_by_key(|u| u.unit);
        self.units
            .iter()
            .filter(|u| u.samples + u.rejected > 0)
            .map(|u| LatencyTotals {
                unit: Some(u.unit),
                samples: u.samples,
                sum_ns: u.sum_ns,
                rejected: u.rejected,
                buckets: sparse(&u.dense),
            })
            .collect()
    }

    /// Adds what histogram `i` gained between its last read and `scratch`, then keeps
    /// `scratch` as its last read.
    fn add_growth(&mut self, i: usize) {
        let now = &self.scratch;
        let Some(unit) = now.unit else {
            return;
        };
        let before = &self.last[i];
        let k = match self.units.iter().position(|u| u.unit == unit) {
            Some(k) => k,
            None => {
                self.units.push(UnitSum {
                    unit,
                    samples: 0,
                    sum_ns: 0,
                    rejected: 0,
                    dense: vec![0; BUCKETS + 1],
                });
                self.units.len() - 1
            }
        };
        let sum = &mut self.units[k];
        // A histogram's unit is set once, before it records: an earlier read without one
        // (claimed a moment before) held nothing.
        let same = before.unit == Some(unit);
        let (s0, sum0, r0) = if same {
            (before.samples, before.sum_ns, before.rejected)
        } else {
            (0, 0, 0)
        };
        sum.samples += now.samples.saturating_sub(s0);
        sum.sum_ns = sum.sum_ns.wrapping_add(now.sum_ns.wrapping_sub(sum0));
        sum.rejected += now.rejected.saturating_sub(r0);
        // Both lists are sorted by bucket, and a bucket once written stays in the list.
        let mut old = if same { &before.buckets[..] } else { &[][..] }
            .iter()
            .peekable();
        for &(b, c) in &now.buckets {
            while old.next_if(|&&(ob, _)| ob < b).is_some() {}
            let c0 = old.next_if(|&&(ob, _)| ob == b).map_or(0, |&(_, c0)| c0);
            sum.dense[b as usize] += c.saturating_sub(c0);
        }
        std::mem::swap(&mut self.last[i], &mut self.scratch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_in_rotation_the_merge_is_the_regions_once_every_turn_came() {
        let region = CounterRegion::create_with(4, 8).unwrap();
        let hs: Vec<_> = (0..5)
            .map(|k| {
                let unit = if k == 4 {
                    Unit::ForkCycle
                } else {
                    Unit::RoundTrip
                };
                region.claim_histogram(unit).unwrap()
            })
            .collect();
        let mut merge = LatencyMerge::default();
        for round in 0..4u64 {
            for (k, h) in hs.iter().enumerate() {
                for v in 0..(3 + k as u64) {
                    h.record(1_000 * (round + 1) + 7_919 * v * (k as u64 + 1));
                }
            }
            if round % 2 == 1 {
                hs[1].reject();
            }
            // Every histogram is read once over `stride` sweeps.
            let stride = 3;
            let mut got = Vec::new();
            for phase in 0..stride {
                got = merge.read(&region, stride, round as u32 * stride + phase);
            }
            assert_eq!(got, region.read_latency(), "round {round}");
        }
        // Between turns the merge lags the region, never leads it: histogram 0 is not read
        // at phase 1 of a stride of 5.
        hs[0].record(5_000_000);
        let part = merge.read(&region, 5, 1);
        let whole = region.read_latency();
        assert_eq!(part[0].samples + 1, whole[0].samples);
        assert_eq!(merge.read(&region, 5, 0), whole);
    }

    #[test]
    fn every_sweep_at_stride_one_equals_the_regions_merge() {
        let region = CounterRegion::create_with(2, 4).unwrap();
        let a = region.claim_histogram(Unit::Message).unwrap();
        let mut merge = LatencyMerge::default();
        assert!(merge.read(&region, 1, 0).is_empty(), "nothing recorded yet");
        a.record(42_000);
        a.record(u64::MAX / 2);
        assert_eq!(merge.read(&region, 1, 1), region.read_latency());
        let b = region.claim_histogram(Unit::Message).unwrap();
        b.record(42_100);
        assert_eq!(merge.read(&region, 1, 2), region.read_latency());
    }

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

    #[test]
    fn histograms_merge_per_unit_and_count_every_value() {
        let region = CounterRegion::create_with(2, 4).unwrap();
        let a = region.claim_histogram(Unit::RoundTrip).unwrap();
        let b = region.claim_histogram(Unit::RoundTrip).unwrap();
        let c = region.claim_histogram(Unit::TimerWakeup).unwrap();
        let _idle = region.claim_histogram(Unit::Delivery).unwrap();
        for ns in [100, 5_000, 5_000, TOP] {
            a.record(ns);
        }
        b.record(5_010);
        c.record(2_000_000);
        c.reject();
        let read = region.read_latency();
        assert_eq!(read.len(), 2, "an idle histogram adds no unit: {read:?}");
        let rt = &read[0];
        assert_eq!(rt.unit, Some(Unit::RoundTrip));
        assert_eq!(rt.samples, 5);
        assert_eq!(rt.sum_ns, 100 + 5_000 * 2 + 5_010 + TOP);
        let five_us = histogram::bucket_of(5_000) as u16;
        assert_eq!(histogram::bucket_of(5_010) as u16, five_us);
        assert_eq!(
            rt.buckets,
            vec![(3, 1), (five_us, 3), (BUCKETS as u16, 1)],
            "100 ns, three near 5 µs, one overflow"
        );
        assert_eq!(read[1].unit, Some(Unit::TimerWakeup));
        assert_eq!((read[1].samples, read[1].rejected), (1, 1));
        // Cumulative: a second read sees the first one's counts and the new ones.
        b.record(5_000);
        assert_eq!(region.read_latency()[0].samples, 6);
    }

    const TOP: u64 = histogram::TOP_NS + 5;

    #[test]
    fn histograms_run_out_quietly() {
        let region = CounterRegion::create_with(1, 1).unwrap();
        assert!(region.claim_histogram(Unit::Message).is_some());
        assert!(region.claim_histogram(Unit::Message).is_none());
        assert!(region.claim_histogram(Unit::Message).is_none());
        assert_eq!(region.header().histograms_claimed.load(Relaxed), 1);
    }

    #[test]
    fn prefaulting_changes_no_count() {
        let region = CounterRegion::create_with(2, 2).unwrap();
        let slot = region.claim().unwrap();
        slot.add(5);
        let h = region.claim_histogram(Unit::Message).unwrap();
        for ns in [40, 5_000, 9_000_000, TOP] {
            h.record(ns);
        }
        let before = h.totals();
        slot.prefault();
        h.prefault();
        assert_eq!(slot.get(), 5);
        assert_eq!(h.totals(), before);
        assert_eq!(h.samples(), 4);
    }

    #[test]
    fn threads_record_without_losing_values() {
        let region = CounterRegion::create_with(1, 4).unwrap();
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let h = region.claim_histogram(Unit::Message).unwrap();
                s.spawn(move || {
                    for i in 0..50_000u64 {
                        h.record(1_000 + (i * 7 + t) % 100_000);
                    }
                });
            }
        });
        let read = region.read_latency();
        let counted: u64 = read[0].buckets.iter().map(|&(_, c)| c).sum();
        assert_eq!((read[0].samples, counted), (200_000, 200_000));
    }

    #[test]
    fn a_child_maps_the_same_histograms() {
        let region = CounterRegion::create_with(2, 2).unwrap();
        let h = region.claim_histogram(Unit::ForkCycle).unwrap();
        h.record(1_000_000);
        // What a workload exec'd with the descriptor does: map it again from the header.
        let copy = CounterRegion::from_fd(region.map.fd.try_clone().unwrap()).unwrap();
        assert_eq!((copy.capacity, copy.histograms), (2, 2));
        assert_eq!(copy.read_latency(), region.read_latency());
        assert_eq!(h.offset(), LINE * 3);
        // A header that claims more histograms than the file holds is refused.
        let short = CounterRegion::create_with(1, 0).unwrap();
        short.header().histograms.store(5, Relaxed);
        assert!(CounterRegion::from_fd(short.map.fd.try_clone().unwrap()).is_err());
    }

    #[test]
    fn sampler_times_the_first_then_every_nth() {
        let mut s = Sampler::new(4);
        let picked: Vec<bool> = (0..9).map(|_| s.due()).collect();
        assert_eq!(
            picked,
            [true, false, false, false, true, false, false, false, true]
        );
        let mut every = Sampler::new(1);
        assert!((0..5).all(|_| every.due()));
    }

    #[test]
    fn the_clock_moves_forward() {
        let a = now_ns();
        let b = now_ns();
        assert!(a > 0 && b >= a);
    }
}
