//! /proc outside the probe's sampling loop: one process's stat, the processes and threads
//! there are, sysctls, and this process's own files. The sampler keeps its files open and
//! re-reads them (probe/reader.rs); everything else that needs /proc reads it here, and every
//! /proc/PID/stat line, the sampler's too, goes through the one parser below.

use std::io;
use std::path::Path;

use anyhow::Context;

/// The fields of /proc/PID/stat (or task/TID/stat) the probe uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    pub state: u8,
    pub ppid: u32,
    pub pgrp: u32,
    pub session: u32,
    /// utime + stime, in ticks.
    pub cpu_ticks: u64,
    /// cutime + cstime (reaped children), in ticks.
    pub child_ticks: u64,
    pub nice: i32,
    pub num_threads: u32,
    /// Start time after boot, in ticks: with the pid, it names a process across pid reuse.
    pub start: u64,
    pub policy: u32,
    /// The CPU it last ran on (field 39).
    pub processor: Option<u32>,
    /// Its real-time priority (field 40; 0 for fair tasks).
    pub rt_priority: u32,
    /// A kernel thread (PF_KTHREAD in the flags, field 9).
    pub kthread: bool,
}

/// PF_KTHREAD in a task's flags.
const PF_KTHREAD: u64 = 0x0020_0000;

fn num<T: std::str::FromStr>(b: &[u8]) -> Option<T> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// Parses a stat line. `comm` may hold spaces and parentheses, so fields are counted from
/// the last ')'.
pub fn stat(buf: &[u8]) -> Option<Stat> {
    let close = buf.iter().rposition(|&c| c == b')')?;
    let rest = buf.get(close + 2..)?;
    // fields[0] is field 3 (state) of proc(5).
    let mut f: [&[u8]; 40] = [&[]; 40];
    let mut n = 0;
    for tok in rest
        .split(|c| *c == b' ' || *c == b'\n')
        .filter(|t| !t.is_empty())
    {
        if n == f.len() {
            break;
        }
        f[n] = tok;
        n += 1;
    }
    if n < 20 {
        return None;
    }
    let field = |k: usize| f[k - 3];
    Some(Stat {
        state: *field(3).first()?,
        ppid: num(field(4))?,
        pgrp: num(field(5))?,
        session: num(field(6))?,
        cpu_ticks: num::<u64>(field(14))? + num::<u64>(field(15))?,
        child_ticks: num::<i64>(field(16))?.max(0) as u64 + num::<i64>(field(17))?.max(0) as u64,
        nice: num(field(19))?,
        num_threads: num(field(20))?,
        start: num(field(22))?,
        policy: if n >= 39 {
            num(field(41)).unwrap_or(0)
        } else {
            0
        },
        processor: if n >= 37 { num(field(39)) } else { None },
        rt_priority: if n >= 38 {
            num(field(40)).unwrap_or(0)
        } else {
            0
        },
        kthread: num::<u64>(field(9)).is_some_and(|f| f & PF_KTHREAD != 0),
    })
}

/// The `comm` of a stat line: between the first '(' and the last ')'.
pub fn stat_comm(buf: &[u8]) -> Option<&str> {
    let open = buf.iter().position(|&c| c == b'(')?;
    let close = buf.iter().rposition(|&c| c == b')')?;
    std::str::from_utf8(buf.get(open + 1..close)?).ok()
}

/// /proc/PID/stat of a process (or of a thread: a tid works as well), parsed.
pub(crate) fn read_stat(pid: u32) -> Option<Stat> {
    stat(&std::fs::read(format!("/proc/{pid}/stat")).ok()?)
}

/// A task's name (/proc/PID/comm), trimmed.
pub(crate) fn comm(pid: u32) -> Option<String> {
    let c = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(c.trim_end().to_owned())
}

/// One of a process's own /proc files (`cgroup`, `autogroup`), whole; None when it is gone.
pub(crate) fn process_file(pid: u32, name: &str) -> Option<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/{name}")).ok()
}

/// Whether `tid` is one of this process's own threads.
pub(crate) fn own_thread(tid: u32) -> bool {
    std::path::Path::new(&format!("/proc/self/task/{tid}")).exists()
}

/// Whether `tid` is still a thread of process `pid`: tgkill(2) with no signal, which only
/// checks (0.3 µs here, against 0.7 to 2 µs for each entry of a /proc/PID/task listing). A tid
/// reused by another process does not pass.
pub(crate) fn thread_of(pid: u32, tid: u32) -> bool {
    // Raw syscall: neither libc nor nix wraps tgkill.
    // SAFETY: tgkill takes three integers and touches no memory of ours; signal 0 sends
    // nothing.
    let rc = unsafe { libc::syscall(libc::SYS_tgkill, pid as libc::pid_t, tid as libc::pid_t, 0) };
    // EPERM: it is there, only not ours to signal.
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Whether `pid` is a live process: it exists and is not a zombie (a killed process stays
/// one until it is reaped, and will never run again).
pub fn alive(pid: u32) -> bool {
    read_stat(pid).is_some_and(|s| !matches!(s.state, b'Z' | b'X'))
}

/// The processes in /proc now, as procfs lists them (one that exits between the listing and
/// procfs's open of its directory is left out: a read of it would find it gone anyway).
pub fn pids() -> Vec<u32> {
    processes()
        .filter_map(|p| u32::try_from(p.pid).ok())
        .collect()
}

/// Every process in /proc now, each with its /proc directory held open (procfs's listing).
fn processes() -> impl Iterator<Item = procfs::process::Process> {
    procfs::process::all_processes()
        .into_iter()
        .flatten()
        .flatten()
}

/// The threads of process `pid` (/proc/PID/task), or None when it is gone. A plain listing,
/// not procfs's: its task iterator opens each thread's directory, one more system call a
/// thread for the thousands of threads a knob change or an exit goes over.
pub fn threads(pid: u32) -> Option<Vec<u32>> {
    numeric_entries(&format!("/proc/{pid}/task"))
}

fn numeric_entries(dir: &str) -> Option<Vec<u32>> {
    let entries = std::fs::read_dir(dir).ok()?;
    Some(
        entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect(),
    )
}

/// The threads of every process whose /proc entry `uid` owns: what RLIMIT_NPROC counts.
pub(crate) fn threads_of_user(uid: u32) -> u64 {
    processes()
        .filter(|p| p.uid().is_ok_and(|owner| owner == uid))
        .filter_map(|p| read_stat(u32::try_from(p.pid).ok()?))
        .map(|s| u64::from(s.num_threads.max(1)))
        .sum()
}

/// A number alone in a file: a sysctl, a cgroup's pids.max.
pub(crate) fn read_u64(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The file that holds a sysctl: the dots of its name ("kernel.pid_max") are the
/// directories under /proc/sys (/proc/sys/kernel/pid_max).
pub(crate) fn sysctl_path(name: &str) -> String {
    format!("/proc/sys/{}", name.replace('.', "/"))
}

/// A sysctl's text as the kernel prints it, trailing newline and all: every sysctl schedlab
/// reads is read here, or, where procfs has a typed reader for it, by that ([`pid_max`],
/// [`threads_max`], [`max_map_count`]).
pub(crate) fn sysctl_text(name: &str) -> io::Result<String> {
    std::fs::read_to_string(sysctl_path(name))
}

/// A sysctl that holds one number; the error names the file, and what it held when that was
/// not a number.
pub fn sysctl(name: &str) -> anyhow::Result<u64> {
    let path = sysctl_path(name);
    let text = sysctl_text(name).with_context(|| format!("reading {path}"))?;
    text.trim()
        .parse()
        .with_context(|| format!("{path} holds {text:?}"))
}

/// A sysctl's number, or None when the kernel has no such sysctl.
pub(crate) fn sysctl_u64(name: &str) -> Option<u64> {
    sysctl(name).ok()
}

/// Whether a sysctl that holds 0 or 1 holds 1; None when the kernel has no such sysctl.
pub(crate) fn sysctl_on(name: &str) -> Option<bool> {
    sysctl_u64(name).map(|v| v == 1)
}

/// kernel.pid_max, by procfs's typed reader.
pub(crate) fn pid_max() -> Option<u64> {
    u64::try_from(procfs::sys::kernel::pid_max().ok()?).ok()
}

/// kernel.threads-max, by procfs's typed reader.
pub(crate) fn threads_max() -> Option<u64> {
    procfs::sys::kernel::threads_max().ok().map(u64::from)
}

/// vm.max_map_count, by procfs's typed reader.
pub(crate) fn max_map_count() -> Option<u64> {
    procfs::sys::vm::max_map_count().ok()
}

/// A `Key:   N kB` line's number, of this process's /proc/self/status (VmSize, FDSize).
fn kb_field(path: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?;
    line.split_whitespace().next()?.parse().ok()
}

/// One of this process's own files under /proc/self ("autogroup"), as bytes.
pub(crate) fn own_file(name: &str) -> Option<Vec<u8>> {
    std::fs::read(format!("/proc/self/{name}")).ok()
}

/// This process's address space, in bytes (VmSize of /proc/self/status).
pub(crate) fn own_vm_size() -> Option<u64> {
    Some(kb_field("/proc/self/status", "VmSize")? * 1024)
}

/// Memory available for new work, in bytes (MemAvailable of /proc/meminfo, which procfs
/// gives in bytes: its kB times 1024).
pub(crate) fn mem_available() -> Option<u64> {
    use procfs::Current;
    procfs::Meminfo::current().ok()?.mem_available
}

#[cfg(test)]
/// This process's descriptor table size (FDSize of /proc/self/status: slots, not open files).
pub(crate) fn own_fd_table_size() -> Option<u64> {
    kb_field("/proc/self/status", "FDSize")
}

/// Tasks that exist on the machine now (the total of /proc/loadavg's running/total).
pub(crate) fn task_count() -> Option<u64> {
    use procfs::Current;
    Some(procfs::LoadAverage::current().ok()?.max.into())
}

/// The descriptors this process holds open (the entries of /proc/self/fd, counting the one
/// that lists them).
pub(crate) fn own_open_files() -> Option<u64> {
    entry_count("/proc/self/fd")
}

/// The memory maps this process holds (the lines of /proc/self/maps): vm.max_map_count caps
/// them, and every thread's stack and guard page is one each.
pub(crate) fn own_map_count() -> Option<u64> {
    line_count("/proc/self/maps")
}

fn entry_count(dir: impl AsRef<Path>) -> Option<u64> {
    Some(std::fs::read_dir(dir).ok()?.count() as u64)
}

fn line_count(path: impl AsRef<Path>) -> Option<u64> {
    Some(std::fs::read_to_string(path).ok()?.lines().count() as u64)
}

/// This process's /proc/self/cgroup: one `id:controllers:path` line per hierarchy.
pub(crate) fn own_cgroups() -> Option<String> {
    std::fs::read_to_string("/proc/self/cgroup").ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_is_its_own_process_s_while_it_lives_and_no_one_else_s() {
        let pid = std::process::id();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (end_tx, end_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            tid_tx.send(nix::unistd::gettid().as_raw() as u32).unwrap();
            // Lives until told to end.
            let _ = end_rx.recv();
        });
        let tid = tid_rx.recv().unwrap();
        assert!(thread_of(pid, tid), "a live thread");
        drop(end_tx);
        t.join().unwrap();
        // Joined, it is leaving: the kernel lets it go a moment after join returns.
        let gone = (0..1000).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(1));
            !thread_of(pid, tid)
        });
        assert!(gone, "an exited thread");
        assert!(
            thread_of(pid, nix::unistd::gettid().as_raw() as u32),
            "this thread"
        );
        assert!(thread_of(1, 1), "init's main thread");
        assert!(
            !thread_of(1, pid),
            "this process's main thread is not init's"
        );
    }

    #[test]
    fn stat_with_awkward_comm() {
        let line = b"4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 2983 43535 1 6 12 3 31 6 20 5 3 0 71390 5124096 945 18446744073709551615 1 2 3 0 0 0 65536 4 1132560123 1 0 0 17 1 0 3 0 0 0\n";
        let s = stat(line).unwrap();
        assert_eq!(s.state, b'S');
        assert_eq!((s.ppid, s.pgrp, s.session), (1, 4242, 4242));
        assert_eq!(s.cpu_ticks, 15);
        assert_eq!(s.child_ticks, 37);
        assert_eq!(s.nice, 5);
        assert_eq!(s.num_threads, 3);
        assert_eq!(s.start, 71390);
        assert_eq!(s.policy, 3);
    }

    #[test]
    fn this_process_reads_as_itself() {
        let me = std::process::id();
        // The test runs on a thread of its own: that thread is the one running.
        let tid = nix::unistd::gettid().as_raw() as u32;
        assert_eq!(read_stat(tid).unwrap().state, b'R');
        assert!(alive(me));
        assert!(pids().contains(&me));
        assert!(threads(me).unwrap().contains(&me));
        assert!(own_vm_size().unwrap() > 0);
        assert!(mem_available().unwrap() > 0);
        assert!(task_count().unwrap() >= 1);
        assert!(sysctl_u64("kernel.pid_max").unwrap() > 1);
    }

    #[test]
    fn procfs_lists_the_processes_a_plain_listing_does() {
        let plain = || -> std::collections::HashSet<u32> {
            numeric_entries("/proc").unwrap().into_iter().collect()
        };
        let before = plain();
        let listed: std::collections::HashSet<u32> = pids().into_iter().collect();
        let after = plain();
        // A process there before and after was there while procfs listed.
        let missing: Vec<u32> = before
            .intersection(&after)
            .filter(|pid| !listed.contains(pid))
            .copied()
            .collect();
        assert!(missing.is_empty(), "procfs did not list {missing:?}");
        assert!(listed.contains(&1));
        // This process's own threads count among its user's.
        let mine = read_stat(std::process::id()).unwrap().num_threads;
        assert!(threads_of_user(nix::unistd::getuid().as_raw()) >= u64::from(mine));
    }

    #[test]
    fn procfs_reads_memory_and_load_in_the_units_used_here() {
        use procfs::FromRead;
        // MemAvailable in bytes: the file's kB times 1024.
        let meminfo = "MemTotal:       24000000 kB\nMemFree:         1000000 kB\n\
                       MemAvailable:   20000000 kB\nBuffers:          100000 kB\n\
                       Cached:          2000000 kB\nSwapCached:            0 kB\n\
                       Active:          1000000 kB\nInactive:        1000000 kB\n\
                       SwapTotal:             0 kB\nSwapFree:              0 kB\n\
                       Dirty:                 0 kB\nWriteback:             0 kB\n\
                       Mapped:                0 kB\nSlab:                  0 kB\n\
                       Committed_AS:          0 kB\nVmallocTotal:          0 kB\n\
                       VmallocUsed:           0 kB\nVmallocChunk:          0 kB\n";
        let m = procfs::Meminfo::from_read(meminfo.as_bytes()).unwrap();
        assert_eq!(m.mem_available, Some(20_000_000 * 1024));
        // The tasks that exist: the total after the slash.
        let load = procfs::LoadAverage::from_read(&b"0.52 0.58 0.59 3/812 4242\n"[..]).unwrap();
        assert_eq!(load.max, 812);
    }

    #[test]
    fn a_sysctl_is_read_by_its_dotted_name() {
        assert_eq!(sysctl_path("kernel.pid_max"), "/proc/sys/kernel/pid_max");
        assert_eq!(
            sysctl_path("vm.max_map_count"),
            "/proc/sys/vm/max_map_count"
        );
        let raw = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap();
        assert_eq!(sysctl_text("kernel.pid_max").unwrap(), raw);
        assert_eq!(
            sysctl("kernel.pid_max").unwrap(),
            raw.trim().parse::<u64>().unwrap()
        );
        assert_eq!(sysctl_on("kernel.ostype"), None);
        // procfs's typed readers give what the plain read does.
        assert_eq!(pid_max(), sysctl_u64("kernel.pid_max"));
        assert_eq!(threads_max(), sysctl_u64("kernel.threads-max"));
        assert_eq!(max_map_count(), sysctl_u64("vm.max_map_count"));
    }

    #[test]
    fn a_sysctl_error_names_the_file_and_what_it_held() {
        let missing = format!("{:#}", sysctl("kernel.no_such_sysctl").unwrap_err());
        assert!(
            missing.starts_with("reading /proc/sys/kernel/no_such_sysctl: "),
            "{missing}"
        );
        assert_eq!(sysctl_u64("kernel.no_such_sysctl"), None);
        let text = std::fs::read_to_string("/proc/sys/kernel/ostype").unwrap();
        let not_a_number = sysctl("kernel.ostype").unwrap_err().to_string();
        assert_eq!(
            not_a_number,
            format!("/proc/sys/kernel/ostype holds {text:?}")
        );
    }

    #[test]
    fn entries_and_lines_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["0", "1", "2"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        assert_eq!(entry_count(dir.path()), Some(3));
        let maps = dir.path().join("2");
        std::fs::write(&maps, "a-b rw-p 0 00:00 0\nc-d r--p 0 00:00 0\n").unwrap();
        assert_eq!(line_count(&maps), Some(2));
        assert_eq!(entry_count(dir.path().join("gone")), None);
        assert_eq!(line_count(dir.path().join("gone")), None);
        // This process has its code mapped and, while /proc/self/fd is listed, that listing open.
        assert!(own_map_count().unwrap() > 1);
        assert!(own_open_files().unwrap() >= 1);
    }

    #[test]
    fn a_zombie_is_not_alive_and_a_reaped_child_is_gone() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while read_stat(pid).is_some_and(|s| s.state != b'Z') {
            assert!(std::time::Instant::now() < deadline, "true never exited");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!alive(pid));
        child.wait().unwrap();
        assert!(read_stat(pid).is_none());
    }
}
