//! Counter slots and latency histograms that outlive a run: the server serves runs forever
//! and `schedlab chat` repeats them, so threads borrow them from a pool and hand them back, instead
//! of claiming new ones each run until the region is full.

use anyhow::Result;

use crate::sys::shared::counters::{CounterRegion, CounterSlot, Histogram};
use crate::sys::shared::histogram::Unit;

pub(crate) struct SlotPool {
    region: CounterRegion,
    free: Vec<CounterSlot>,
    free_histograms: Vec<Histogram>,
}

impl SlotPool {
    pub fn new(region: CounterRegion) -> Self {
        Self {
            region,
            free: Vec::new(),
            free_histograms: Vec::new(),
        }
    }

    /// A delivery-latency histogram for one receive thread: a returned one, or a fresh claim;
    /// None when recording is off or the region has none left.
    pub(crate) fn take_histogram(&mut self) -> Option<Histogram> {
        self.free_histograms
            .pop()
            .or_else(|| self.region.claim_histogram(Unit::Delivery))
    }

    pub(crate) fn give_back_histogram(&mut self, h: Histogram) {
        self.free_histograms.push(h);
    }

    pub fn region(&self) -> &CounterRegion {
        &self.region
    }

    /// A slot for one thread: a returned one, or a fresh claim.
    pub fn take(&mut self) -> Result<CounterSlot> {
        match self.free.pop() {
            Some(slot) => Ok(slot),
            None => self.region.claim(),
        }
    }

    pub(crate) fn give_back(&mut self, slot: CounterSlot) {
        self.free.push(slot);
    }
}
