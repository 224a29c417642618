//! Stamps taken into latency histograms: the format itself is [`crate::sys::shared::stamp`], core
//! only, shared with the lean hackbench.

pub use crate::sys::shared::stamp::*;

use crate::sys::shared::counters::{now_ns, Histogram};

/// Takes a received payload's stamp into `latency`: records its age, or counts it rejected.
#[inline(always)]
pub fn take(payload: &[u8], latency: &Histogram) {
    match taken(payload, now_ns) {
        Taken::Untimed => {}
        Taken::Age(ns) => latency.record(ns),
        Taken::Rejected => latency.reject(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_are_recorded_and_impossible_ones_rejected() {
        let region = crate::sys::shared::counters::CounterRegion::create_with(1, 1).unwrap();
        let h = region
            .claim_histogram(crate::sys::shared::histogram::Unit::Delivery)
            .unwrap();
        let mut p = [0u8; 24];
        prepare(&mut p);
        stamp(&mut p, now_ns() - 5_000);
        take(&p, &h);
        stamp(&mut p, now_ns() + 1_000_000_000); // from the future
        take(&p, &h);
        take(&[0u8; 24], &h);
        let t = h.totals();
        assert_eq!((t.samples, t.rejected), (1, 2));
        assert!(t.sum_ns >= 5_000 && t.sum_ns < MAX_PLAUSIBLE_NS);
    }
}
