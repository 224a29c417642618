//! A send time carried inside a message's payload, which the protocols treat as opaque (chat's
//! 100 bytes, hackbench's data): the receiver takes it back out and records how long the
//! message took. The first 24 bytes of a stamped payload are a magic word, the sender's
//! CLOCK_MONOTONIC in ns (0: this message is not timed) and a check word derived from it.
//!
//! A payload that comes back without the magic word, with a check that does not match, or
//! with a time that cannot be (in the future, or more than [`MAX_PLAUSIBLE_NS`] ago) was not
//! relayed as sent: it is counted as rejected, never recorded, so a peer that sends other
//! bytes (zeros, its own buffer) shows "latency unavailable" rather than garbage.
//!
//! Core only (no std, no allocation), like the histogram's layout, so that the lean hackbench
//! (src/bin/schedlab-hackbench.rs, built without std) stamps and reads with this very code.
//! Recording into a histogram is `workload::stamp::take`.

/// Bytes a stamp takes at the start of a payload.
pub(crate) const STAMP_LEN: usize = 24;
const MAGIC: [u8; 8] = *b"schdlab\x01";
/// Mixed into the check word, so that no plain pattern (zeros, a repeated byte) passes.
const KEY: u64 = 0x9e37_79b9_7f4a_7c15;
/// No message takes this long (every peer gives up after its timeout, 10 s by default).
pub(crate) const MAX_PLAUSIBLE_NS: u64 = 100_000_000_000;

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

/// What a received payload gives its latency histogram.
#[derive(Debug, PartialEq, Eq)]
pub enum Taken {
    /// Nothing: it was not timed.
    Untimed,
    /// This age in ns, to record.
    Age(u64),
    /// A rejection: not relayed as sent, or an age that cannot be.
    Rejected,
}

/// Judges a received payload; `now` (the clock, read only for a timed one) gives its age.
#[inline(always)]
pub fn taken(payload: &[u8], now: impl FnOnce() -> u64) -> Taken {
    match read(payload) {
        Read::Untimed => Taken::Untimed,
        Read::Sent(t) => {
            let age = now().wrapping_sub(t);
            if age <= MAX_PLAUSIBLE_NS {
                Taken::Age(age)
            } else {
                Taken::Rejected
            }
        }
        Read::Foreign => Taken::Rejected,
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
    fn an_age_is_judged_only_when_timed_and_plausible() {
        let mut p = [0u8; 24];
        prepare(&mut p);
        assert_eq!(
            taken(&p, || unreachable!("untimed: no clock read")),
            Taken::Untimed
        );
        stamp(&mut p, 1_000);
        assert_eq!(taken(&p, || 6_000), Taken::Age(5_000));
        // From the future, or older than any peer waits.
        assert_eq!(taken(&p, || 999), Taken::Rejected);
        assert_eq!(taken(&p, || 1_000 + MAX_PLAUSIBLE_NS + 1), Taken::Rejected);
        assert_eq!(taken(&[0u8; 24], || 0), Taken::Rejected);
    }
}
