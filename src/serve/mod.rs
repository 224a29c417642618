//! A lab over the network: `schedlab serve` (and `--serve` on `tui` and `run`) serves the
//! engine's Events, and `schedlab tui --connect` watches them as if the lab ran here.
//!
//! `protocol` is the stream (hello, messages, framing, limits), `server` the serving side on
//! tokio, `client` the watching side. Loopback by default; any other address needs a token,
//! and control needs `--allow-control` besides (docs/serve.md).

pub mod client;
pub mod protocol;
pub mod server;

use std::net::SocketAddr;
use std::path::Path;

use anyhow::{bail, Context, Result};

pub use crate::sys::kernel::net::parse_addr;
pub use client::Remote;
pub use protocol::Welcome;
pub use server::{ServeConfig, Server};

/// The token a server at `addr` requires: the file's when given (its first line), else a
/// fresh one off loopback (`generated` true: the caller prints it), else none.
pub fn token_for(addr: &SocketAddr, file: Option<&Path>) -> Result<(Option<String>, bool)> {
    if let Some(path) = file {
        return Ok((Some(read_token(path)?), false));
    }
    if addr.ip().is_loopback() {
        return Ok((None, false));
    }
    Ok((
        Some(protocol::new_token().context("generating a token")?),
        true,
    ))
}

/// A client's token: the file's when given, else `SCHEDLAB_TOKEN`'s, else none.
pub fn client_token(file: Option<&Path>) -> Result<Option<String>> {
    if let Some(path) = file {
        return Ok(Some(read_token(path)?));
    }
    Ok(std::env::var("SCHEDLAB_TOKEN")
        .ok()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty()))
}

fn read_token(path: &Path) -> Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the token file {}", path.display()))?;
    let token = text.lines().next().unwrap_or("").trim();
    if token.len() < 16 {
        bail!(
            "the token in {} is shorter than 16 characters: too easy to guess",
            path.display()
        );
    }
    Ok(token.to_owned())
}

/// Who serves: this host, its kernel, the scenario (a client's `control` is set per client).
pub fn welcome_here(scenario: &str, interval_ms: u64) -> Welcome {
    Welcome {
        protocol: protocol::PROTOCOL,
        version: env!("CARGO_PKG_VERSION").into(),
        host: crate::record::metrics::hostname(),
        kernel: crate::record::machine::kernel_release(),
        cpus: crate::supervisor::usable_cpus().max(1) as u32,
        scenario: scenario.into(),
        interval_ms,
        control: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_needed_off_loopback_only() {
        let lo: SocketAddr = "127.0.0.1:7878".parse().unwrap();
        assert_eq!(token_for(&lo, None).unwrap(), (None, false));
        let any: SocketAddr = "0.0.0.0:7878".parse().unwrap();
        let (t, generated) = token_for(&any, None).unwrap();
        assert!(generated && t.is_some_and(|t| t.len() == 32));
    }

    #[test]
    fn a_short_token_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        std::fs::write(&p, "abc\n").unwrap();
        assert!(read_token(&p)
            .unwrap_err()
            .to_string()
            .contains("shorter than 16"));
        std::fs::write(&p, "0123456789abcdef0123\nignored").unwrap();
        assert_eq!(read_token(&p).unwrap(), "0123456789abcdef0123");
    }
}
