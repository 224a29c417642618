//! The stream between a served lab and the dashboards that watch it: its messages, its
//! framing and its limits.
//!
//! Framing: a 4-byte big-endian length before each message (tokio-util's
//! `LengthDelimitedCodec`), so a peer's length is checked against a bound before a byte of the
//! message is buffered: a 1 GB length prefix is refused on sight. Serialisation: JSON
//! (serde_json), the form the project's results and recordings already take: a Frame is a
//! few kilobytes four times a second, and a message can be read by hand (`docs/serve.md`).
//!
//! The client speaks first ([`Hello`]); the server answers [`ToClient::Welcome`] or
//! [`ToClient::Refused`] with its reason in one line, then streams Events. A client of another
//! protocol version, or something that is not a schedlab client at all, is refused in words.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::codec::LengthDelimitedCodec;

use crate::engine::{Command, Event};

/// The stream's version: a client of another one is refused with both versions named.
pub const PROTOCOL: u32 = 1;
/// What a hello opens with, so that a stray connection (a browser, a port scanner) is told
/// what it reached instead of getting garbage back.
pub const MAGIC: &str = "schedlab";
/// The port `serve` listens on when given none.
pub const DEFAULT_PORT: u16 = 7878;

/// The largest message a client may send (a hello, a command with its scenario entry).
pub const MAX_FROM_CLIENT: usize = 64 * 1024;
/// The largest message the server sends: a Frame of a machine with 16,000 threads is about
/// 100 KB; a replay's history after a seek, many Frames, the most.
pub const MAX_FROM_SERVER: usize = 64 * 1024 * 1024;
/// A connection that has not said hello within this is dropped.
pub const HELLO_DEADLINE: Duration = Duration::from_secs(5);

/// A client's first message.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    /// [`MAGIC`].
    pub magic: String,
    pub protocol: u32,
    /// The program's version, for the server's refusal to name.
    pub version: String,
    /// The token the server printed or read from its file; none on loopback.
    pub token: Option<String>,
}

impl Hello {
    pub fn new(token: Option<String>) -> Hello {
        Hello {
            magic: MAGIC.into(),
            protocol: PROTOCOL,
            version: env!("CARGO_PKG_VERSION").into(),
            token,
        }
    }
}

/// Who serves, as a remote dashboard names it on its status line.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Welcome {
    pub protocol: u32,
    pub version: String,
    pub host: String,
    /// The kernel release (`uname -r`).
    pub kernel: String,
    pub cpus: u32,
    /// The scenario the lab was started on.
    pub scenario: String,
    pub interval_ms: u64,
    /// Whether this client's commands are carried out (`--allow-control` and the token).
    pub control: bool,
}

/// What the server sends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToClient {
    Welcome(Welcome),
    /// Why the connection is refused; the server closes it after.
    Refused(String),
    Event(Event),
}

/// What a client sends after its hello.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToServer {
    Command(Command),
}

/// The framing for messages of at most `max` bytes.
pub fn codec(max: usize) -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .length_field_length(4)
        .max_frame_length(max)
        .new_codec()
}

/// The hello, or why it is refused in one line (the token is checked apart).
pub fn check_hello(bytes: &[u8]) -> Result<Hello, String> {
    #[derive(Deserialize)]
    struct Probe {
        magic: Option<String>,
        protocol: Option<u32>,
        version: Option<String>,
    }
    let not_ours = || "this is a schedlab lab; connect with `schedlab tui --connect`".to_owned();
    // Read the version first, leniently: a client of another version may differ in the rest.
    let probe: Probe = serde_json::from_slice(bytes).map_err(|_| not_ours())?;
    if probe.magic.as_deref() != Some(MAGIC) {
        return Err(not_ours());
    }
    if probe.protocol != Some(PROTOCOL) {
        return Err(format!(
            "this lab speaks schedlab protocol {PROTOCOL} (schedlab {}); the client speaks {} \
             (schedlab {}): use the same version on both sides",
            env!("CARGO_PKG_VERSION"),
            probe.protocol.map_or("none".into(), |p| p.to_string()),
            probe.version.as_deref().unwrap_or("unknown"),
        ));
    }
    serde_json::from_slice(bytes).map_err(|e| format!("a malformed hello: {e}"))
}

/// Whether `given` is `want`, in time that does not depend on where they differ.
pub fn token_matches(want: &str, given: Option<&str>) -> bool {
    let Some(given) = given else { return false };
    let (a, b) = (want.as_bytes(), given.as_bytes());
    let mut diff = a.len() ^ b.len();
    for (i, x) in a.iter().enumerate() {
        diff |= usize::from(x ^ b.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

/// A fresh token: 128 bits from the kernel's random source, in hex.
pub fn new_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A message as its frame's bytes.
pub fn encode<T: Serialize>(msg: &T) -> bytes::Bytes {
    serde_json::to_vec(msg)
        .expect("a message always serialises: plain data, string keys")
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hello_round_trips_and_is_welcome() {
        let h = Hello::new(Some("abc".into()));
        assert_eq!(check_hello(&encode(&h)), Ok(h));
    }

    #[test]
    fn another_version_is_refused_with_both_named() {
        let e = check_hello(br#"{"magic":"schedlab","protocol":7,"version":"9.9.9","x":1}"#)
            .unwrap_err();
        assert!(
            e.contains("protocol 1") && e.contains("speaks 7") && e.contains("9.9.9"),
            "{e}"
        );
    }

    #[test]
    fn garbage_is_told_what_it_reached() {
        for bad in [
            &b"GET / HTTP/1.1\r\n"[..],
            b"\xff\x00",
            br#"{"magic":"other"}"#,
        ] {
            assert!(check_hello(bad)
                .unwrap_err()
                .contains("schedlab tui --connect"));
        }
    }

    #[test]
    fn tokens_match_only_when_equal() {
        assert!(token_matches("abcd", Some("abcd")));
        for bad in [None, Some(""), Some("abc"), Some("abcde"), Some("abce")] {
            assert!(!token_matches("abcd", bad), "{bad:?}");
        }
        let t = new_token().unwrap();
        assert_eq!(t.len(), 32);
        assert_ne!(t, new_token().unwrap());
    }

    #[test]
    fn events_and_commands_round_trip() {
        let ev = ToClient::Event(Event::Notice("hello".into()));
        let back: ToClient = serde_json::from_slice(&encode(&ev)).unwrap();
        assert_eq!(back, ev);
        let cmd = ToServer::Command(Command::Stop(3));
        let back: ToServer = serde_json::from_slice(&encode(&cmd)).unwrap();
        assert_eq!(back, cmd);
    }
}
