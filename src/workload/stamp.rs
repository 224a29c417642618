//! A send time carried inside a message's payload, which the protocols treat as opaque (chat's
//! 100 bytes, hackbench's data): the receiver takes it back out and records how long the
//! message took. The first 24 bytes of a stamped payload are a magic word, the sender's
//! CLOCK_MONOTONIC in ns (0: this message is not timed) and a check word derived from it.
//!
//! A payload that comes back without the magic word, with a check that does not match, or
//! with a time that cannot be (in the future, or more than [`MAX_PLAUSIBLE_NS`] ago) was not
//! relayed as sent: it is counted as rejected, never recorded, so a peer that sends other
//! bytes (zeros, its own buffer) shows "latency unavailable" rather than garbage.

use crate::sys::counters::{now_ns, Histogram};

/// Bytes a stamp takes at the start of a payload.
pub const STAMP_LEN: usize = 24;
const MAGIC: [u8; 8] = *b"schdlab\x01";
/// Mixed into the check word, so that no plain pattern (zeros, a repeated byte) passes.
const KEY: u64 = 0x9e37_79b9_7f4a_7c15;
/// No message takes this long (every peer gives up after its timeout, 10 s by default).
pub const MAX_PLAUSIBLE_NS: u64 = 100_000_000_000;

/// Readies a payload for stamping: the magic word, no time. Once, before the loop.
pub fn prepare(payload: &mut [u8]) {
    payload[..8].copy_from_slice(&MAGIC);
    clear(payload);
}

/// Writes the send time `t_ns` (not 0) and its check.
#[inline(always)]
pub fn stamp(payload: &mut [u8], t_ns: u64) {
    payload[8..16].copy_from_slice(&t_ns.to_ne_bytes());
    payload[16..24].copy_from_slice(&check(t_ns).to_ne_bytes());
}

/// Back to "not timed" after a stamped message went out.
#[inline(always)]
pub fn clear(payload: &mut [u8]) {
    payload[8..24].fill(0);
}

#[inline(always)]
fn check(t_ns: u64) -> u64 {
    t_ns.rotate_left(23) ^ KEY
}

/// What a received payload says.
#[derive(Debug, PartialEq, Eq)]
pub enum Read {
    /// Sent at this time.
    Sent(u64),
    /// Relayed as sent, but not timed.
    Untimed,
    /// Not what was sent.
    Foreign,
}

#[inline(always)]
pub fn read(payload: &[u8]) -> Read {
    if payload[..8] != MAGIC {
        return Read::Foreign;
    }
    let word = |at: usize| u64::from_ne_bytes(payload[at..at + 8].try_into().unwrap());
    match (word(8), word(16)) {
        (0, 0) => Read::Untimed,
        (t, c) if t != 0 && c == check(t) => Read::Sent(t),
        _ => Read::Foreign,
    }
}

/// Takes a received payload's stamp into `latency`: records its age, or counts it rejected.
#[inline(always)]
pub fn take(payload: &[u8], latency: &Histogram) {
    match read(payload) {
        Read::Untimed => {}
        Read::Sent(t) => {
            let age = now_ns().wrapping_sub(t);
            if age <= MAX_PLAUSIBLE_NS {
                latency.record(age);
            } else {
                latency.reject();
            }
        }
        Read::Foreign => latency.reject(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_survives_and_only_a_stamp_reads_as_one() {
        let mut p = [b'x'; 100];
        prepare(&mut p);
        assert_eq!(read(&p), Read::Untimed);
        stamp(&mut p, 123_456_789);
        assert_eq!(read(&p), Read::Sent(123_456_789));
        assert_eq!(
            &p[24..],
            &[b'x'; 76][..],
            "the rest of the payload is untouched"
        );
        clear(&mut p);
        assert_eq!(read(&p), Read::Untimed);
        assert_eq!(read(&[0u8; 100]), Read::Foreign);
        assert_eq!(read(&[b'x'; 100]), Read::Foreign);
        // A torn or altered time fails its check.
        stamp(&mut p, 123_456_789);
        p[9] ^= 1;
        assert_eq!(read(&p), Read::Foreign);
    }

    #[test]
    fn ages_are_recorded_and_impossible_ones_rejected() {
        let region = crate::sys::counters::CounterRegion::create_with(1, 1).unwrap();
        let h = region
            .claim_histogram(crate::sys::histogram::Unit::Delivery)
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
