//! The chat server (chat_s): serves runs one after another. For each data connection a receive
//! thread reads a message and wakes the same connection's send thread through the room's SysV
//! semaphore set (one semaphore number per user); the send thread writes the message to the
//! other 19 users of the room.
//!
//! Unlike the original it defends itself: start messages are checked against what the machine
//! can hold, control connections that say nothing are timed out side by side (so a burst of
//! silent connections cannot queue an honest client for hours), and a run in which nothing
//! moves for `timeout`, or whose client vanishes, is abandoned: every thread is woken and
//! joined, every socket closed and every semaphore set removed before the next run.

use std::cell::UnsafeCell;
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

use super::limits;
use super::net;
use super::protocol::{
    RunSize, StartMessage, END_BYTE, MSG_SIZE, START_BYTE, START_LEN, USERS_PER_ROOM,
};
use super::run_flags::{FinishGuard, RunFlags};
use super::slots::SlotPool;
use crate::sys::kernel::sysv::SemSet;
use crate::sys::shared::counters::{CounterRegion, CounterSlot};

/// Control connections waiting to send their start message at once; beyond this the oldest
/// is closed, so a burst of silent connections costs a bounded number of descriptors.
const MAX_PENDING: usize = 64;
/// How often the main thread looks up from a run to check for failures and stalls.
const TICK: Duration = Duration::from_millis(100);

pub(crate) struct ServerConfig {
    /// Exit after this many completed runs (None: serve forever, like chat_s).
    pub runs: Option<u64>,
    /// Abandon a run, or a half-sent start message, after this long without progress.
    pub timeout: Duration,
}

/// Binds the listener: SO_REUSEADDR (std sets it) and a backlog as deep as the kernel allows,
/// since a client connects up to thousands of users back to back.
pub fn listen(addr: SocketAddr) -> Result<TcpListener> {
    let listener = TcpListener::bind(addr).map_err(|err| {
        let hint = match err.kind() {
            ErrorKind::AddrInUse => " (another chat server may be running there)",
            ErrorKind::AddrNotAvailable => " (no interface of this machine has that address)",
            ErrorKind::PermissionDenied => " (ports below 1024 need root)",
            _ => "",
        };
        anyhow!("cannot listen on {addr}: {err}{hint}")
    })?;
    let _ = nix::sys::socket::listen(&listener, nix::sys::socket::Backlog::new(4096)?);
    listener
        .set_nonblocking(true)
        .context("making the listener non-blocking")?;
    Ok(listener)
}

/// Serves runs on `listener` until `cfg.runs` runs completed (or forever).
pub fn serve(listener: TcpListener, cfg: &ServerConfig) -> Result<()> {
    let mut pool = SlotPool::new(CounterRegion::for_workload()?);
    let mut completed = 0u64;
    let mut pending: Vec<Pending> = Vec::new();
    loop {
        if cfg.runs.is_some_and(|n| completed >= n) {
            return Ok(());
        }
        let (control, size, early) = next_start(&listener, &mut pending, cfg.timeout)?;
        crate::outln!(
            "SRV: client connected, rooms = {} messages = {}",
            size.rooms,
            size.messages
        );
        flush();
        match run(&listener, control, early, size, cfg.timeout, &mut pool) {
            Ok((received, sent)) => {
                completed += 1;
                crate::outln!(
                    "SRV({completed}) {received} messages received, {sent} messages sent"
                );
                flush();
                if received != size.sent() {
                    crate::errln!(
                        "SRV({completed}): expected {} messages, received {received}",
                        size.sent()
                    );
                }
            }
            Err(why) => {
                crate::errln!(
                    "SRV: run abandoned: {why}; its threads, sockets and semaphores are freed"
                );
            }
        }
    }
}

fn flush() {
    let _ = std::io::stdout().flush();
}

/// A control connection that has not yet sent its whole start message.
struct Pending {
    stream: TcpStream,
    buf: [u8; START_LEN],
    got: usize,
    deadline: Instant,
}

/// Accepts control connections and reads their start messages side by side, until one asks
/// for a run this machine can hold.
fn next_start(
    listener: &TcpListener,
    pending: &mut Vec<Pending>,
    timeout: Duration,
) -> Result<(TcpStream, RunSize, Vec<TcpStream>)> {
    loop {
        let now = Instant::now();
        // A millisecond past the first deadline, so that it has passed when poll returns.
        let wait = pending
            .iter()
            .map(|p| p.deadline.saturating_duration_since(now) + Duration::from_millis(1))
            .min();
        let fds: Vec<BorrowedFd> = std::iter::once(listener.as_fd())
            .chain(pending.iter().map(|p| p.stream.as_fd()))
            .collect();
        let ready = match net::readable(&fds, wait) {
            Ok(ready) => ready,
            Err(err) if err.kind() == ErrorKind::Interrupted => continue,
            Err(err) => return Err(err).context("poll on the listener"),
        };
        let now = Instant::now();
        // The waiting connections, oldest first (their indices match ready[1..]).
        let mut chosen = None;
        let mut i = 0;
        for &readable in &ready[1..] {
            let verdict = if chosen.is_some() {
                Verdict::Keep
            } else if !readable {
                if now >= pending[i].deadline {
                    let p = &pending[i];
                    crate::errln!(
                        "SRV: control connection from {} sent {} of {START_LEN} bytes of the start message, then nothing for {timeout:?}: closed",
                        peer(&p.stream), p.got
                    );
                    Verdict::Drop
                } else {
                    Verdict::Keep
                }
            } else {
                consider(&mut pending[i], now + timeout)
            };
            match verdict {
                Verdict::Keep => i += 1,
                Verdict::Drop => {
                    pending.remove(i);
                }
                Verdict::Chosen(size) => {
                    chosen = Some((i, size));
                    i += 1;
                }
            }
        }
        if chosen.is_none() && ready[0] {
            chosen = accept_pending(listener, pending, now + timeout);
        }
        if let Some((i, size)) = chosen {
            return take_run(pending, i, size);
        }
    }
}

/// The chosen control connection, and the client's first users if they are already here:
/// connections accepted after it, from its address, that have sent nothing. The others
/// waiting are closed: one run at a time.
fn take_run(
    pending: &mut Vec<Pending>,
    i: usize,
    size: RunSize,
) -> Result<(TcpStream, RunSize, Vec<TcpStream>)> {
    let p = pending.remove(i);
    p.stream
        .set_nonblocking(false)
        .context("control connection")?;
    let ip = p.stream.peer_addr().ok().map(|a| a.ip());
    let early = pending
        .drain(i..)
        .filter(|q| q.got == 0 && q.stream.peer_addr().ok().map(|a| a.ip()) == ip)
        .map(|q| q.stream)
        .collect();
    if !pending.is_empty() {
        crate::errln!(
            "SRV: closing {} other waiting connection(s): one run at a time",
            pending.len()
        );
        pending.clear();
    }
    Ok((p.stream, size, early))
}

enum Verdict {
    Keep,
    Drop,
    Chosen(RunSize),
}

/// Reads what a waiting connection sent and decides its fate.
fn consider(p: &mut Pending, deadline: Instant) -> Verdict {
    match read_start(p, deadline) {
        Progress::More => Verdict::Keep,
        Progress::Closed => Verdict::Drop,
        Progress::Done(msg) => match accept_start(msg) {
            Ok(size) => Verdict::Chosen(size),
            Err(why) => {
                crate::errln!(
                    "SRV: refused start message from {} (rooms = {} messages = {}): {why}",
                    peer(&p.stream),
                    msg.rooms,
                    msg.messages
                );
                Verdict::Drop
            }
        },
    }
}

fn peer(stream: &TcpStream) -> String {
    stream
        .peer_addr()
        .map_or_else(|_| "?".into(), |a| a.to_string())
}

/// Accepts the connections waiting in the backlog as would-be control connections, reading
/// each one's start message at once: an honest client sends it right after connecting and its
/// users right after that, so it is chosen before its users can crowd it out. Stops at the
/// first acceptable start message (the rest of the backlog is that client's users). When too
/// many wait, the oldest one that has sent nothing is closed.
fn accept_pending(
    listener: &TcpListener,
    pending: &mut Vec<Pending>,
    deadline: Instant,
) -> Option<(usize, RunSize)> {
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                if stream.set_nonblocking(true).is_err() {
                    continue;
                }
                if pending.len() >= MAX_PENDING {
                    let victim = pending.iter().position(|p| p.got == 0).unwrap_or(0);
                    pending.remove(victim);
                }
                pending.push(Pending {
                    stream,
                    buf: [0; START_LEN],
                    got: 0,
                    deadline,
                });
                let last = pending.len() - 1;
                match consider(&mut pending[last], deadline) {
                    Verdict::Keep => {}
                    Verdict::Drop => {
                        pending.pop();
                    }
                    Verdict::Chosen(size) => return Some((last, size)),
                }
            }
            Err(err) if err.kind() == ErrorKind::WouldBlock => return None,
            Err(err) if err.kind() == ErrorKind::Interrupted => {}
            Err(err) => {
                // EMFILE and friends: say so, and breathe instead of spinning on poll.
                crate::errln!("SRV: accept: {err}");
                std::thread::sleep(Duration::from_millis(100));
                return None;
            }
        }
    }
}

enum Progress {
    More,
    Closed,
    Done(StartMessage),
}

fn read_start(p: &mut Pending, deadline: Instant) -> Progress {
    match p.stream.read(&mut p.buf[p.got..]) {
        Ok(0) => {
            if p.got > 0 {
                crate::errln!(
                    "SRV: control connection from {} closed after {} of {START_LEN} bytes of the start message",
                    peer(&p.stream),
                    p.got
                );
            }
            Progress::Closed
        }
        Ok(n) => {
            p.got += n;
            p.deadline = deadline;
            if p.got == START_LEN {
                Progress::Done(StartMessage::decode(p.buf))
            } else {
                Progress::More
            }
        }
        Err(err) if matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
            Progress::More
        }
        Err(_) => Progress::Closed,
    }
}

/// Checks a start message against the protocol and this machine, raising our open-file limit.
fn accept_start(msg: StartMessage) -> Result<RunSize, String> {
    let (max_rooms, why) = limits::max_rooms();
    let size = msg.validate(max_rooms).map_err(|e| {
        if msg.rooms as i64 > max_rooms as i64 {
            format!("{e} (this machine's limit: {why})")
        } else {
            e
        }
    })?;
    limits::reserve_for(size.rooms)?;
    Ok(size)
}

/// A message buffer shared by a receive thread (the kernel writes it in recv) and the same
/// user's send thread (the kernel reads it in send). As in the original, the receive thread
/// does not wait for the send thread before reading the next message into it: the bytes
/// relayed are opaque, and no Rust code reads or writes them, only the two syscalls.
struct MsgCell(UnsafeCell<[u8; MSG_SIZE]>);

// SAFETY: Sync: the bytes are only ever touched by the kernel, in recv (one user's receive thread)
// and send (its send thread), never by Rust code, so sharing the cell creates no data race Rust can
// observe; the relayed bytes are opaque, as in the original, which does the same.
unsafe impl Sync for MsgCell {}

impl MsgCell {
    fn ptr(&self) -> *mut u8 {
        self.0.get().cast()
    }
}

/// What the 40 threads of one room share.
struct Room {
    streams: Vec<TcpStream>,
    /// One semaphore per user: its receive thread posts, its send thread waits.
    sems: SemSet,
    bufs: Vec<MsgCell>,
}

type Worker = JoinHandle<(CounterSlot, u64)>;

/// One run, from the first data connection to the END byte. Returns (received, sent), or why
/// it was abandoned.
fn run(
    listener: &TcpListener,
    mut control: TcpStream,
    early: Vec<TcpStream>,
    size: RunSize,
    timeout: Duration,
    pool: &mut SlotPool,
) -> Result<(u64, u64), String> {
    let flags = Arc::new(RunFlags::default());
    let mut rooms: Vec<Arc<Room>> = Vec::with_capacity(size.rooms as usize);
    let mut receivers: Vec<Worker> = Vec::new();
    let mut senders: Vec<Worker> = Vec::new();
    let outcome = (|| {
        accept_rooms(
            listener,
            &control,
            early,
            size,
            timeout,
            pool,
            &flags,
            &mut rooms,
            &mut receivers,
            &mut senders,
        )?;
        control
            .write_all(&[START_BYTE])
            .map_err(|e| format!("sending START: {e}"))?;
        watch(&mut control, size, timeout, pool.region(), &flags)
    })();
    if outcome.is_err() {
        // Wake every thread wherever it waits: a recv, a send, its semaphore.
        flags.abort();
        for room in &rooms {
            for s in &room.streams {
                net::shutdown(s);
            }
            for u in 0..USERS_PER_ROOM {
                let _ = room.sems.op(u as u16, 1);
            }
        }
    }
    let mut received = 0;
    for w in receivers {
        if let Ok((slot, n)) = w.join() {
            received += n;
            pool.give_back(slot);
        }
    }
    let mut sent = 0;
    for w in senders {
        if let Ok((slot, n)) = w.join() {
            sent += n;
            pool.give_back(slot);
        }
    }
    // Dropping the rooms closes the data connections and removes the semaphore sets.
    drop(rooms);
    outcome.map(|()| (received, sent))
}

/// Accepts the run's data connections in order and starts each room's threads once its 20
/// users are in.
#[allow(clippy::too_many_arguments)]
fn accept_rooms(
    listener: &TcpListener,
    control: &TcpStream,
    early: Vec<TcpStream>,
    size: RunSize,
    timeout: Duration,
    pool: &mut SlotPool,
    flags: &Arc<RunFlags>,
    rooms: &mut Vec<Arc<Room>>,
    receivers: &mut Vec<Worker>,
    senders: &mut Vec<Worker>,
) -> Result<(), String> {
    let client_ip: Option<IpAddr> = control.peer_addr().ok().map(|a| a.ip());
    let mut users = Users {
        streams: Vec::with_capacity(USERS_PER_ROOM),
        messages: size.messages as u64,
        target_rooms: size.rooms as usize,
        pool,
        flags,
        rooms,
        receivers,
        senders,
    };
    for stream in early {
        users.add(stream)?;
    }
    let mut last_accept = Instant::now();
    while users.rooms.len() < size.rooms as usize {
        let left = timeout.saturating_sub(last_accept.elapsed());
        if left.is_zero() {
            return Err(format!(
                "{} of {} data connections came, then none for {timeout:?}",
                users.rooms.len() * USERS_PER_ROOM + users.streams.len(),
                size.connections()
            ));
        }
        let fds = [listener.as_fd(), control.as_fd()];
        let Ok(ready) = net::readable(&fds, Some(left + Duration::from_millis(1))) else {
            continue; // EINTR; anything else shows up as a timeout
        };
        if ready[1] {
            return Err(control_gone(control, "while connecting its users"));
        }
        while ready[0] && users.rooms.len() < size.rooms as usize {
            match listener.accept() {
                Ok((stream, from)) => {
                    if client_ip.is_some_and(|ip| ip != from.ip()) {
                        crate::errln!(
                            "SRV: connection from {from} during another client's run: closed"
                        );
                        continue;
                    }
                    last_accept = Instant::now();
                    users.add(stream)?;
                }
                Err(err) if err.kind() == ErrorKind::WouldBlock => break,
                Err(err) if err.kind() == ErrorKind::Interrupted => {}
                Err(err) => return Err(format!("accepting data connections: {err}")),
            }
        }
    }
    Ok(())
}

/// The run's users so far, and where their threads go.
struct Users<'a> {
    streams: Vec<TcpStream>,
    messages: u64,
    target_rooms: usize,
    pool: &'a mut SlotPool,
    flags: &'a Arc<RunFlags>,
    rooms: &'a mut Vec<Arc<Room>>,
    receivers: &'a mut Vec<Worker>,
    senders: &'a mut Vec<Worker>,
}

impl Users<'_> {
    /// Takes the next data connection; a room's threads start once its 20 users are in.
    fn add(&mut self, stream: TcpStream) -> Result<(), String> {
        if self.rooms.len() == self.target_rooms {
            return Ok(()); // not a user of this run: closed
        }
        stream
            .set_nonblocking(false)
            .map_err(|e| format!("data connection: {e}"))?;
        self.streams.push(stream);
        if self.streams.len() < USERS_PER_ROOM {
            return Ok(());
        }
        let room = Arc::new(Room {
            streams: std::mem::take(&mut self.streams),
            sems: SemSet::create(USERS_PER_ROOM).map_err(|e| format!("{e:#}"))?,
            bufs: (0..USERS_PER_ROOM)
                .map(|_| MsgCell(UnsafeCell::new([0; MSG_SIZE])))
                .collect(),
        });
        self.rooms.push(room.clone());
        start_room(
            &room,
            self.messages,
            self.pool,
            self.flags,
            self.receivers,
            self.senders,
        )
    }
}

fn start_room(
    room: &Arc<Room>,
    messages: u64,
    pool: &mut SlotPool,
    flags: &Arc<RunFlags>,
    receivers: &mut Vec<Worker>,
    senders: &mut Vec<Worker>,
) -> Result<(), String> {
    for user in 0..USERS_PER_ROOM {
        let seat = || Seat {
            room: room.clone(),
            user,
            flags: flags.clone(),
            messages,
        };
        let (receiver, slot) = (seat(), pool.take().map_err(|e| format!("{e:#}"))?);
        receivers.push(limits::spawn("chat-s-recv", move || {
            receiver.thread(slot, receive_loop)
        })?);
        let (sender, slot) = (seat(), pool.take().map_err(|e| format!("{e:#}"))?);
        senders.push(limits::spawn("chat-s-send", move || {
            sender.thread(slot, send_loop)
        })?);
    }
    Ok(())
}

/// One user of a room, as its receive thread and its send thread both see it.
struct Seat {
    room: Arc<Room>,
    user: usize,
    flags: Arc<RunFlags>,
    /// Messages the user sends in a run.
    messages: u64,
}

impl Seat {
    /// Runs `body`, the thread's loop, counting into `slot`; the thread counts as finished
    /// however it ends. The slot and what the loop added to it.
    fn thread(
        &self,
        slot: CounterSlot,
        body: fn(&Self, CounterSlot) -> CounterSlot,
    ) -> (CounterSlot, u64) {
        let _finish = FinishGuard(&self.flags);
        let before = slot.get();
        let slot = body(self, slot);
        let n = slot.get() - before;
        (slot, n)
    }
}

/// Why the control connection woke us during a run: the client closed it (vanished) or sent
/// something it should not have.
fn control_gone(control: &TcpStream, when: &str) -> String {
    let mut byte = [0u8; 1];
    match control.peek(&mut byte) {
        Ok(0) => format!("the client closed the control connection {when}"),
        Ok(_) => format!(
            "the client sent byte {:#04x} on the control connection {when}",
            byte[0]
        ),
        Err(e) => format!("control connection {when}: {e}"),
    }
}

/// Waits for END and for every thread, abandoning the run if the client goes away, a thread
/// fails, or nothing moves for `timeout`.
fn watch(
    control: &mut TcpStream,
    size: RunSize,
    timeout: Duration,
    region: &CounterRegion,
    flags: &RunFlags,
) -> Result<(), String> {
    let threads = 2 * size.connections();
    let mut got_end = false;
    let mut last_total = region.total();
    let mut last_move = Instant::now();
    loop {
        if let Some(why) = flags.failure() {
            return Err(why);
        }
        if got_end && flags.finished() == threads {
            return Ok(());
        }
        let readable = !got_end
            && net::wait_readable(control.as_fd(), TICK)
                .map_err(|e| format!("poll on the control connection: {e}"))?;
        if got_end {
            std::thread::sleep(TICK / 10);
        }
        if readable {
            let mut byte = [0u8; 1];
            match control.read(&mut byte) {
                Ok(1) if byte[0] == END_BYTE => got_end = true,
                Ok(1) => {
                    return Err(format!(
                        "the client sent byte {:#04x} instead of END (0x22)",
                        byte[0]
                    ))
                }
                Ok(_) => return Err("the client closed the control connection mid-run".into()),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("control connection: {e}")),
            }
        }
        let total = region.total();
        if total != last_total || flags.finished() == threads {
            (last_total, last_move) = (total, Instant::now());
        } else if last_move.elapsed() >= timeout {
            return Err(format!(
                "no message moved for {timeout:?} ({} of {threads} threads done{})",
                flags.finished(),
                if got_end { ", END received" } else { "" }
            ));
        }
    }
}

/// A receive thread: each message of each of the other users, read whole, then handed to the
/// send thread.
fn receive_loop(seat: &Seat, slot: CounterSlot) -> CounterSlot {
    let (room, flags): (&Room, &RunFlags) = (&seat.room, &seat.flags);
    let (user, messages) = (seat.user, seat.messages);
    let fd = room.streams[user].as_raw_fd();
    let buf = room.bufs[user].ptr();
    for i in 0..messages {
        // SAFETY: `buf` points to this user's MsgCell, MSG_SIZE bytes that `room` keeps alive for
        // the whole run; only the kernel writes them.
        if let Err(err) = unsafe { net::recv_exact(fd, buf, MSG_SIZE) } {
            flags.fail(format!(
                "receiving message {} of {messages} from user {user}: {err}",
                i + 1
            ));
            break;
        }
        slot.add(1);
        if let Err(err) = room.sems.op(user as u16, 1) {
            flags.fail(format!("waking the send thread: {err}"));
            break;
        }
    }
    slot
}

/// A send thread: each message the receive thread hands it, relayed to every other user.
fn send_loop(seat: &Seat, slot: CounterSlot) -> CounterSlot {
    let (room, flags): (&Room, &RunFlags) = (&seat.room, &seat.flags);
    let (user, messages) = (seat.user, seat.messages);
    let buf = room.bufs[user].ptr();
    'run: for _ in 0..messages {
        if let Err(err) = room.sems.op(user as u16, -1) {
            flags.fail(format!("waiting for a message to relay: {err}"));
            break;
        }
        if flags.aborted() {
            break;
        }
        for (other, stream) in room.streams.iter().enumerate() {
            if other == user {
                continue;
            }
            // SAFETY: `buf` points to this user's MsgCell, MSG_SIZE bytes that `room` keeps alive;
            // send only reads them.
            if let Err(err) = unsafe { net::send_all(stream.as_raw_fd(), buf, MSG_SIZE) } {
                flags.fail(format!("relaying to user {other}: {err}"));
                break 'run;
            }
            slot.add(1);
        }
    }
    slot
}
