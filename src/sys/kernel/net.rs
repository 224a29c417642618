//! Network addresses as the system resolves them: every address schedlab listens on or
//! connects to (`serve`, `tui --connect`, the metrics endpoint) is read by one rule.

use std::net::{SocketAddr, ToSocketAddrs};

use anyhow::{anyhow, Result};

/// `HOST:PORT`, `[V6]:PORT`, or a bare `PORT` (loopback): every address schedlab listens on
/// or connects to (the metrics endpoint's too).
pub fn parse_addr(addr: &str) -> Result<SocketAddr> {
    let addr = addr.trim();
    if let Ok(port) = addr.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    addr.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| anyhow!("`{addr}` is not HOST:PORT (e.g. 127.0.0.1:7878) or a port"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_port_is_loopback() {
        assert_eq!(
            parse_addr("7878").unwrap(),
            "127.0.0.1:7878".parse().unwrap()
        );
        assert!(parse_addr("nowhere").is_err());
    }
}
