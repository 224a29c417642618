//! A lab served over the network (`schedlab serve`, `--serve`): what a remote dashboard
//! receives is what the lab derived, Frame by Frame and field by field, across two network
//! namespaces joined by a veth pair, as two hosts; and hostile or careless clients (a wrong
//! token, another protocol version, garbage, a 1 GB length prefix, one that never reads, a
//! hundred at once) are refused or dropped while the lab keeps its sampling grid.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use common::netns::{self, TwoHosts};
use schedlab::engine::lab::Lab;
use schedlab::engine::{Command, Event};
use schedlab::model::Frame;
use schedlab::scenario::Scenario;
use schedlab::serve::protocol::{self, Hello, ToClient, ToServer};
use schedlab::serve::{Remote, ServeConfig, Server, Welcome};

const INTERVAL: Duration = Duration::from_millis(250);
const TOKEN: &str = "0123456789abcdef0123456789abcdef";

static MACHINE: Mutex<()> = Mutex::new(());

fn config(addr: SocketAddr, token: Option<&str>, control: bool) -> ServeConfig {
    ServeConfig {
        addr,
        token: token.map(Into::into),
        allow_control: control,
        max_clients: 16,
        write_deadline: Duration::from_secs(1),
        log: false,
    }
}

/// A lab with one CPU hog, ticked on its grid on a thread of its own; every Frame is served
/// and kept, until `stop`.
struct ServedLab {
    server: Arc<Server>,
    frames: Arc<Mutex<Vec<Frame>>>,
    commands: mpsc::Receiver<Command>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServedLab {
    fn start(config: ServeConfig) -> ServedLab {
        let (tx, commands) = mpsc::channel();
        let welcome = schedlab::serve::welcome_here("serve-test", 250);
        let server = Arc::new(Server::start(config, welcome, tx).expect("serves"));
        let frames = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (server, frames, stop) = (server.clone(), frames.clone(), stop.clone());
            std::thread::spawn(move || {
                let sc = Scenario::from_toml(
                    "[[workload]]\nname = \"hog\"\nkind = \"cpu-hog\"\nthreads = 1\n",
                    "serve-test",
                )
                .expect("parses");
                let mut lab = Lab::new(INTERVAL).expect("lab");
                for w in sc.workloads {
                    let decl = common::real_binary(&w);
                    let id = lab.add(decl.clone()).expect("starts");
                    server.publish(&Event::Added(id, decl));
                }
                let mut next = Instant::now();
                while !stop.load(Ordering::SeqCst) {
                    next += INTERVAL;
                    std::thread::sleep(next.saturating_duration_since(Instant::now()));
                    let f = lab.tick();
                    server.publish(&Event::Frame(f.clone()));
                    frames.lock().unwrap().push(f);
                }
            })
        };
        ServedLab {
            server,
            frames,
            commands,
            stop,
            thread: Some(thread),
        }
    }

    fn addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    fn frames(&self) -> Vec<Frame> {
        self.frames.lock().unwrap().clone()
    }
}

impl Drop for ServedLab {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Watches `addr` through the real client until `n` Frames came (or 30 s passed).
fn watch(addr: &str, token: Option<&str>, n: usize) -> (Welcome, Vec<Event>) {
    let remote = Remote::connect(addr, token.map(Into::into)).expect("welcomed");
    let welcome = remote.welcome.clone();
    let (_keep, rx) = mpsc::channel();
    let mut events = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut frames = 0;
    remote.run(rx, |e| {
        frames += usize::from(matches!(e, Event::Frame(_)));
        events.push(e);
        frames < n && Instant::now() < deadline
    });
    (welcome, events)
}

/// A raw connection: sends `bytes`, returns the first message back (or why there is none).
fn first_answer(addr: SocketAddr, bytes: &[u8]) -> Result<ToClient, String> {
    let mut s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(bytes).map_err(|e| e.to_string())?;
    let mut len = [0u8; 4];
    s.read_exact(&mut len)
        .map_err(|e| format!("no answer: {e}"))?;
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).map_err(|e| e.to_string())?;
    serde_json::from_slice(&body).map_err(|e| e.to_string())
}

fn framed(msg: &[u8]) -> Vec<u8> {
    let mut out = (msg.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(msg);
    out
}

fn refusal(r: Result<ToClient, String>) -> String {
    match r {
        Ok(ToClient::Refused(why)) => why,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_served_lab_watched_from_another_host_shows_the_same_frames() {
    let _m = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    let hosts = TwoHosts::create("serve", 201);
    // The server's socket lives in host a, the client's in host b: across the veth pair.
    let lab = {
        let (tx, rx) = mpsc::channel();
        let a = hosts.a.clone();
        let ip = hosts.server_ip.clone();
        std::thread::spawn(move || {
            netns::enter(&a);
            let addr: SocketAddr = format!("{ip}:0").parse().unwrap();
            tx.send(ServedLab::start(config(addr, Some(TOKEN), false)))
                .unwrap();
        });
        rx.recv().expect("the lab starts")
    };
    let addr = lab.addr().to_string();
    let b = hosts.b.clone();
    let (welcome, events) = std::thread::spawn({
        let addr = addr.clone();
        move || {
            netns::enter(&b);
            // On loopback in host b there is nothing: the stream really crosses.
            let lo = format!("127.0.0.1:{}", addr.rsplit(':').next().unwrap());
            assert!(Remote::connect(&lo, Some(TOKEN.into())).is_err());
            // Without the token, or with a wrong one: refused, in words.
            let e = Remote::connect(&addr, None).err().unwrap().to_string();
            assert!(e.contains("needs a token"), "{e}");
            let e = Remote::connect(&addr, Some("f".repeat(32)))
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains("wrong token"), "{e}");
            watch(&addr, Some(TOKEN), 12)
        }
    })
    .join()
    .expect("the client thread");
    assert!(!welcome.control, "served without --allow-control");
    assert_eq!(welcome.scenario, "serve-test");
    let served = lab.frames();
    drop(lab);
    drop(hosts);
    // It learnt the workload, then every Frame since it came, each equal to the lab's own.
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Added(_, d) if d.name == "hog")),
        "{:?}",
        events.first()
    );
    let got: Vec<&Frame> = events
        .iter()
        .flat_map(|e| match e {
            Event::Frame(f) => vec![f],
            Event::History(fs) => fs.iter().collect(),
            _ => vec![],
        })
        .collect();
    assert!(got.len() >= 12, "{} Frames", got.len());
    for f in &got {
        let mine = served
            .iter()
            .find(|m| m.t == f.t)
            .unwrap_or_else(|| panic!("a Frame at {:.2} s the lab never made", f.t));
        assert!(*f == mine, "the Frame at {:.2} s differs: {:?}", f.t, {
            let (a, b) = (format!("{f:?}"), format!("{mine:?}"));
            let at = a
                .bytes()
                .zip(b.bytes())
                .position(|(x, y)| x != y)
                .unwrap_or(0);
            let from = at.saturating_sub(200);
            (
                a[from..(at + 60).min(a.len())].to_owned(),
                b[from..(at + 60).min(b.len())].to_owned(),
            )
        });
    }
    let hog = got
        .last()
        .unwrap()
        .workloads
        .iter()
        .find(|w| w.name == "hog");
    assert!(hog.is_some_and(|w| w.cpu_received > 0.5), "{hog:?}");
}

#[test]
fn control_needs_allow_control_and_reaches_the_engine_with_it() {
    let _m = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    for allowed in [false, true] {
        let lab = ServedLab::start(config("127.0.0.1:0".parse().unwrap(), None, allowed));
        let remote = Remote::connect(&lab.addr().to_string(), None).expect("welcomed");
        assert_eq!(remote.welcome.control, allowed);
        // The raw protocol too: a command from a read-only client is answered, not obeyed.
        let mut s = TcpStream::connect(lab.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(&framed(&protocol::encode(&Hello::new(None))))
            .unwrap();
        s.write_all(&framed(&protocol::encode(&ToServer::Command(
            Command::Stop(1),
        ))))
        .unwrap();
        let mut saw_error = false;
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && !allowed {
            let mut len = [0u8; 4];
            s.read_exact(&mut len).unwrap();
            let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
            s.read_exact(&mut body).unwrap();
            if let Ok(ToClient::Event(Event::Error(why))) = serde_json::from_slice(&body) {
                assert!(why.contains("--allow-control"), "{why}");
                saw_error = true;
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(500));
        let got: Vec<Command> = lab.commands.try_iter().collect();
        if allowed {
            assert_eq!(got, vec![Command::Stop(1)]);
        } else {
            assert!(saw_error, "no refusal came back");
            assert!(got.is_empty(), "{got:?}");
        }
    }
}

#[test]
fn hostile_clients_are_refused_or_dropped_and_the_lab_keeps_its_grid() {
    let _m = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    let lab = ServedLab::start(config("127.0.0.1:0".parse().unwrap(), Some(TOKEN), false));
    let addr = lab.addr();
    std::thread::sleep(Duration::from_secs(2));
    let rss_before = rss_kb();
    let from = lab.frames().len();

    // Another protocol version: refused with both versions named.
    let other = br#"{"magic":"schedlab","protocol":99,"version":"9.0.0"}"#;
    let why = refusal(first_answer(addr, &framed(other)));
    assert!(why.contains("protocol 1") && why.contains("99"), "{why}");
    // Garbage (an HTTP request: its first bytes read as a 1.2 GB length) and a 1 GB prefix:
    // refused on sight, nothing of that size buffered.
    let why = refusal(first_answer(addr, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
    assert!(why.contains("not a schedlab hello"), "{why}");
    let why = refusal(first_answer(addr, &[0x40, 0, 0, 0, b'{']));
    assert!(why.contains("not a schedlab hello"), "{why}");
    // A well-formed hello of something else.
    let why = refusal(first_answer(addr, &framed(br#"{"hello":"world"}"#)));
    assert!(why.contains("schedlab tui --connect"), "{why}");
    // Wrong token.
    let wrong = protocol::encode(&Hello::new(Some("x".repeat(32))));
    assert_eq!(refusal(first_answer(addr, &framed(&wrong))), "wrong token");

    // One that says hello and never reads: its socket fills, and it is dropped.
    let mut stalled = TcpStream::connect(addr).unwrap();
    let hello = protocol::encode(&Hello::new(Some(TOKEN.into())));
    stalled.write_all(&framed(&hello)).unwrap();
    // Big events fill its buffers sooner than Frames would.
    let big = "x".repeat(256 * 1024);
    for _ in 0..64 {
        lab.server.publish(&Event::Notice(big.clone()));
        std::thread::sleep(Duration::from_millis(20));
    }
    let dropped =
        common::wait::until(
            Duration::from_secs(20),
            Duration::from_millis(100),
            || match lab.server.stats().dropped.load(Ordering::Relaxed) {
                0 => Err(0),
                n => Ok(n),
            },
        );
    assert_eq!(dropped, Ok(1), "the client that never reads is dropped");
    drop(stalled);

    // A hundred at once: 16 served, the others told why not.
    let conns: Vec<_> = (0..100)
        .map(|_| {
            std::thread::spawn(move || {
                let hello = protocol::encode(&Hello::new(Some(TOKEN.into())));
                let mut s = TcpStream::connect(addr).ok()?;
                s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
                s.write_all(&framed(&hello)).ok()?;
                let mut len = [0u8; 4];
                s.read_exact(&mut len).ok()?;
                let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
                s.read_exact(&mut body).ok()?;
                let answer: ToClient = serde_json::from_slice(&body).ok()?;
                // Held open for a moment, so that they are all there at once.
                std::thread::sleep(Duration::from_secs(2));
                Some((answer, s))
            })
        })
        .collect();
    let answers: Vec<ToClient> = conns
        .into_iter()
        .filter_map(|t| t.join().unwrap().map(|(a, _)| a))
        .collect();
    let welcomed = answers
        .iter()
        .filter(|a| matches!(a, ToClient::Welcome(_)))
        .count();
    let refused: Vec<&String> = answers
        .iter()
        .filter_map(|a| match a {
            ToClient::Refused(w) => Some(w),
            _ => None,
        })
        .collect();
    assert_eq!(answers.len(), 100, "every client got an answer");
    assert!((1..=16).contains(&welcomed), "{welcomed} welcomed");
    assert!(
        refused.iter().all(|w| w.contains("too many clients")),
        "{refused:?}"
    );

    // A well-behaved client is still served, every Frame as the lab made it.
    let (_, events) = watch(&addr.to_string(), Some(TOKEN), 4);
    assert!(events.iter().any(|e| matches!(e, Event::Frame(_))));

    // Meanwhile the lab sampled on its grid: no sample missed, none late by more than an
    // interval, and the server did not grow without bound.
    let frames = lab.frames();
    let during = &frames[from..];
    assert!(during.len() >= 12, "{} Frames", during.len());
    for f in during {
        assert_eq!(f.missed, 0, "a sample was missed at {:.2} s", f.t);
        assert!(
            f.late_ms < 250.0,
            "a sample {:.0} ms late at {:.2} s",
            f.late_ms,
            f.t
        );
    }
    let grown = rss_kb().saturating_sub(rss_before);
    assert!(grown < 64 * 1024, "the process grew by {grown} kB");
    assert_eq!(lab.server.stats().lost.load(Ordering::Relaxed), 0);
}

/// The paths at which two JSON documents differ, with both values.
#[allow(dead_code)]
fn differences(a: &serde_json::Value, b: &serde_json::Value, at: &str) -> Vec<String> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter()
                .flat_map(|k| {
                    let (va, vb) = (x.get(k), y.get(k));
                    match (va, vb) {
                        (Some(va), Some(vb)) => differences(va, vb, &format!("{at}.{k}")),
                        _ => vec![format!("{at}.{k}: {va:?} / {vb:?}")],
                    }
                })
                .collect()
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .flat_map(|(i, (va, vb))| differences(va, vb, &format!("{at}[{i}]")))
            .collect(),
        _ if a == b => Vec::new(),
        _ => vec![format!("{at}: {a} / {b}")],
    }
}

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}
