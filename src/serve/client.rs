//! A served lab watched from here: the connection, its hello, and the loop that turns the
//! server's messages into Events for a frontend and the frontend's Commands into messages,
//! the same contract as the local engine's ([`crate::engine::thread`]).

use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use futures_util::{SinkExt, StreamExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio_util::codec::{FramedRead, FramedWrite, LengthDelimitedCodec};

use super::protocol::{self, Hello, ToClient, ToServer, Welcome};
use crate::engine::{Command, Event};

/// How long connecting and the hello may take.
const CONNECT_DEADLINE: Duration = Duration::from_secs(10);
/// A read-only lab's refusal is said at most this often (a finished workload's restarts
/// would otherwise repeat it at every run).
const REFUSAL_EVERY: Duration = Duration::from_secs(5);

/// A served lab, connected and welcomed.
pub struct Remote {
    /// The address as the user gave it.
    pub addr: String,
    pub welcome: Welcome,
    rt: tokio::runtime::Runtime,
    reader: FramedRead<OwnedReadHalf, LengthDelimitedCodec>,
    writer: FramedWrite<OwnedWriteHalf, LengthDelimitedCodec>,
}

impl Remote {
    /// Connects to `addr` (HOST:PORT, or a bare port on loopback) and says hello; a refusal
    /// comes back as the server's reason, in one line.
    pub fn connect(addr: &str, token: Option<String>) -> Result<Remote> {
        let target = crate::sys::kernel::net::parse_addr(addr)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the client's runtime")?;
        let (reader, writer, welcome) = rt.block_on(async {
            let stream = tokio::time::timeout(CONNECT_DEADLINE, TcpStream::connect(target))
                .await
                .map_err(|_| anyhow!("no answer from {addr} within 10 s"))?
                .with_context(|| format!("cannot connect to {addr}"))?;
            let _ = stream.set_nodelay(true);
            let (rd, wr) = stream.into_split();
            let mut reader = FramedRead::new(rd, protocol::codec(protocol::MAX_FROM_SERVER));
            let mut writer = FramedWrite::new(wr, protocol::codec(protocol::MAX_FROM_CLIENT));
            writer
                .send(protocol::encode(&Hello::new(token)))
                .await
                .with_context(|| format!("cannot say hello to {addr}"))?;
            let first = tokio::time::timeout(CONNECT_DEADLINE, reader.next())
                .await
                .map_err(|_| anyhow!("{addr} did not answer the hello within 10 s"))?;
            let bytes = match first {
                Some(Ok(b)) => b,
                Some(Err(e)) => bail!("{addr} is not a schedlab lab ({e})"),
                None => bail!("{addr} closed the connection without a word"),
            };
            match serde_json::from_slice::<ToClient>(&bytes) {
                Ok(ToClient::Welcome(w)) => Ok((reader, writer, w)),
                Ok(ToClient::Refused(why)) => bail!("{addr} refused the connection: {why}"),
                _ => bail!(
                    "{addr} is not a schedlab lab of this version (schedlab {})",
                    env!("CARGO_PKG_VERSION")
                ),
            }
        })?;
        Ok(Remote {
            addr: addr.to_owned(),
            welcome,
            rt,
            reader,
            writer,
        })
    }

    /// One line naming the lab: its host, kernel and scenario.
    pub fn describe(&self) -> String {
        let w = &self.welcome;
        format!(
            "{} on {} ({}, {} CPUs{})",
            w.scenario,
            w.host,
            w.kernel,
            w.cpus,
            if w.control { "" } else { ", read-only" }
        )
    }

    /// Hands every Event the lab sends to `sink` and sends it the `commands` it allows, until
    /// `Command::Quit`, until `commands` has no sender left or until `sink` returns false.
    /// A lost connection is said once; the frontend keeps what it has until it quits.
    pub fn run(
        self,
        commands: std::sync::mpsc::Receiver<Command>,
        mut sink: impl FnMut(Event) -> bool,
    ) {
        let Remote {
            addr,
            welcome,
            rt,
            mut reader,
            mut writer,
        } = self;
        // The frontend's commands come on a std channel: a thread carries them over.
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Command>(64);
        let _ = std::thread::Builder::new()
            .name("schedlab-remote-commands".into())
            .spawn(move || {
                while let Ok(cmd) = commands.recv() {
                    let quit = cmd == Command::Quit;
                    if tx.blocking_send(cmd).is_err() || quit {
                        break;
                    }
                }
            });
        rt.block_on(async move {
            let mut connected = true;
            let mut refused_at: Option<Instant> = None;
            loop {
                tokio::select! {
                    msg = reader.next(), if connected => {
                        let ev = match msg {
                            Some(Ok(bytes)) => match serde_json::from_slice::<ToClient>(&bytes) {
                                Ok(ToClient::Event(ev)) => Some(ev),
                                Ok(ToClient::Refused(why)) => {
                                    connected = false;
                                    Some(Event::Error(format!("{addr}: {why}")))
                                }
                                Ok(ToClient::Welcome(_)) => None,
                                Err(e) => {
                                    connected = false;
                                    Some(Event::Error(format!("{addr} sent garbage ({e}); disconnected")))
                                }
                            },
                            Some(Err(e)) => {
                                connected = false;
                                Some(Event::Error(format!("connection to {addr} lost: {e}")))
                            }
                            None => {
                                connected = false;
                                Some(Event::Error(format!("{addr} closed the connection (the lab ended)")))
                            }
                        };
                        if let Some(ev) = ev {
                            if !sink(ev) {
                                return;
                            }
                        }
                    }
                    cmd = rx.recv() => {
                        let Some(cmd) = cmd else { return };
                        if cmd == Command::Quit {
                            return;
                        }
                        if !welcome.control {
                            if refused_at.is_none_or(|t| t.elapsed() >= REFUSAL_EVERY) {
                                refused_at = Some(Instant::now());
                                let why = format!(
                                    "{addr} is read-only: it was served without --allow-control"
                                );
                                if !sink(Event::Error(why)) {
                                    return;
                                }
                            }
                            continue;
                        }
                        if connected {
                            let msg = protocol::encode(&ToServer::Command(cmd));
                            if let Err(e) = writer.send(msg).await {
                                connected = false;
                                if !sink(Event::Error(format!("connection to {addr} lost: {e}"))) {
                                    return;
                                }
                            }
                        }
                    }
                }
            }
        });
    }
}
