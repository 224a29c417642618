//! A lab served over the network: the engine's Events go to every connected dashboard, and,
//! only when allowed, their Commands come back.
//!
//! The engine never waits for the network: [`Server::publish`] hands an Event to the server's
//! thread without blocking (a full queue drops it, counted). There one task, the hub, keeps
//! what a newcomer needs (the workloads and their knobs, the last Frames), serialises each
//! Event once and broadcasts its bytes; each client's task writes them out at its own pace. A
//! client that falls behind skips Frames (the broadcast's bound), and one that stops reading
//! for [`WRITE_DEADLINE`] is dropped, so neither slows the engine nor makes the server grow.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{broadcast, mpsc, oneshot, Semaphore};
use tokio_util::codec::{FramedRead, FramedWrite, LengthDelimitedCodec};

use super::protocol::{self, ToClient, ToServer, Welcome};
use crate::engine::{Command, Event};
use crate::knobs::Knobs;
use crate::model::Frame;
use crate::scenario::WorkloadDecl;

/// Messages a client may fall behind by before it skips Frames.
const BACKLOG: usize = 32;
/// Events the engine may hand over before the hub takes them (it takes them at once unless
/// the machine is starved; past this they are dropped, counted, never waited for).
const QUEUE: usize = 256;
/// A client that has not taken a message within this is dropped.
pub const WRITE_DEADLINE: Duration = Duration::from_secs(10);
/// The Frames a newcomer gets at once, so its charts start full: a minute at 4 Hz.
const RECENT_FRAMES: usize = 240;
/// The clients served at once, unless told otherwise.
pub const DEFAULT_MAX_CLIENTS: usize = 16;

/// How a lab is served.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub addr: SocketAddr,
    /// Every client must present it; required off loopback (see [`super::token_for`]).
    pub token: Option<String>,
    /// Whether clients' commands are carried out.
    pub allow_control: bool,
    pub max_clients: usize,
    /// A client that takes nothing for this long is dropped ([`WRITE_DEADLINE`]).
    pub write_deadline: Duration,
    /// A line on stderr per client that comes and goes (a headless `serve`; never under the
    /// dashboard, whose terminal it would garble).
    pub log: bool,
}

/// What the server counts, for its tests and its log.
#[derive(Debug, Default)]
pub struct ServeStats {
    /// Clients welcomed, refused (bad hello, token, version, too many) and dropped (stalled).
    pub welcomed: AtomicU64,
    pub refused: AtomicU64,
    pub dropped: AtomicU64,
    /// Messages clients skipped by falling behind, summed over clients.
    pub skipped: AtomicU64,
    /// Events the engine handed over that the hub had no room for.
    pub lost: AtomicU64,
    /// Clients connected now.
    pub connected: AtomicU64,
}

/// A running server; it stops, closing every connection, when dropped.
pub struct Server {
    addr: SocketAddr,
    events: mpsc::Sender<Event>,
    stats: Arc<ServeStats>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// What every client's task shares.
struct Shared {
    config: ServeConfig,
    welcome: Welcome,
    commands: std::sync::Mutex<std::sync::mpsc::Sender<Command>>,
    slots: Arc<Semaphore>,
    join: mpsc::Sender<oneshot::Sender<Joined>>,
    stats: Arc<ServeStats>,
}

/// What a newcomer gets: what happened before it came, then the stream.
struct Joined {
    snapshot: Vec<Bytes>,
    stream: broadcast::Receiver<Bytes>,
}

impl Server {
    /// Binds now (a busy port fails before any work) and serves on a thread of its own.
    /// `welcome` says who serves (its `control` is set per client); `commands` is where the
    /// engine takes commands.
    pub fn start(
        config: ServeConfig,
        welcome: Welcome,
        commands: std::sync::mpsc::Sender<Command>,
    ) -> Result<Server> {
        let listener = std::net::TcpListener::bind(config.addr)
            .with_context(|| format!("cannot serve on {}", config.addr))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the server's runtime")?;
        let (events, events_rx) = mpsc::channel(QUEUE);
        let (join, join_rx) = mpsc::channel(16);
        let (stop, stop_rx) = oneshot::channel();
        let stats = Arc::new(ServeStats::default());
        let shared = Arc::new(Shared {
            slots: Arc::new(Semaphore::new(config.max_clients.max(1))),
            config,
            welcome,
            commands: std::sync::Mutex::new(commands),
            join,
            stats: stats.clone(),
        });
        let thread = std::thread::Builder::new()
            .name("schedlab-serve".into())
            .spawn(move || {
                rt.block_on(async move {
                    let listener = match TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => return crate::errln!("schedlab: serving: {e}"),
                    };
                    tokio::spawn(hub(events_rx, join_rx));
                    tokio::select! {
                        _ = accept(listener, shared) => {}
                        _ = stop_rx => {}
                    }
                });
                // Dropping the runtime ends every client's task and closes its socket.
            })
            .context("starting the server's thread")?;
        Ok(Server {
            addr,
            events,
            stats,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Where it listens (the real port when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// What it counted so far.
    pub fn stats(&self) -> &ServeStats {
        &self.stats
    }

    /// Hands an Event to the clients, never waiting: the engine calls it on its own thread.
    /// Raw Samples stay here (a recording's, not a dashboard's).
    pub fn publish(&self, ev: &Event) {
        if matches!(ev, Event::Sample(_)) {
            return;
        }
        if self.events.try_send(ev.clone()).is_err() {
            self.stats.lost.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What a newcomer needs to show the lab as it is: its workloads, their knobs, a replay's
/// position, and the last Frames.
#[derive(Default)]
struct State {
    workloads: BTreeMap<u32, (WorkloadDecl, Option<Knobs>)>,
    replay: Option<crate::engine::ReplayStatus>,
    recent: VecDeque<Frame>,
}

impl State {
    fn take(&mut self, ev: &Event) {
        match ev {
            Event::Added(id, decl) => {
                self.workloads.insert(*id, (decl.clone(), None));
            }
            Event::Removed(id) => {
                self.workloads.remove(id);
            }
            Event::Knobs(id, k) => {
                if let Some(w) = self.workloads.get_mut(id) {
                    w.1 = Some(k.clone());
                }
            }
            Event::Replay(r) => self.replay = Some(*r),
            Event::Frame(f) => {
                if self.recent.len() == RECENT_FRAMES {
                    self.recent.pop_front();
                }
                self.recent.push_back(f.clone());
            }
            Event::History(frames) => {
                let from = frames.len().saturating_sub(RECENT_FRAMES);
                self.recent = frames[from..].iter().cloned().collect();
            }
            Event::Sample(_) | Event::Notice(_) | Event::Error(_) => {}
        }
    }

    fn snapshot(&self) -> Vec<Bytes> {
        let mut out = Vec::new();
        let mut push = |ev: Event| out.push(protocol::encode(&ToClient::Event(ev)));
        if let Some(r) = self.replay {
            push(Event::Replay(r));
        }
        for (id, (decl, knobs)) in &self.workloads {
            push(Event::Added(*id, decl.clone()));
            if let Some(k) = knobs {
                push(Event::Knobs(*id, k.clone()));
            }
        }
        if !self.recent.is_empty() {
            push(Event::History(self.recent.iter().cloned().collect()));
        }
        out
    }
}

/// Takes the engine's Events in order, keeps the State, and broadcasts each once serialised;
/// answers a newcomer with the State and a receiver, between two Events, so it misses none.
async fn hub(
    mut events: mpsc::Receiver<Event>,
    mut joins: mpsc::Receiver<oneshot::Sender<Joined>>,
) {
    let (tx, _) = broadcast::channel(BACKLOG);
    let mut state = State::default();
    loop {
        tokio::select! {
            ev = events.recv() => {
                let Some(ev) = ev else { return };
                state.take(&ev);
                // No receiver: nobody watches; that is fine.
                let _ = tx.send(protocol::encode(&ToClient::Event(ev)));
            }
            join = joins.recv() => {
                let Some(reply) = join else { return };
                let _ = reply.send(Joined { snapshot: state.snapshot(), stream: tx.subscribe() });
            }
        }
    }
}

async fn accept(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            // Out of file descriptors and the like: wait a little rather than spin.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(client(stream, peer, shared.clone()));
    }
}

/// One client from its hello to its end.
async fn client(stream: TcpStream, peer: SocketAddr, shared: Arc<Shared>) {
    let stats = &shared.stats;
    let (rd, wr) = stream.into_split();
    let mut reader = FramedRead::new(rd, protocol::codec(protocol::MAX_FROM_CLIENT));
    let mut writer = FramedWrite::new(wr, protocol::codec(protocol::MAX_FROM_SERVER));
    let Ok(_slot) = shared.slots.clone().try_acquire_owned() else {
        let why = format!(
            "too many clients: this lab serves at most {}",
            shared.config.max_clients
        );
        return refuse(&mut writer, peer, &shared, why).await;
    };
    let hello = match tokio::time::timeout(protocol::HELLO_DEADLINE, reader.next()).await {
        Err(_) => Err(format!(
            "no hello within {} s",
            protocol::HELLO_DEADLINE.as_secs()
        )),
        Ok(None) => return,
        Ok(Some(Err(e))) => Err(format!("not a schedlab hello ({e})")),
        Ok(Some(Ok(bytes))) => protocol::check_hello(&bytes),
    };
    let hello = match hello {
        Ok(h) => h,
        Err(why) => return refuse(&mut writer, peer, &shared, why).await,
    };
    if let Some(want) = &shared.config.token {
        if !protocol::token_matches(want, hello.token.as_deref()) {
            let why = if hello.token.is_some() {
                "wrong token"
            } else {
                "this lab needs a token (--token-file or SCHEDLAB_TOKEN)"
            };
            return refuse(&mut writer, peer, &shared, why.into()).await;
        }
    }
    let control = shared.config.allow_control;
    let deadline = shared.config.write_deadline;
    let welcome = Welcome {
        control,
        ..shared.welcome.clone()
    };
    let (reply, joined) = oneshot::channel();
    if shared.join.send(reply).await.is_err() {
        return;
    }
    let Ok(Joined {
        snapshot,
        mut stream,
    }) = joined.await
    else {
        return;
    };
    stats.welcomed.fetch_add(1, Ordering::Relaxed);
    stats.connected.fetch_add(1, Ordering::Relaxed);
    log(
        &shared,
        format!(
            "{peer} connected ({})",
            if control { "control" } else { "read-only" }
        ),
    );
    let mut out = vec![protocol::encode(&ToClient::Welcome(welcome))];
    out.extend(snapshot);
    let mut why = "left".to_owned();
    'serve: {
        for b in out {
            if let Err(e) = send(&mut writer, b, deadline).await {
                why = e;
                break 'serve;
            }
        }
        loop {
            tokio::select! {
                msg = stream.recv() => match msg {
                    Ok(b) => if let Err(e) = send(&mut writer, b, deadline).await {
                        why = e;
                        break;
                    },
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        stats.skipped.fetch_add(n, Ordering::Relaxed);
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                },
                msg = reader.next() => match msg {
                    Some(Ok(bytes)) => match serde_json::from_slice::<ToServer>(&bytes) {
                        Ok(ToServer::Command(cmd)) => {
                            if let Some(no) = refusal(&cmd, control) {
                                let b = protocol::encode(&ToClient::Event(Event::Error(no)));
                                if let Err(e) = send(&mut writer, b, deadline).await {
                                    why = e;
                                    break;
                                }
                            } else {
                                let commands = shared.commands.lock();
                                let _ = commands.unwrap_or_else(|e| e.into_inner()).send(cmd);
                            }
                        }
                        Err(_) => {
                            why = "sent something that is not a command: dropped".into();
                            break;
                        }
                    },
                    Some(Err(e)) => {
                        why = format!("dropped: {e}");
                        break;
                    }
                    None => break,
                },
            }
        }
    }
    if why.contains("stalled") {
        stats.dropped.fetch_add(1, Ordering::Relaxed);
    }
    stats.connected.fetch_sub(1, Ordering::Relaxed);
    log(&shared, format!("{peer} {why}"));
}

/// Why a client's command is not carried out; None when it is.
fn refusal(cmd: &Command, control: bool) -> Option<String> {
    if !control {
        return Some("this lab is read-only: it was served without --allow-control".to_owned());
    }
    matches!(cmd, Command::Quit)
        .then(|| "a remote dashboard does not stop the lab; quitting disconnects".to_owned())
}

/// Writes one message, or says why the client is dropped.
async fn send(
    writer: &mut FramedWrite<tokio::net::tcp::OwnedWriteHalf, LengthDelimitedCodec>,
    b: Bytes,
    deadline: Duration,
) -> Result<(), String> {
    match tokio::time::timeout(deadline, writer.send(b)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("gone ({e})")),
        Err(_) => Err(format!(
            "stalled: took nothing for {:.1} s, dropped",
            deadline.as_secs_f64()
        )),
    }
}

/// Tells a client why it is refused, briefly, and closes.
async fn refuse(
    writer: &mut FramedWrite<tokio::net::tcp::OwnedWriteHalf, LengthDelimitedCodec>,
    peer: SocketAddr,
    shared: &Shared,
    why: String,
) {
    shared.stats.refused.fetch_add(1, Ordering::Relaxed);
    log(shared, format!("{peer} refused: {why}"));
    let b = protocol::encode(&ToClient::Refused(why));
    let _ = tokio::time::timeout(Duration::from_secs(1), writer.send(b)).await;
}

fn log(shared: &Shared, line: String) {
    if shared.config.log {
        crate::errln!("schedlab serve: {line}");
    }
}
