//! The chat 1.0.1 wire protocol and the client's report, as pure data (docs/workloads.md).
//!
//! Everything travels over TCP on one port: an 8-byte start message on a control connection
//! (two native-endian i32: rooms, then messages per user), `rooms * 20` data connections that
//! carry 100-byte messages with no header, one START byte from the server on the control
//! connection once every data connection is accepted, one END byte from the client when its
//! threads are done.

use std::fmt;

/// The version the originals print and that schedlab speaks.
pub(crate) const VERSION: &str = "1.0.1";
/// Users (data connections) in one room.
pub(crate) const USERS_PER_ROOM: usize = 20;
/// A message: a fixed block, no header.
pub(crate) const MSG_SIZE: usize = 100;
/// Server → client on the control connection: every data connection is accepted, go.
pub(crate) const START_BYTE: u8 = 0x11;
/// Client → server on the control connection: every client thread is done.
pub(crate) const END_BYTE: u8 = 0x22;
/// Length of the start message.
pub(crate) const START_LEN: usize = 8;
/// Most messages per user either side accepts: SEMVMX, the most a SysV semaphore holds. The
/// server's receive thread posts the user's hand-off semaphore once per message and may run
/// that far ahead of its send thread, so a larger run could fail midway with ERANGE (as the
/// original's would); refusing it up front says why instead.
pub const MAX_MESSAGES: u32 = 32_767;

pub(crate) const DEFAULT_PORT: u16 = 9999;
pub(crate) const DEFAULT_ROOMS: u32 = 10;
pub(crate) const DEFAULT_MESSAGES: u32 = 100;

/// The start message as it travels: the raw signed values, not yet checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StartMessage {
    pub rooms: i32,
    pub messages: i32,
}

impl StartMessage {
    pub fn encode(self) -> [u8; START_LEN] {
        let mut out = [0; START_LEN];
        out[..4].copy_from_slice(&self.rooms.to_ne_bytes());
        out[4..].copy_from_slice(&self.messages.to_ne_bytes());
        out
    }

    pub fn decode(bytes: [u8; START_LEN]) -> Self {
        Self {
            rooms: i32::from_ne_bytes(bytes[..4].try_into().unwrap()),
            messages: i32::from_ne_bytes(bytes[4..].try_into().unwrap()),
        }
    }

    /// The run it asks for, if both numbers are sane; `max_rooms` is what this machine's
    /// limits can hold. The error says which number is wrong and why.
    pub fn validate(self, max_rooms: u32) -> Result<RunSize, String> {
        let rooms = check_range("rooms", self.rooms as i64, max_rooms as i64)?;
        let messages = check_messages(self.messages as i64)?;
        Ok(RunSize { rooms, messages })
    }
}

/// `what` must be 1..=max.
pub(crate) fn check_range(what: &str, value: i64, max: i64) -> Result<u32, String> {
    if value < 1 || value > max {
        return Err(format!("{what} must be 1..={max}, not {value}"));
    }
    Ok(value as u32)
}

/// Messages per user, in range, or why not.
pub(crate) fn check_messages(value: i64) -> Result<u32, String> {
    check_range("messages", value, MAX_MESSAGES as i64).map_err(|e| {
        if value > MAX_MESSAGES as i64 {
            format!("{e} (the server hands each message to its send thread through a SysV semaphore, which holds at most {MAX_MESSAGES})")
        } else {
            e
        }
    })
}

/// The size of one run, checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunSize {
    pub rooms: u32,
    pub messages: u32,
}

impl RunSize {
    pub fn connections(self) -> usize {
        self.rooms as usize * USERS_PER_ROOM
    }

    /// Messages the client sends (and the server receives).
    pub fn sent(self) -> u64 {
        self.connections() as u64 * self.messages as u64
    }

    /// Messages the server sends (and the client receives): each one fans out to 19 users.
    pub fn received(self) -> u64 {
        self.sent() * (USERS_PER_ROOM as u64 - 1)
    }

    pub(crate) fn start_message(self) -> StartMessage {
        StartMessage {
            rooms: self.rooms as i32,
            messages: self.messages as i32,
        }
    }
}

/// The client's report, printed exactly as chat_c printed it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Report {
    pub sent: u64,
    pub received: u64,
    pub elapsed_secs: f64,
}

impl Report {
    /// Messages per second, sent plus received, as VolanoMark and chat_c count them.
    pub fn throughput(&self) -> f64 {
        if self.elapsed_secs > 0.0 {
            (self.sent + self.received) as f64 / self.elapsed_secs
        } else {
            0.0
        }
    }

    /// The last line alone; its 4th whitespace field is the number (`awk '{print $4}'` reads it).
    pub(crate) fn throughput_line(&self) -> String {
        format!(
            "Average throughput : {:.0} messages per second",
            self.throughput()
        )
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Simulator version  : {VERSION}")?;
        writeln!(f, "Messages sent      : {}", self.sent)?;
        writeln!(f, "Messages received  : {}", self.received)?;
        writeln!(f, "Total messages     : {}", self.sent + self.received)?;
        writeln!(f, "Elapsed time       : {:.2} seconds", self.elapsed_secs)?;
        writeln!(f, "{}", self.throughput_line())
    }
}

/// Parses a count given on the command line: a whole number, also written like `1e9`, so that
/// the range check (not the parser) answers for absurd values.
pub fn parse_count(what: &str, text: &str) -> Result<i64, String> {
    let text = text.trim();
    if let Ok(v) = text.parse::<i64>() {
        return Ok(v);
    }
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v.fract() == 0.0 => {
            Ok(v.clamp(i64::MIN as f64, i64::MAX as f64) as i64)
        }
        _ => Err(format!("{what} must be a whole number, not {text:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_message_is_two_native_i32() {
        let m = StartMessage {
            rooms: 30,
            messages: 1000,
        };
        let bytes = m.encode();
        let mut expect = Vec::new();
        expect.extend_from_slice(&30i32.to_ne_bytes());
        expect.extend_from_slice(&1000i32.to_ne_bytes());
        assert_eq!(bytes.to_vec(), expect);
        assert_eq!(StartMessage::decode(bytes), m);
    }

    #[test]
    fn nonsense_start_messages_are_refused() {
        let v = |rooms, messages| StartMessage { rooms, messages }.validate(500);
        assert!(v(0, 100).is_err());
        assert!(v(-1, 100).is_err());
        assert!(v(i32::MAX, 100).is_err());
        assert!(v(501, 100).is_err());
        assert!(v(10, 0).is_err());
        assert!(v(10, -5).is_err());
        assert!(v(10, 1_000_000_000).is_err());
        assert_eq!(
            v(10, 100),
            Ok(RunSize {
                rooms: 10,
                messages: 100
            })
        );
        assert_eq!(
            v(0, 100).unwrap_err(),
            "rooms must be 1..=500, not 0".to_string()
        );
    }

    #[test]
    fn counts_match_the_seed() {
        let size = RunSize {
            rooms: 10,
            messages: 100,
        };
        assert_eq!(size.sent(), 20_000);
        assert_eq!(size.received(), 380_000);
        assert_eq!(size.connections(), 200);
    }

    #[test]
    fn report_is_byte_for_byte_the_original() {
        let r = Report {
            sent: 20_000,
            received: 380_000,
            elapsed_secs: 6.54,
        };
        let text = r.to_string();
        assert_eq!(
            text,
            "Simulator version  : 1.0.1\n\
             Messages sent      : 20000\n\
             Messages received  : 380000\n\
             Total messages     : 400000\n\
             Elapsed time       : 6.54 seconds\n\
             Average throughput : 61162 messages per second\n"
        );
        let last = text.lines().last().unwrap();
        assert_eq!(last.split_whitespace().nth(3), Some("61162"));
    }

    #[test]
    fn counts_parse_like_a_person_writes_them() {
        assert_eq!(parse_count("rooms", "30"), Ok(30));
        assert_eq!(parse_count("rooms", "-5"), Ok(-5));
        assert_eq!(parse_count("messages", "1e9"), Ok(1_000_000_000));
        assert!(parse_count("rooms", "ten").is_err());
        assert!(parse_count("rooms", "1.5").is_err());
    }
}
