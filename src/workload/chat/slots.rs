//! Counter slots that outlive a run: the server serves runs forever and chat-bench repeats
//! them, so threads borrow slots from a pool and hand them back, instead of claiming new ones
//! each run until the region is full.

use anyhow::Result;

use crate::sys::counters::{CounterRegion, CounterSlot};

pub struct SlotPool {
    region: CounterRegion,
    free: Vec<CounterSlot>,
}

impl SlotPool {
    pub fn new(region: CounterRegion) -> Self {
        Self {
            region,
            free: Vec::new(),
        }
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

    pub fn give_back(&mut self, slot: CounterSlot) {
        self.free.push(slot);
    }
}
