//! A workload's latency histograms, merged per unit by the observer. A thousand-thread
//! workload has a thousand histograms in shared memory that other CPUs keep writing; reading
//! every one at every sweep was a tenth of the observer's time. So a big workload's are read
//! in rotation, within a budget of histogram reads a second, like its threads' schedstat: the
//! merged counts are each histogram's as last read, and a read adds only what that histogram
//! gained since its last one. Nothing is counted twice or lost; a value recorded is counted
//! at its histogram's next turn, a few sweeps late at most.

use crate::sys::counters::{sparse, CounterRegion, LatencyTotals};
use crate::sys::histogram::{Unit, BUCKETS};

use super::LatencySample;

/// Histogram reads a second, at most, on average. One reads a header line and every line of
/// buckets its thread ever wrote, which that thread's CPU keeps dirtying: about 2 µs at 1,000
/// threads of busy ping-pong (whose round trips span 14 octaves, 56 lines), so 500 a second
/// cost about 0.1% of a CPU. With more histograms than this at the interval, each is read
/// every few sweeps (1,000 threads at 10 Hz: every 2 s), and an interval's percentiles are
/// those of the histograms read in it, over their own read intervals.
pub const HISTOGRAM_READS_PER_SEC: u64 = 500;

/// One histogram in how many to read this sweep, for `histograms` of them `gap_ns` after the
/// last sweep.
pub(super) fn histogram_stride(histograms: usize, gap_ns: u64) -> u32 {
    super::rotation_stride(histograms as u64, HISTOGRAM_READS_PER_SEC, gap_ns)
}

/// One unit's histograms merged: cumulative counts, every bucket (overflow last).
struct UnitSum {
    unit: Unit,
    samples: u64,
    sum_ns: u64,
    rejected: u64,
    dense: Vec<u64>,
}

/// What the observer keeps of one workload's histograms between sweeps.
#[derive(Default)]
pub(super) struct LatencyMerge {
    /// Each histogram as last read (by its index in the region).
    last: Vec<LatencyTotals>,
    units: Vec<UnitSum>,
    /// The read in progress, swapped into `last`.
    scratch: LatencyTotals,
}

impl LatencyMerge {
    /// Reads this sweep's share of the region's histograms (one in `stride`, turning with
    /// `phase`; a histogram never read yet is read at once) and returns every unit's merged
    /// counts, in unit order.
    pub(super) fn read(
        &mut self,
        region: &CounterRegion,
        stride: u32,
        phase: u32,
    ) -> Vec<LatencySample> {
        let claimed = region.histograms_claimed();
        if self.last.len() < claimed {
            self.last.resize_with(claimed, LatencyTotals::default);
        }
        let stride = stride.max(1) as usize;
        for i in 0..claimed {
            let turn = (i + phase as usize) % stride == 0;
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
            .map(|u| LatencySample {
                unit: u.unit.name().to_string(),
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

    fn region_read(region: &CounterRegion) -> Vec<LatencySample> {
        region.read_latency().into_iter().map(Into::into).collect()
    }

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
            assert_eq!(got, region_read(&region), "round {round}");
        }
        // Between turns the merge lags the region, never leads it: histogram 0 is not read
        // at phase 1 of a stride of 5.
        hs[0].record(5_000_000);
        let part = merge.read(&region, 5, 1);
        let whole = region_read(&region);
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
        assert_eq!(merge.read(&region, 1, 1), region_read(&region));
        let b = region.claim_histogram(Unit::Message).unwrap();
        b.record(42_100);
        assert_eq!(merge.read(&region, 1, 2), region_read(&region));
    }
}
