//! The metrics endpoint: one small thread answers `GET /metrics`, one request per
//! connection, with a deadline and a size limit so a stalled or hostile client cannot hold
//! it. It binds exactly the address it is given (a bare port means loopback).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

use super::{common_labels, exposition, hostname, Format, Totals};
use crate::model::Frame;
use crate::probe::Sample;

/// A request larger than this is refused: a scrape is one short line and a few headers.
const REQUEST_LIMIT: usize = 8 * 1024;
/// The whole request must arrive within this, however slowly it trickles in.
const REQUEST_DEADLINE: Duration = Duration::from_secs(2);
/// A scraper that stops reading the answer is dropped after this.
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);

struct Shared {
    common: String,
    totals: Mutex<Totals>,
}

impl Shared {
    fn totals(&self) -> MutexGuard<'_, Totals> {
        // A panic elsewhere while the lock was held leaves consistent sums: keep serving them.
        self.totals.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A running metrics endpoint; stops when dropped.
pub struct MetricsServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// `HOST:PORT`, `[V6]:PORT`, or a bare `PORT` (loopback).
pub fn parse_addr(addr: &str) -> Result<SocketAddr> {
    let addr = addr.trim();
    if let Ok(port) = addr.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    addr.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            anyhow!("metrics address `{addr}` is not HOST:PORT (e.g. 127.0.0.1:9464) or a port")
        })
}

impl MetricsServer {
    /// Binds `addr` now (so a busy port fails before any work) and serves in the background,
    /// labelling every series with this host, its kernel release and `scenario`.
    pub fn start(addr: &str, scenario: &str) -> Result<Self> {
        let common = common_labels(
            &hostname(),
            &crate::record::machine::kernel_release(),
            scenario,
        );
        Self::start_labelled(addr, common)
    }

    /// Like [`MetricsServer::start`], with the common labels given (see [`common_labels`]).
    pub fn start_labelled(addr: &str, common: String) -> Result<Self> {
        let want = parse_addr(addr)?;
        let listener =
            TcpListener::bind(want).with_context(|| format!("cannot serve metrics on {want}"))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            common,
            totals: Mutex::new(Totals::default()),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (shared, stop) = (shared.clone(), stop.clone());
            std::thread::Builder::new()
                .name("metrics".into())
                .spawn(move || serve(listener, &shared, &stop))?
        };
        Ok(MetricsServer {
            addr,
            shared,
            stop,
            thread: Some(thread),
        })
    }

    /// Where it listens (the real port when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Adds `frame` to the counters and makes its levels what the next scrape returns.
    pub fn publish(&self, frame: &Frame) {
        self.shared.totals().add(frame);
    }

    /// Adds the latency `sample`'s histograms recorded since the previous one (the Frame
    /// holds only percentiles, which do not add up).
    pub fn publish_latency(&self, sample: &Sample) {
        self.shared.totals().add_latency(sample);
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept; it sees the flag and returns.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(listener: TcpListener, shared: &Shared, stop: &AtomicBool) {
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        if let Ok(stream) = conn {
            let _ = answer(stream, shared);
        }
    }
}

/// The request head (up to the blank line), or None when it exceeds [`REQUEST_LIMIT`].
fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<String>> {
    let deadline = Instant::now() + REQUEST_DEADLINE;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        if buf.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
        if buf.len() > REQUEST_LIMIT {
            return Ok(None);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        stream.set_read_timeout(Some(left))?;
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Ok(Some(String::from_utf8_lossy(&buf).into_owned()))
}

fn answer(mut stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let plain = "text/plain; charset=utf-8";
    let head = read_head(&mut stream)?;
    let refused = head.is_none();
    let (status, ctype, body) = match head {
        None => (
            "431 Request Header Fields Too Large",
            plain,
            "request too large\n".to_owned(),
        ),
        Some(head) => {
            let mut first = head.lines().next().unwrap_or("").split_whitespace();
            let (method, path) = (first.next().unwrap_or(""), first.next().unwrap_or(""));
            let path = path.split('?').next().unwrap_or("");
            match (method, path) {
                ("GET", "/metrics") => {
                    let accept = head.lines().skip(1).filter_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.trim().eq_ignore_ascii_case("accept").then_some(value)
                    });
                    let format = Format::negotiate(accept);
                    let body = exposition(&shared.totals(), &shared.common, format);
                    ("200 OK", format.content_type(), body)
                }
                ("GET", "/") => (
                    "200 OK",
                    plain,
                    "schedlab: metrics at /metrics\n".to_owned(),
                ),
                ("GET", _) => (
                    "404 Not Found",
                    plain,
                    "not found: try /metrics\n".to_owned(),
                ),
                _ => ("405 Method Not Allowed", plain, "only GET\n".to_owned()),
            }
        }
    };
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()?;
    if refused {
        // Closing with the rest of the request unread would reset the connection and could
        // destroy the answer before the client reads it: read what is left, within bounds.
        stream.shutdown(std::net::Shutdown::Write)?;
        let deadline = Instant::now() + REQUEST_DEADLINE;
        let mut chunk = [0u8; 4096];
        let mut left = 16 * REQUEST_LIMIT;
        while left > 0 {
            let time = deadline.saturating_duration_since(Instant::now());
            if time.is_zero() {
                break;
            }
            stream.set_read_timeout(Some(time))?;
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_port_means_loopback() {
        assert_eq!(
            parse_addr("9464").unwrap(),
            "127.0.0.1:9464".parse().unwrap()
        );
        assert!(parse_addr("nowhere").is_err());
    }
}
