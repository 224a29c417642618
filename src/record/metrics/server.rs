//! The metrics endpoint: axum's router answers `GET /metrics` through hyper's HTTP/1.1 server,
//! on a thread of its own with a current-thread tokio runtime. One request per connection,
//! each connection with a deadline and a size limit, and a bound on how many are open at once,
//! so a stalled or hostile client cannot hold it. It binds exactly the address it is given (a
//! bare port means loopback).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};
use axum::extract::State;
use axum::http::header::{ACCEPT, ALLOW, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::time::{timeout, timeout_at, Instant};

use super::{common_labels, exposition, hostname, Format, Totals};
use crate::model::Frame;
use crate::probe::Sample;

/// A request head larger than this is refused (`431`): a scrape is one short line and a few
/// headers.
const REQUEST_LIMIT: usize = 8 * 1024;
/// hyper's read buffer; it must hold a whole head, and may not be below 8 KiB.
const READ_BUFFER: usize = 16 * 1024;
/// The whole request head must arrive within this, however slowly it trickles in.
const REQUEST_DEADLINE: Duration = Duration::from_secs(2);
/// A scraper that stops reading the answer is dropped at most this long after the request's
/// deadline: every connection ends within REQUEST_DEADLINE + WRITE_TIMEOUT.
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);
/// Connections open at once; one beyond is closed as soon as it is accepted.
const MAX_CONNECTIONS: usize = 64;
/// After a refused request, at most this much of its rest is read and dropped.
const LINGER_BYTES: usize = 16 * REQUEST_LIMIT;
/// How long dropping the server waits for the answers under way.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);
/// The pause after a failed accept (out of descriptors, say), so it does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

const PLAIN: &str = "text/plain; charset=utf-8";

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
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

/// `HOST:PORT`, `[V6]:PORT`, or a bare `PORT` (loopback), as every address schedlab listens on.
pub fn parse_addr(addr: &str) -> Result<SocketAddr> {
    crate::sys::kernel::net::parse_addr(addr).context("the metrics address")
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
        let listener = std::net::TcpListener::bind(want)
            .with_context(|| format!("cannot serve metrics on {want}"))?;
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .context("cannot start the metrics endpoint's runtime")?;
        // tokio takes the listener over inside the runtime it will be polled by.
        let listener = {
            let _inside = runtime.enter();
            TcpListener::from_std(listener)?
        };
        let shared = Arc::new(Shared {
            common,
            totals: Mutex::new(Totals::default()),
        });
        let (stop, stopped) = watch::channel(false);
        let app = router(shared.clone());
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || runtime.block_on(serve(listener, app, stopped)))?;
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
        // The accept loop stops at once; answers under way get SHUTDOWN_GRACE to finish.
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `GET /metrics` in the format the scraper prefers, `GET /` a pointer to it; any other path
/// is `404`, any other method `405`.
fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/metrics", get(scrape))
        .route("/", get(|| async { "schedlab: metrics at /metrics\n" }))
        .method_not_allowed_fallback(only_get)
        .fallback(elsewhere)
        .with_state(shared)
}

async fn scrape(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let accept = headers
        .get_all(ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok());
    let format = Format::negotiate(accept);
    let body = exposition(&shared.totals(), &shared.common, format);
    ([(CONTENT_TYPE, format.content_type())], body).into_response()
}

/// Any other path: `404` to a GET, `405` to anything else.
async fn elsewhere(method: Method) -> Response {
    if method == Method::GET || method == Method::HEAD {
        return (StatusCode::NOT_FOUND, "not found: try /metrics\n").into_response();
    }
    // The routes' own 405s name their methods (axum adds `Allow`); so does this one.
    let mut refused = only_get().await;
    refused
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static("GET,HEAD"));
    refused
}

async fn only_get() -> Response {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        [(CONTENT_TYPE, PLAIN)],
        "only GET\n",
    )
        .into_response()
}

async fn serve(listener: TcpListener, app: Router, mut stopped: watch::Receiver<bool>) {
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(REQUEST_DEADLINE)
        .max_header_size(REQUEST_LIMIT)
        .max_buf_size(READ_BUFFER)
        // One request per connection, as scrapers do: the answer ends with the connection.
        .keep_alive(false)
        // `Content-Type:`, as most servers write it, for scrapers that match it literally.
        .title_case_headers(true);
    let open = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let stream = tokio::select! {
            _ = stopped.changed() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => {
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        // Beyond the bound the connection is closed unanswered: the open ones end within
        // REQUEST_DEADLINE + WRITE_TIMEOUT, so a scraper's retry finds room.
        let Ok(permit) = open.clone().try_acquire_owned() else {
            continue;
        };
        let (http, app) = (http.clone(), app.clone());
        tokio::spawn(async move {
            connection(stream, &http, app).await;
            drop(permit);
        });
    }
    // Stopping: no connection is accepted any more, and the answers under way have
    // SHUTDOWN_GRACE to finish (every permit back means every connection has ended); then the
    // runtime's drop closes what is left, clients that never sent a request among them.
    let _ = timeout(SHUTDOWN_GRACE, open.acquire_many(MAX_CONNECTIONS as u32)).await;
}

/// One connection: its request head within REQUEST_DEADLINE (hyper's header timeout), its
/// answer taken within WRITE_TIMEOUT after that, or it is dropped.
async fn connection(mut stream: TcpStream, http: &http1::Builder, app: Router) {
    let deadline = Instant::now() + REQUEST_DEADLINE + WRITE_TIMEOUT;
    let conn = http.serve_connection(TokioIo::new(&mut stream), TowerToHyperService::new(app));
    if let Ok(Err(e)) = timeout_at(deadline, conn).await {
        if e.is_parse_too_large() {
            linger(&mut stream, deadline).await;
        }
    }
}

/// After a refused request: closing with the rest of it unread would reset the connection and
/// could destroy the `431` before the client reads it, so read what is left, within bounds.
async fn linger(stream: &mut TcpStream, deadline: Instant) {
    let _ = timeout_at(deadline, stream.shutdown()).await;
    let mut chunk = [0u8; 4096];
    let mut left = LINGER_BYTES;
    while left > 0 {
        match timeout_at(deadline, stream.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => left = left.saturating_sub(n),
            _ => break,
        }
    }
}
