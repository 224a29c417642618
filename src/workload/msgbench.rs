//! msgbench: timed batches of msgget, msgsnd, msgctl(IPC_STAT), msgctl(MSG_STAT) and
//! msgctl(IPC_RMID) over many queues (Nadia Derbey's benchmark, 2008).
//!
//! Each batch creates `queues` queues, sends one message to each, stats each by id and by
//! index, and removes them, timing each of the five loops. The report is the original's: one
//! `T op iterations in S seconds = R/sec` line per operation, then per-batch statistics in
//! microseconds.

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::sys::kernel::proc::sysctl;
use crate::sys::kernel::sysv::{self, LedgerRange, MsgQueue};
use crate::sys::shared::counters::{CounterRegion, CounterSlot};
use crate::workload::registry::params::{refused, MSGBENCH};

/// The 2008 runs raised `kernel.msgmni` to 32768, the most a kernel without
/// `ipcmni_extend` allows; more would only measure memory.
pub(crate) const DEFAULT_QUEUE_CAP: usize = 32_768;
/// Bytes of text in the one message each queue gets.
const MESSAGE_LEN: usize = 8;

/// Arguments of `schedlab msgbench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(short = 'n', long = "batches", value_name = "BATCHES",
          default_value_t = MSGBENCH.param("batches").default_count().to_string(),
          help = MSGBENCH.param("batches").cli_help())]
    pub batches: String,
    #[arg(long, value_name = "N", help = MSGBENCH.param("queues").cli_help())]
    pub queues: Option<String>,
}

/// The five timed operations, in the order a batch runs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Get,
    Send,
    IpcStat,
    MsgStat,
    Rm,
}

impl Op {
    pub const ALL: [Op; 5] = [Op::Get, Op::Send, Op::IpcStat, Op::MsgStat, Op::Rm];

    /// The name in the `... iterations in ...` line.
    pub fn call(self) -> &'static str {
        match self {
            Op::Get => "msgget",
            Op::Send => "msgsnd",
            Op::IpcStat => "msgctl(ipc_stat)",
            Op::MsgStat => "msgctl(msg_stat)",
            Op::Rm => "msgctl(ipc_rmid)",
        }
    }

    /// The row label in the statistics table.
    pub fn label(self) -> &'static str {
        match self {
            Op::Get => "GET:",
            Op::Send => "SEND:",
            Op::IpcStat => "IPC_STAT:",
            Op::MsgStat => "MSG_STAT:",
            Op::Rm => "RM:",
        }
    }
}

/// Per-batch times of one operation, in nanoseconds.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    pub ns: Vec<u64>,
}

/// Summary of one operation over all batches; times in microseconds per batch.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub iterations: u64,
    pub seconds: f64,
    pub per_sec: f64,
    pub avg_us: f64,
    /// Population standard deviation (divides by the number of batches).
    pub std_dev_us: f64,
    pub min_us: f64,
    pub max_us: f64,
}

impl Samples {
    pub fn summary(&self, queues: usize) -> Summary {
        let n = self.ns.len().max(1) as f64;
        let total_ns: u64 = self.ns.iter().sum();
        let us: Vec<f64> = self.ns.iter().map(|&v| v as f64 / 1000.0).collect();
        let avg = us.iter().sum::<f64>() / n;
        let var = us.iter().map(|v| (v - avg).powi(2)).sum::<f64>() / n;
        let seconds = total_ns as f64 / 1e9;
        let iterations = self.ns.len() as u64 * queues as u64;
        Summary {
            iterations,
            seconds,
            per_sec: if seconds > 0.0 {
                iterations as f64 / seconds
            } else {
                0.0
            },
            avg_us: avg,
            std_dev_us: var.sqrt(),
            min_us: us.iter().copied().fold(f64::INFINITY, f64::min),
            max_us: us.iter().copied().fold(0.0, f64::max),
        }
    }
}

/// The original's report: five rate lines, each followed by a blank line, then the table.
pub fn report(summaries: &[(Op, Summary)]) -> String {
    let mut out = String::new();
    for (op, s) in summaries {
        out += &format!(
            "{} {} iterations in {:.6} seconds = {:.0}/sec\n\n",
            s.iterations,
            op.call(),
            s.seconds,
            s.per_sec.floor()
        );
    }
    out += "             AVERAGE        STD_DEV      MIN     MAX\n";
    for (op, s) in summaries {
        out += &format!(
            "{:<12}{:.6}   {:.6}   {:.0}   {:.0}\n",
            op.label(),
            s.avg_us,
            s.std_dev_us,
            s.min_us,
            s.max_us
        );
    }
    out
}

/// How many queues a batch may create: checked against kernel.msgmni before anything is made.
pub(crate) fn choose_queues(requested: Option<u64>, msgmni: u64, in_use: u64) -> Result<usize> {
    let free = msgmni.saturating_sub(in_use);
    match requested {
        Some(n) if n > msgmni => bail!(
            "--queues {n} is more than kernel.msgmni ({msgmni}) allows: raise it first (sysctl -w kernel.msgmni={n})"
        ),
        Some(n) if n > free => bail!(
            "--queues {n}: only {free} of kernel.msgmni ({msgmni}) queues are free, {in_use} exist already: raise kernel.msgmni (sysctl -w kernel.msgmni={}) or remove them",
            in_use + n
        ),
        Some(n) => Ok(n as usize),
        None if free == 0 => bail!(
            "no free message queue: kernel.msgmni is {msgmni} and {in_use} queues exist: raise kernel.msgmni"
        ),
        None => Ok(free.min(DEFAULT_QUEUE_CAP as u64) as usize),
    }
}

/// The mask that turns a queue id into the index MSG_STAT takes: the low 15 bits, or the
/// low 24 when the kernel was booted with `ipcmni_extend`. Found by asking the kernel.
fn msg_stat_index_mask() -> Result<i32> {
    let probe = MsgQueue::create()?;
    let id = probe.id();
    for mask in [0x7fff, 0xff_ffff] {
        // SAFETY: libc::msqid_ds is plain old data: all-zero bytes are a valid value.
        let mut ds: libc::msqid_ds = unsafe { std::mem::zeroed() };
        // SAFETY: `ds` is a live, writable msqid_ds for MSG_STAT to fill.
        if unsafe { libc::msgctl(id & mask, libc::MSG_STAT, &mut ds) } == id {
            return Ok(mask);
        }
    }
    bail!("msgctl(MSG_STAT) does not find queue {id} by its index: cannot time MSG_STAT")
}

pub fn main(args: Args) -> Result<()> {
    let count = |key, text: &str| MSGBENCH.param(key).parse_count(text).map_err(refused);
    let batches = count("batches", &args.batches)?.map_or(0, u64::from);
    let requested = match &args.queues {
        Some(t) => count("queues", t)?.map(u64::from),
        None => None,
    };
    sysv::sweep_orphans()?;
    let msgmni = sysctl("kernel.msgmni")?;
    let queues = choose_queues(requested, msgmni, sysv::queues_in_use()?)?;

    let counters = CounterRegion::for_workload()?;
    let slot = counters.claim()?;
    counters.set_expected_total(batches * queues as u64 * Op::ALL.len() as u64);

    let index_mask = msg_stat_index_mask()?;
    let range = LedgerRange::reserve(queues)?;
    let stop = StopGate::install();
    let mut bench = Bench {
        range: &range,
        ids: vec![0; queues],
        index_mask,
        slot: &slot,
        msgmni,
    };
    let mut samples: Vec<Samples> = vec![Samples::default(); Op::ALL.len()];
    for s in &mut samples {
        s.ns.reserve(batches as usize);
    }
    for _ in 0..batches {
        for (k, &op) in Op::ALL.iter().enumerate() {
            stop.checkpoint();
            let t0 = Instant::now();
            let done = bench.run(op);
            let ns = t0.elapsed().as_nanos() as u64;
            if let Err(err) = done {
                range.remove_recorded();
                return Err(err);
            }
            samples[k].ns.push(ns);
        }
    }
    counters.mark_finished();
    let summaries: Vec<(Op, Summary)> = Op::ALL
        .iter()
        .zip(&samples)
        .map(|(&op, s)| (op, s.summary(queues)))
        .collect();
    crate::out!("{}", report(&summaries));
    Ok(())
}

struct Bench<'a> {
    range: &'a LedgerRange,
    ids: Vec<i32>,
    index_mask: i32,
    slot: &'a CounterSlot,
    msgmni: u64,
}

impl Bench<'_> {
    /// One timed loop over every queue. Nothing but the call, a check and two stores per
    /// queue: the id (into `ids` and the ledger) and the live counter.
    fn run(&mut self, op: Op) -> Result<()> {
        let n = self.ids.len();
        match op {
            Op::Get => {
                for i in 0..n {
                    match self.range.msgget(i) {
                        Ok(id) => self.ids[i] = id,
                        Err(err) => return Err(self.get_failed(i, err)),
                    }
                    self.slot.add(1);
                }
            }
            Op::Send => {
                let mut buf = sysv::MsgBuf::new(1);
                let ptr = (&mut buf as *mut sysv::MsgBuf).cast::<libc::c_void>();
                self.each_queue(|id| {
                    // SAFETY: `ptr` points to `buf`, a live MsgBuf (a long type, then MsgBuf::TEXT
                    // bytes) for the whole loop; msgsnd reads the type and MESSAGE_LEN (<= TEXT)
                    // bytes of it.
                    let sent = unsafe { libc::msgsnd(id, ptr, MESSAGE_LEN, libc::IPC_NOWAIT) };
                    ok_or_errno(sent, || format!("msgsnd to queue {id}"))
                })?;
            }
            Op::IpcStat => {
                // SAFETY: libc::msqid_ds is plain old data: all-zero bytes are a valid value.
                let mut ds: libc::msqid_ds = unsafe { std::mem::zeroed() };
                self.each_queue(|id| {
                    // SAFETY: `ds` is a live, writable msqid_ds for IPC_STAT to fill.
                    let stat = unsafe { libc::msgctl(id, libc::IPC_STAT, &mut ds) };
                    ok_or_errno(stat, || format!("msgctl(IPC_STAT) on queue {id}"))
                })?;
            }
            Op::MsgStat => {
                // SAFETY: libc::msqid_ds is plain old data: all-zero bytes are a valid value.
                let mut ds: libc::msqid_ds = unsafe { std::mem::zeroed() };
                let mask = self.index_mask;
                self.each_queue(|id| {
                    // SAFETY: `ds` is a live, writable msqid_ds for MSG_STAT to fill.
                    let got = unsafe { libc::msgctl(id & mask, libc::MSG_STAT, &mut ds) };
                    if got != id {
                        let err = std::io::Error::last_os_error();
                        bail!(
                            "msgctl(MSG_STAT) on index {} gave {got}, not queue {id} ({err})",
                            id & mask
                        );
                    }
                    Ok(())
                })?;
            }
            Op::Rm => {
                for (i, &id) in self.ids.iter().enumerate() {
                    if let Err(err) = self.range.msg_rmid(i, id) {
                        return Err(err).with_context(|| format!("msgctl(IPC_RMID) on queue {id}"));
                    }
                    self.slot.add(1);
                }
            }
        }
        Ok(())
    }

    /// `call` on every queue in turn, each counted once it is done: the loop of every
    /// operation but msgget and IPC_RMID (inlined: it adds nothing per queue).
    fn each_queue(&self, mut call: impl FnMut(i32) -> Result<()>) -> Result<()> {
        for &id in &self.ids {
            call(id)?;
            self.slot.add(1);
        }
        Ok(())
    }

    fn get_failed(&self, i: usize, err: std::io::Error) -> anyhow::Error {
        let n = self.ids.len();
        if err.raw_os_error() == Some(libc::ENOSPC) {
            let others = sysv::queues_in_use().unwrap_or(0).saturating_sub(i as u64);
            anyhow::anyhow!(
                "msgget: queue limit reached after {i} of {n} queues (kernel.msgmni = {}, {others} queues belong to others): raise kernel.msgmni or use fewer --queues",
                self.msgmni
            )
        } else {
            anyhow::Error::new(err).context(format!("msgget for queue {i} of {n}"))
        }
    }
}

/// A system call's result: an error (errno, with what was being done) when it is negative.
fn ok_or_errno(ret: libc::c_int, doing: impl FnOnce() -> String) -> Result<()> {
    if ret < 0 {
        return Err(std::io::Error::last_os_error()).with_context(doing);
    }
    Ok(())
}

/// Makes a termination signal wait for the benchmark to reach a phase boundary, so that no
/// queue is created after the clean-up has swept the ledger. Costs nothing inside the loops.
struct StopGate {
    requested: Arc<AtomicBool>,
    parked: Arc<AtomicBool>,
}

impl StopGate {
    fn install() -> Self {
        let requested = Arc::new(AtomicBool::new(false));
        let parked = Arc::new(AtomicBool::new(false));
        let (r, p) = (requested.clone(), parked.clone());
        let bench_thread = std::thread::current().id();
        crate::sys::exit::lifeline::on_exit(move || {
            r.store(true, SeqCst);
            if std::thread::current().id() == bench_thread {
                return; // a panic in the benchmark itself: it will not reach a checkpoint
            }
            // A phase of 32768 queues takes tens of ms; allow for a loaded machine.
            let deadline = Instant::now() + Duration::from_secs(10);
            while !p.load(SeqCst) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        Self { requested, parked }
    }

    /// Between two loops: if the process is being stopped, wait here for it to end.
    fn checkpoint(&self) {
        if self.requested.load(SeqCst) {
            self.parked.store(true, SeqCst);
            loop {
                std::thread::park();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_is_per_batch_microseconds() {
        let s = Samples {
            ns: vec![1_000_000, 3_000_000],
        };
        let sum = s.summary(1000);
        assert_eq!(sum.iterations, 2000);
        assert!((sum.seconds - 0.004).abs() < 1e-12);
        assert!((sum.avg_us - 2000.0).abs() < 1e-9);
        assert!((sum.std_dev_us - 1000.0).abs() < 1e-9);
        assert_eq!(sum.min_us, 1000.0);
        assert_eq!(sum.max_us, 3000.0);
        assert!((sum.per_sec - 500_000.0).abs() < 1e-6);
    }

    #[test]
    fn report_has_the_seeds_shape() {
        let s = Samples {
            ns: vec![21_469_724_000],
        };
        let text = report(&[(Op::Get, s.summary(32_768_000))]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "32768000 msgget iterations in 21.469724 seconds = 1526242/sec"
        );
        assert_eq!(lines[1], "");
        assert_eq!(
            lines[2],
            "             AVERAGE        STD_DEV      MIN     MAX"
        );
        assert_eq!(
            lines[3],
            "GET:        21469724.000000   0.000000   21469724   21469724"
        );
    }

    #[test]
    fn queue_count_respects_msgmni() {
        assert_eq!(choose_queues(None, 32000, 10).unwrap(), 31990);
        assert_eq!(choose_queues(None, 100_000, 0).unwrap(), DEFAULT_QUEUE_CAP);
        assert_eq!(choose_queues(Some(5), 32000, 0).unwrap(), 5);
        let err = choose_queues(Some(40_000), 32000, 0)
            .unwrap_err()
            .to_string();
        assert!(err.contains("kernel.msgmni"), "{err}");
        let err = choose_queues(Some(100), 100, 1).unwrap_err().to_string();
        assert!(err.contains("only 99"), "{err}");
        assert!(choose_queues(None, 5, 5).is_err());
    }
}
