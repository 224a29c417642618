//! The latency histogram's layout: which bucket a value falls in, what each bucket covers, and
//! how one thread's histogram lies in the shared counter region. Core only (no std, no
//! allocation), so that the lean fork-load forker (src/bin/schedlab-forker.rs, built without
//! std) records with this very code.
//!
//! Log-linear, as HdrHistogram: values in ns; below 1024 ns, 32 buckets 32 ns wide; from
//! 1024 ns up, every power of two is split into 32 buckets of equal width, so a bucket is at
//! most 1/32 (3.1%) of its lower bound wide. Reporting a bucket's midpoint is then within 1.6%
//! of any value in it (within 16 ns below 1 µs). The last bucket ends at 2^37 ns (137 s);
//! values at or past it are counted apart, as overflow.

/// Buckets of 32 ns below 1024 ns, then 32 per power of two up to 2^37 ns.
pub(crate) const SUB_BUCKETS: usize = 32;
const SUB_BITS: u32 = 5;
/// log2 of the first buckets' width in ns (32 ns).
const UNIT_BITS: u32 = 5;
/// Buckets below the overflow: 28 ranges of 32 (the linear one and 27 powers of two).
pub(crate) const BUCKETS: usize = 896;
/// Where the buckets end: 2^37 ns, about 137 s. Values from here on are overflow.
pub const TOP_NS: u64 = 1 << 37;

/// The bucket `ns` falls in; `BUCKETS` for overflow.
#[inline(always)]
pub const fn bucket_of(ns: u64) -> usize {
    if ns >= TOP_NS {
        return BUCKETS;
    }
    let units = ns >> UNIT_BITS;
    if units < SUB_BUCKETS as u64 {
        return units as usize;
    }
    // The power of two `units` lies in (5 or more), and its 32nd part it falls in.
    let exp = 63 - units.leading_zeros();
    let sub = (units >> (exp - SUB_BITS)) as usize & (SUB_BUCKETS - 1);
    (exp - SUB_BITS + 1) as usize * SUB_BUCKETS + sub
}

/// The values bucket `i` holds: `[low, high)` in ns. Overflow is `[TOP_NS, u64::MAX)`.
pub(crate) fn bucket_range(i: usize) -> (u64, u64) {
    if i >= BUCKETS {
        return (TOP_NS, u64::MAX);
    }
    let (range, sub) = ((i / SUB_BUCKETS) as u32, (i % SUB_BUCKETS) as u64);
    if range == 0 {
        return (sub << UNIT_BITS, (sub + 1) << UNIT_BITS);
    }
    let width = 1u64 << (range - 1 + UNIT_BITS);
    let low = (SUB_BUCKETS as u64 + sub) * width;
    (low, low + width)
}

/// What a histogram times, stored in its header so that the observer can tell a workload's
/// kinds of latency apart (the wakeup probe has two).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u64)]
pub enum Unit {
    RoundTrip = 1,
    Delivery = 2,
    Message = 3,
    ForkCycle = 4,
    TimerWakeup = 5,
    ThreadWakeup = 6,
}

impl Unit {
    pub const ALL: [Unit; 6] = [
        Unit::RoundTrip,
        Unit::Delivery,
        Unit::Message,
        Unit::ForkCycle,
        Unit::TimerWakeup,
        Unit::ThreadWakeup,
    ];

    /// As people say it: "round trip", "fork cycle".
    pub fn name(self) -> &'static str {
        match self {
            Unit::RoundTrip => "round trip",
            Unit::Delivery => "delivery",
            Unit::Message => "message",
            Unit::ForkCycle => "fork cycle",
            Unit::TimerWakeup => "timer wakeup",
            Unit::ThreadWakeup => "thread wakeup",
        }
    }

    pub(crate) fn from_code(code: u64) -> Option<Unit> {
        Unit::ALL.into_iter().find(|u| *u as u64 == code)
    }
}

// One thread's histogram in the region, in 64-bit words: a header line, then the buckets.
/// Bytes of a cache line.
pub const LINE: usize = 64;
/// The header's words.
pub(crate) const H_UNIT: usize = 0;
/// Values recorded, overflow included.
pub(crate) const H_SAMPLES: usize = 1;
/// Their sum in ns (for the mean; the overflow's exact values too).
pub(crate) const H_SUM: usize = 2;
/// Operations whose latency could not be read (a stamp that did not survive the trip).
pub const H_REJECTED: usize = 3;
/// Values at or past `TOP_NS`.
pub(crate) const H_OVERFLOW: usize = 4;
/// Two words of bits, one bit per cache line of buckets ever written: the observer reads only
/// those lines.
pub(crate) const H_TOUCHED: usize = 5;
/// Words in the header line.
pub(crate) const HEADER_WORDS: usize = 8;
/// Buckets in one cache line.
pub(crate) const BUCKETS_PER_LINE: usize = LINE / 8;
/// Bytes of one thread's histogram: the header line and 112 lines of buckets.
pub const HISTOGRAM_BYTES: usize = LINE + BUCKETS * 8;

const _: () = assert!(
    BUCKETS / BUCKETS_PER_LINE <= 128,
    "two words of touched bits"
);
const _: () = assert!(bucket_of(TOP_NS - 1) == BUCKETS - 1);

/// Records `ns` into the histogram whose first word is `words`, as its only writer: plain
/// loads and stores, no atomic read-modify-write, no lock.
///
/// # Safety
/// `words` points to `HISTOGRAM_BYTES` of shared memory, 8-byte aligned, that only this thread
/// writes (others may read it through atomics).
#[inline(always)]
pub unsafe fn record(words: *const core::sync::atomic::AtomicU64, ns: u64) {
    use core::sync::atomic::Ordering::Relaxed;
    let bump = |w: usize, by: u64| {
        // SAFETY: the caller vouches for `words`; every index here is within the histogram.
        let word = unsafe { &*words.add(w) };
        word.store(word.load(Relaxed).wrapping_add(by), Relaxed);
    };
    let i = bucket_of(ns);
    if i < BUCKETS {
        bump(HEADER_WORDS + i, 1);
        let line = i / BUCKETS_PER_LINE;
        // SAFETY: as above; the touched bits are header words 5 and 6.
        let touched = unsafe { &*words.add(H_TOUCHED + line / 64) };
        let bit = 1u64 << (line % 64);
        let had = touched.load(Relaxed);
        if had & bit == 0 {
            touched.store(had | bit, Relaxed);
        }
    } else {
        bump(H_OVERFLOW, 1);
    }
    bump(H_SAMPLES, 1);
    bump(H_SUM, ns);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_range_without_gaps() {
        let mut next = 0;
        for i in 0..BUCKETS {
            let (low, high) = bucket_range(i);
            assert_eq!(low, next, "bucket {i}");
            assert!(high > low);
            assert_eq!(bucket_of(low), i);
            assert_eq!(bucket_of(high - 1), i);
            next = high;
        }
        assert_eq!(next, TOP_NS);
        assert_eq!(bucket_of(TOP_NS), BUCKETS);
        assert_eq!(bucket_of(u64::MAX), BUCKETS);
    }

    #[test]
    fn buckets_are_at_most_a_32nd_of_their_value_wide_from_1us() {
        for i in 31..BUCKETS {
            let (low, high) = bucket_range(i);
            assert!((high - low) as f64 / low as f64 <= 1.0 / 31.0, "bucket {i}");
        }
        assert_eq!(bucket_range(0), (0, 32));
        assert_eq!(bucket_range(32), (1024, 1056));
        assert_eq!(bucket_range(64), (2048, 2112));
    }

    #[test]
    fn units_round_trip_through_their_codes() {
        for u in Unit::ALL {
            assert_eq!(Unit::from_code(u as u64), Some(u));
        }
        assert_eq!(Unit::from_code(0), None);
    }
}
