//! The chat client (chat_c): one connection per user, a send and a receive thread on each,
//! all released together by a SysV barrier, timed until every thread has posted its done
//! semaphore. Each user's messages carry their send time (sys/stamp.rs), so that the
//! receive threads time how old what the server relays is when it arrives (one message in
//! [`TIME_EVERY`]); against a server that does not relay what it is sent, they count it
//! rejected.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsFd, AsRawFd};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::limits;
use super::net;
use super::protocol::{Report, RunSize, END_BYTE, MSG_SIZE, START_BYTE, USERS_PER_ROOM};
use super::run_flags::{FinishGuard, RunFlags};
use super::slots::SlotPool;
use crate::sys::kernel::sysv::SemSet;
use crate::sys::shared::counters::{self, now_ns, CounterSlot, Histogram, Sampler};
use crate::workload::stamp;

/// How often the main thread looks up from waiting for the done semaphores.
const TICK: Duration = Duration::from_millis(250);

pub(crate) struct ClientConfig {
    pub addr: SocketAddr,
    pub size: RunSize,
    /// Give up when nothing moves for this long (connecting, waiting for START, running).
    pub timeout: Duration,
    /// Print the original's progress lines and report (`schedlab chat` prints its own line).
    pub verbose: bool,
}

struct Shared {
    flags: RunFlags,
    /// One semaphore, 1 until the release: every thread waits for it to reach zero.
    barrier: SemSet,
    /// One semaphore per room: each of its 40 threads adds 1 when it is done.
    done: SemSet,
}

/// Posts the room's done semaphore when the thread ends, however it ends.
struct DoneGuard<'a> {
    shared: &'a Shared,
    room: u16,
}

impl Drop for DoneGuard<'_> {
    fn drop(&mut self) {
        let _ = self.shared.done.op(self.room, 1);
    }
}

/// A thread's counter and (receive threads) delivery histogram, given back when it ends,
/// and how many messages it moved.
type Worker = JoinHandle<(CounterSlot, Option<Histogram>, u64)>;

/// Deliveries timed: one in this many per receive thread. Every message carries its send
/// time: the server relays whatever its receive thread last read into the user's buffer (as
/// chat_s does), so only a stamp on every message says how old what arrives is. A send of 100
/// bytes over loopback TCP costs 3 µs or more of CPU here, a clock reading 22 ns (0.7%); a
/// receive about as much, and timing each would cost about 1% of it, so a receive thread
/// reads the stamp and the clock once in 8 messages (docs/latency.md).
pub(crate) const TIME_EVERY: u32 = 8;

/// Runs one test against the server and returns its report.
pub fn run(cfg: &ClientConfig, pool: &mut SlotPool) -> Result<Report> {
    let size = cfg.size;
    limits::reserve_for(size.rooms).map_err(|e| anyhow!(e))?;
    let mut control = net::connect(cfg.addr, cfg.timeout).with_context(|| {
        format!(
            "cannot connect to {} (is a chat server listening there?)",
            cfg.addr
        )
    })?;
    control
        .write_all(&size.start_message().encode())
        .context("sending the start message")?;

    let barrier = SemSet::create(1)?;
    barrier.set(0, 1).context("arming the start barrier")?;
    let shared = Arc::new(Shared {
        flags: RunFlags::default(),
        barrier,
        done: SemSet::create(size.rooms as usize)?,
    });
    let mut conns: Vec<Arc<TcpStream>> = Vec::with_capacity(size.connections());
    let mut senders: Vec<Worker> = Vec::with_capacity(size.connections());
    let mut receivers: Vec<Worker> = Vec::with_capacity(size.connections());

    let outcome = start_and_wait(
        cfg,
        pool,
        &shared,
        &mut control,
        &mut conns,
        &mut senders,
        &mut receivers,
    );
    if outcome.is_err() {
        // Wake every thread wherever it waits: the barrier, a recv, a send.
        shared.flags.abort();
        for c in &conns {
            net::shutdown(c);
        }
        let _ = shared.barrier.set(0, 0);
    }
    let (sent, slots_s, _) = join_all(senders);
    let (received, slots_r, histograms) = join_all(receivers);
    for slot in slots_s.into_iter().chain(slots_r) {
        pool.give_back(slot);
    }
    for h in histograms {
        pool.give_back_histogram(h);
    }
    let elapsed = outcome?;
    if cfg.verbose {
        crate::outln!("Test complete.");
    }
    // The server prints its line when it sees END; a server gone by now changes nothing here.
    if let Err(err) = control.write_all(&[END_BYTE]) {
        crate::errln!("schedlab chat-client: warning: could not send END to the server: {err}");
    }
    Ok(Report {
        sent,
        received,
        elapsed_secs: elapsed.as_secs_f64(),
    })
}

fn join_all(workers: Vec<Worker>) -> (u64, Vec<CounterSlot>, Vec<Histogram>) {
    let mut total = 0;
    let mut slots = Vec::with_capacity(workers.len());
    let mut histograms = Vec::new();
    for w in workers {
        // A panicking thread has already ended the process through the lifeline hook.
        if let Ok((slot, latency, n)) = w.join() {
            total += n;
            slots.push(slot);
            histograms.extend(latency);
        }
    }
    (total, slots, histograms)
}

/// Connects, starts the threads, waits for START, releases and times the run.
#[allow(clippy::too_many_arguments)]
fn start_and_wait(
    cfg: &ClientConfig,
    pool: &mut SlotPool,
    shared: &Arc<Shared>,
    control: &mut TcpStream,
    conns: &mut Vec<Arc<TcpStream>>,
    senders: &mut Vec<Worker>,
    receivers: &mut Vec<Worker>,
) -> Result<Duration> {
    let size = cfg.size;
    let messages = size.messages as u64;
    let stamped = counters::latency_enabled();
    for room in 0..size.rooms as usize {
        if cfg.verbose {
            crate::outln!("Creating room number {} ...", room + 1);
        }
        check_control_alive(control)?;
        for _user in 0..USERS_PER_ROOM {
            let stream = Arc::new(net::connect(cfg.addr, cfg.timeout).with_context(|| {
                format!(
                    "opening data connection {} to {}",
                    conns.len() + 1,
                    cfg.addr
                )
            })?);
            conns.push(stream.clone());
            let (s, sl) = (shared.clone(), pool.take()?);
            let c = stream.clone();
            senders.push(
                limits::spawn("chat-c-send", move || {
                    let (slot, n) = if stamped {
                        send_thread::<true>(&s, room as u16, &c, sl, messages)
                    } else {
                        send_thread::<false>(&s, room as u16, &c, sl, messages)
                    };
                    (slot, None, n)
                })
                .map_err(|e| anyhow!(e))?,
            );
            let (s, sl, h) = (shared.clone(), pool.take()?, pool.take_histogram());
            receivers.push(
                limits::spawn("chat-c-recv", move || {
                    receive_thread(&s, room as u16, &stream, sl, h, messages * 19)
                })
                .map_err(|e| anyhow!(e))?,
            );
        }
        if cfg.verbose {
            crate::outln!("{} connections so far.", conns.len());
        }
    }

    await_start(control, cfg.timeout, size)?;

    let region = pool.region();
    region.set_expected_total(region.total() + size.sent() + size.received());
    if cfg.verbose {
        crate::outln!("Running the test ...");
        let _ = std::io::stdout().flush();
    }
    let start = Instant::now();
    shared
        .barrier
        .op(0, -1)
        .context("releasing the start barrier")?;

    await_rooms(shared, region, size, cfg.timeout)?;
    let elapsed = start.elapsed();
    if let Some(why) = shared.flags.failure() {
        bail!("{why}");
    }
    Ok(elapsed)
}

/// Waits for the server's START on the control connection.
fn await_start(control: &mut TcpStream, timeout: Duration, size: RunSize) -> Result<()> {
    if !net::wait_readable(control.as_fd(), timeout)? {
        bail!("the server accepted the connections but sent no START within {timeout:?}");
    }
    let mut byte = [0u8; 1];
    match control.read(&mut byte) {
        Ok(1) if byte[0] == START_BYTE => Ok(()),
        Ok(1) => bail!(
            "the server sent byte {:#04x} instead of START (0x11)",
            byte[0]
        ),
        Ok(_) => bail!("{}", refused_hint(size)),
        Err(err) => Err(err).context("waiting for the server's START"),
    }
}

/// Waits until every room's threads are done; a failure, or no message moving for
/// `timeout`, ends the wait with the reason.
fn await_rooms(
    shared: &Shared,
    region: &counters::CounterRegion,
    size: RunSize,
    timeout: Duration,
) -> Result<()> {
    let mut last_total = region.total();
    let mut last_move = Instant::now();
    for room in 0..size.rooms as u16 {
        loop {
            if sem_wait_timed(&shared.done, room, -(2 * USERS_PER_ROOM as i16), TICK)? {
                break;
            }
            if let Some(why) = shared.flags.failure() {
                bail!("{why}");
            }
            let total = region.total();
            if total != last_total {
                (last_total, last_move) = (total, Instant::now());
            } else if last_move.elapsed() >= timeout {
                bail!("no message moved for {timeout:?}: the server stalled (see --timeout)");
            }
        }
    }
    Ok(())
}

fn refused_hint(size: RunSize) -> String {
    format!(
        "the server closed the control connection without starting the run (did it refuse \
         rooms = {} messages = {}? its output says why)",
        size.rooms, size.messages
    )
}

/// Fails early when the server has already closed the control connection (a refusal).
fn check_control_alive(control: &TcpStream) -> Result<()> {
    if net::wait_readable(control.as_fd(), Duration::ZERO)? {
        let mut byte = [0u8; 1];
        if matches!(control.peek(&mut byte), Ok(0) | Err(_)) {
            bail!(
                "the server closed the control connection while the client was connecting \
                 (did it refuse the run? its output says why)"
            );
        }
    }
    Ok(())
}

extern "C" {
    // In glibc and musl, not (yet) in the libc crate.
    fn semtimedop(
        semid: libc::c_int,
        sops: *mut libc::sembuf,
        nsops: libc::size_t,
        timeout: *const libc::timespec,
    ) -> libc::c_int;
}

/// semtimedop: true when the operation was done, false on timeout.
fn sem_wait_timed(set: &SemSet, num: u16, delta: i16, timeout: Duration) -> Result<bool> {
    let mut op = libc::sembuf {
        sem_num: num,
        sem_op: delta,
        sem_flg: 0,
    };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `op` is one live, writable sembuf (nsops 1) and `ts` a live timespec that semtimedop
    // only reads; the declaration above matches glibc's.
    let rc = unsafe { semtimedop(set.id(), &mut op, 1, &ts) };
    if rc == 0 {
        return Ok(true);
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(false),
        _ => Err(err).context("waiting for the done semaphores"),
    }
}

fn wait_for_release(shared: &Shared) -> bool {
    if let Err(err) = shared.barrier.op(0, 0) {
        shared
            .flags
            .fail(format!("waiting at the start barrier: {err}"));
        return false;
    }
    !shared.flags.aborted()
}

/// A user's thread: it posts the room's done semaphore and marks the run finished however it
/// ends; once the start barrier releases it, it moves `messages` messages, one `message` call
/// each, counting each in `slot`, until the first error, which fails the run in the words of
/// `failed(message number, error)`. Returns how many it moved. Generic and inlined, so the
/// loop compiles as if written out in each thread.
#[inline(always)]
fn user_thread(
    shared: &Shared,
    room: u16,
    slot: &CounterSlot,
    messages: u64,
    failed: impl Fn(u64, io::Error) -> String,
    mut message: impl FnMut() -> io::Result<()>,
) -> u64 {
    let _done = DoneGuard { shared, room };
    let _finish = FinishGuard(&shared.flags);
    let before = slot.get();
    if wait_for_release(shared) {
        for i in 0..messages {
            if let Err(err) = message() {
                shared.flags.fail(failed(i + 1, err));
                break;
            }
            slot.add(1);
        }
    }
    slot.get() - before
}

/// A user's send thread. `STAMPED`: every message carries a stamp with its send time (the
/// protocol treats the 100 bytes as opaque); otherwise the messages are the original's, and
/// the loop is the one stamping is measured against.
fn send_thread<const STAMPED: bool>(
    shared: &Shared,
    room: u16,
    conn: &TcpStream,
    slot: CounterSlot,
    messages: u64,
) -> (CounterSlot, u64) {
    let mut msg = [b'x'; MSG_SIZE];
    if STAMPED {
        stamp::prepare(&mut msg);
    }
    let fd = conn.as_raw_fd();
    let failed = |i, err| format!("sending message {i} of {messages} to the server: {err}");
    let n = user_thread(shared, room, &slot, messages, failed, || {
        if STAMPED {
            stamp::stamp(&mut msg, now_ns());
        }
        // SAFETY: `msg` is MSG_SIZE live bytes for the whole loop, which send_all only reads.
        unsafe { net::send_all(fd, msg.as_ptr(), MSG_SIZE) }
    });
    (slot, n)
}

/// A user's receive thread; with a histogram, it takes one message's stamp in
/// [`TIME_EVERY`] into it.
fn receive_thread(
    shared: &Shared,
    room: u16,
    conn: &TcpStream,
    slot: CounterSlot,
    latency: Option<Histogram>,
    messages: u64,
) -> (CounterSlot, Option<Histogram>, u64) {
    let mut buf = [0u8; MSG_SIZE];
    let mut sampler = Sampler::new(TIME_EVERY);
    let fd = conn.as_raw_fd();
    let failed = |i, err| format!("receiving message {i} of {messages} from the server: {err}");
    let n = user_thread(shared, room, &slot, messages, failed, || {
        // SAFETY: `buf` is MSG_SIZE live, exclusively borrowed bytes, which recv_exact may
        // write.
        unsafe { net::recv_exact(fd, buf.as_mut_ptr(), MSG_SIZE) }?;
        if let Some(h) = &latency {
            if sampler.due() {
                stamp::take(&buf, h);
            }
        }
        Ok(())
    });
    (slot, latency, n)
}
