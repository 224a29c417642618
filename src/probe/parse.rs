//! Parsers for the /proc and cgroup text the probe reads. Pure functions on bytes, so the
//! fake-/proc tests and the real kernel go through the same code.

/// Nanoseconds per clock tick (USER_HZ is 100 on every Linux ABI that matters).
pub const NS_PER_TICK: u64 = 10_000_000;

// The one /proc/PID/stat parser lives with the plumbing's /proc reader (sys::proc), below
// the probe, so that what outside the probe reads a stat line parses it the same way.
pub use crate::sys::kernel::proc::{stat, stat_comm, Stat};

fn num<T: std::str::FromStr>(b: &[u8]) -> Option<T> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// /proc/PID/task/TID/schedstat: ns on CPU, ns waiting on a run queue, timeslices.
pub fn schedstat(buf: &[u8]) -> Option<(u64, u64, u64)> {
    let mut it = buf
        .split(|c| c.is_ascii_whitespace())
        .filter(|t| !t.is_empty());
    Some((num(it.next()?)?, num(it.next()?)?, num(it.next()?)?))
}

/// What the probe takes from a task's sched file (`/proc/PID/task/TID/sched`), all among its
/// first lines: `se.nr_migrations` (how many times it moved to another CPU) and its voluntary
/// and involuntary switches, the same counters status lists (`p->nvcsw`, `p->nivcsw`), at
/// three quarters of status's cost here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedCounts {
    pub migrations: Option<u64>,
    pub switches: Option<(u64, u64)>,
}

pub fn sched_counts(buf: &[u8]) -> SchedCounts {
    let (mut migrations, mut vol, mut invol) = (None, None, None);
    let field = |line: &[u8], name: &[u8]| -> Option<u64> {
        let rest = line.strip_prefix(name)?.trim_ascii_start();
        num(rest.strip_prefix(b":")?.trim_ascii())
    };
    for line in buf.split(|&c| c == b'\n') {
        match line.first() {
            Some(b's') => migrations = migrations.or_else(|| field(line, b"se.nr_migrations")),
            Some(b'n') => {
                vol = vol.or_else(|| field(line, b"nr_voluntary_switches"));
                invol = invol.or_else(|| field(line, b"nr_involuntary_switches"));
            }
            _ => {}
        }
        if migrations.is_some() && invol.is_some() {
            break;
        }
    }
    SchedCounts {
        migrations,
        switches: vol.zip(invol),
    }
}

#[cfg(test)]
/// The voluntary and involuntary context switches from a task's status file.
pub(crate) fn status_switches(buf: &[u8]) -> Option<(u64, u64)> {
    // They are the file's last two lines: look at its tail first.
    let tail = &buf[buf.len().saturating_sub(160)..];
    let tail = tail
        .iter()
        .position(|&c| c == b'\n')
        .map_or(tail, |i| &tail[i + 1..]);
    if let Some(found) = scan_switches(tail) {
        return Some(found);
    }
    scan_switches(buf)
}

/// What a task's status file says that the probe uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Status<'a> {
    pub vol: Option<u64>,
    pub invol: Option<u64>,
    /// `Cpus_allowed_list`, as the kernel prints it ("0-3,8").
    pub cpus_allowed: Option<&'a str>,
}

/// Switch counts and allowed CPUs from a task's status file. They are among its last lines:
/// only the tail is scanned when it holds them all.
pub fn status(buf: &[u8]) -> Status<'_> {
    let tail = &buf[buf.len().saturating_sub(1024)..];
    let tail = tail
        .iter()
        .position(|&c| c == b'\n')
        .map_or(tail, |i| &tail[i + 1..]);
    let found = scan_status(tail);
    if found.vol.is_some() && found.invol.is_some() && found.cpus_allowed.is_some() {
        return found;
    }
    scan_status(buf)
}

fn scan_status(buf: &[u8]) -> Status<'_> {
    let mut st = Status::default();
    for line in buf.split(|c| *c == b'\n') {
        if let Some(v) = line.strip_prefix(b"voluntary_ctxt_switches:") {
            st.vol = num(v.trim_ascii());
        } else if let Some(v) = line.strip_prefix(b"nonvoluntary_ctxt_switches:") {
            st.invol = num(v.trim_ascii());
        } else if let Some(v) = line.strip_prefix(b"Cpus_allowed_list:") {
            st.cpus_allowed = std::str::from_utf8(v.trim_ascii()).ok();
        }
    }
    st
}

#[cfg(test)]
fn scan_switches(buf: &[u8]) -> Option<(u64, u64)> {
    let mut vol = None;
    let mut invol = None;
    for line in buf.split(|c| *c == b'\n') {
        if let Some(v) = line.strip_prefix(b"voluntary_ctxt_switches:") {
            vol = num(v.trim_ascii());
        } else if let Some(v) = line.strip_prefix(b"nonvoluntary_ctxt_switches:") {
            invol = num(v.trim_ascii());
        }
    }
    Some((vol?, invol?))
}

/// What the machine-wide /proc/stat says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcStat {
    /// CPUs listed (cpuN lines).
    pub cpus: usize,
    /// Busy time over all CPUs (everything but idle and iowait), in ticks.
    pub busy_ticks: u64,
    pub ctxt: u64,
    /// Forks since boot: when it has not moved, no process was created anywhere.
    pub processes: u64,
    pub procs_running: u32,
    /// Per CPU line: its id and ticks.
    pub per_cpu: Vec<CpuLine>,
}

/// One cpuN line of /proc/stat, in ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuLine {
    pub id: u32,
    /// Everything but idle and iowait (steal included).
    pub busy: u64,
    /// Idle and iowait.
    pub idle: u64,
    /// Time the hypervisor ran something else while this CPU had work (when it says so).
    pub steal: u64,
    /// Time spent serving interrupts and softirqs (no task's: their own fields).
    pub irq: u64,
}

/// Parsed here, not by procfs's `KernelStats`: that numbers the cpuN lines by position, where
/// the kernel lists online CPUs only (a CPU offline would shift every id after it), and it
/// refuses a file without `btime` (docs/architecture.md, with what a trial of it cost).
pub fn proc_stat(buf: &[u8]) -> Option<ProcStat> {
    let mut s = ProcStat::default();
    let mut saw_cpu = false;
    for line in buf.split(|c| *c == b'\n') {
        let mut it = line.split(|c| *c == b' ').filter(|t| !t.is_empty());
        let Some(key) = it.next() else { continue };
        match key {
            b"cpu" => {
                let v: Vec<u64> = it.filter_map(num).collect();
                if v.len() < 4 {
                    return None;
                }
                // user nice system idle iowait irq softirq steal (guest is inside user).
                let total: u64 = v.iter().take(8).sum();
                let idle = v[3] + v.get(4).copied().unwrap_or(0);
                s.busy_ticks = total.saturating_sub(idle);
                saw_cpu = true;
            }
            k if k.starts_with(b"cpu") => {
                s.cpus += 1;
                let id = num::<u32>(&k[3..]);
                let v: Vec<u64> = it.filter_map(num).collect();
                if let (Some(id), true) = (id, v.len() >= 4) {
                    let total: u64 = v.iter().take(8).sum();
                    let idle = v[3] + v.get(4).copied().unwrap_or(0);
                    s.per_cpu.push(CpuLine {
                        id,
                        busy: total.saturating_sub(idle),
                        idle,
                        steal: v.get(7).copied().unwrap_or(0),
                        irq: v.get(5).copied().unwrap_or(0) + v.get(6).copied().unwrap_or(0),
                    });
                }
            }
            b"ctxt" => s.ctxt = num(it.next()?)?,
            b"processes" => s.processes = num(it.next()?)?,
            b"procs_running" => s.procs_running = num(it.next()?)?,
            _ => {}
        }
    }
    saw_cpu.then_some(s)
}

/// /proc/pressure/cpu "some" line: (avg10, total µs), parsed by procfs from the probe's own
/// read of the file (kept open, re-read with pread like every file read at each sweep). The
/// "some" line alone: kernels 4.20 to 5.12 print no "full" line for the CPU, which procfs's
/// whole-file `CpuPressure` requires.
pub(crate) fn psi_some(buf: &[u8]) -> Option<(f64, u64)> {
    let text = std::str::from_utf8(buf).ok()?;
    let line = text.lines().find(|l| l.starts_with("some "))?;
    let some = procfs::parse_pressure_record(line).ok()?;
    Some((decimal_f64(some.avg10), some.total))
}

/// The f64 of the decimal an f32 was parsed from: the kernel prints avg10 with two decimals
/// ("5.47"), procfs keeps it as an f32, and the f32's shortest decimal form is that text again
/// (an f32 holds any decimal of up to 6 significant digits), so reading it back as an f64
/// gives the figure a direct parse would (5.47, not 5.4699997901916504). No allocation: the
/// digits are written on the stack.
fn decimal_f64(v: f32) -> f64 {
    use std::io::Write;
    let mut digits = [0u8; 64];
    let mut rest = &mut digits[..];
    if write!(rest, "{v}").is_err() {
        return f64::from(v);
    }
    let n = 64 - rest.len();
    std::str::from_utf8(&digits[..n])
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(f64::from(v))
}

/// The root autogroup's id: tasks in it are not grouped.
pub(crate) const ROOT_AUTOGROUP: u64 = 0;

/// /proc/PID/autogroup: "/autogroup-5 nice 0" → (5, 0). The kernel prints nothing for a task
/// in the root autogroup (a session never made by setsid, such as init's): that is id 0, the
/// kernel's own id for it, whose tasks compete one by one in the root task group.
pub fn autogroup(buf: &[u8]) -> Option<(u64, i32)> {
    let text = std::str::from_utf8(buf).ok()?;
    if text.trim().is_empty() {
        return Some((ROOT_AUTOGROUP, 0));
    }
    let mut it = text.split_whitespace();
    let id = it.next()?.strip_prefix("/autogroup-")?.parse().ok()?;
    if it.next()? != "nice" {
        return None;
    }
    Some((id, it.next()?.parse().ok()?))
}

/// /proc/schedstat (version 15+): per-CPU run and wait totals in ns, summed. None when the
/// kernel does not have it or the format is unknown.
pub(crate) fn proc_schedstat(buf: &[u8]) -> Option<(u64, u64)> {
    let text = std::str::from_utf8(buf).ok()?;
    let mut run = 0u64;
    let mut wait = 0u64;
    let mut seen = false;
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let Some(key) = it.next() else { continue };
        if key.starts_with("cpu") && key.len() > 3 {
            // yld_count legacy sched_count sched_goidle ttwu_count ttwu_local rq_cpu_time
            // run_delay pcount
            let v: Vec<u64> = it.filter_map(|t| t.parse().ok()).collect();
            if v.len() < 9 {
                return None;
            }
            run += v[6];
            wait += v[7];
            seen = true;
        }
    }
    seen.then_some((run, wait))
}

/// The task's group in the cpu controller's hierarchy, from /proc/PID/cgroup: the v1 line
/// whose controllers include `cpu`, else the v2 line (`0::/path`). (path, is v2).
pub(crate) fn cpu_cgroup(buf: &[u8]) -> Option<(String, bool)> {
    let text = std::str::from_utf8(buf).ok()?;
    let mut v2 = None;
    for line in text.lines() {
        let mut it = line.splitn(3, ':');
        let (_id, ctrl, path) = (it.next()?, it.next()?, it.next()?);
        if ctrl.is_empty() {
            v2 = Some(path.to_string());
        } else if ctrl.split(',').any(|c| c == "cpu") {
            return Some((path.to_string(), false));
        }
    }
    v2.map(|p| (p, true))
}

/// A named integer line of a cgroup stat file (cpu.stat): `name N`.
pub(crate) fn keyed_u64(buf: &[u8], key: &str) -> Option<u64> {
    buf.split(|c| *c == b'\n').find_map(|l| {
        let rest = l.strip_prefix(key.as_bytes())?.strip_prefix(b" ")?;
        num(rest.trim_ascii())
    })
}

/// v2 cpu.max: "max 100000" (no limit) or "20000 100000" → quota in CPUs.
pub(crate) fn cpu_max(buf: &[u8]) -> Option<Option<f64>> {
    let text = std::str::from_utf8(buf).ok()?;
    let mut it = text.split_whitespace();
    let quota = it.next()?;
    let period: f64 = it.next().map_or(Some(100_000.0), |p| p.parse().ok())?;
    if quota == "max" {
        return Some(None);
    }
    let q: f64 = quota.parse().ok()?;
    (period > 0.0).then_some(Some(q / period))
}

/// A single signed integer file (cpu.cfs_quota_us, sched_rt_runtime_us: -1 = none).
pub(crate) fn single_i64(buf: &[u8]) -> Option<i64> {
    num(buf.trim_ascii())
}

/// cgroup v2 cpu.stat usage_usec, in ns.
pub(crate) fn cgroup2_usage_ns(buf: &[u8]) -> Option<u64> {
    let line = buf
        .split(|c| *c == b'\n')
        .find(|l| l.starts_with(b"usage_usec "))?;
    num::<u64>(line[b"usage_usec ".len()..].trim_ascii()).map(|us| us * 1000)
}

/// A single integer file (cpuacct.usage, cpu.shares, cpu.weight).
pub(crate) fn single_u64(buf: &[u8]) -> Option<u64> {
    num(buf.trim_ascii())
}

/// The kernel's sched_prio_to_weight table (kernel/sched/core.c), nice -20..=19.
pub const PRIO_TO_WEIGHT: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

/// The CFS/EEVDF load weight of a nice value.
pub fn nice_to_weight(nice: i32) -> f64 {
    PRIO_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize] as f64
}

/// SCHED_IDLE tasks get the kernel's WEIGHT_IDLEPRIO.
pub(crate) const WEIGHT_IDLE: f64 = 3.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_and_switches_from_a_sched_file() {
        // This kernel's file (6.18), and the status of the same task: the same counters.
        let sched = b"schedlab (4242, #threads: 3)\n\
            -------------------------------------------------------------------\n\
            se.exec_start                                :        813976.342705\n\
            se.sum_exec_runtime                          :             9.000000\n\
            se.nr_migrations                             :                    3\n\
            nr_switches                                  :                  126\n\
            nr_voluntary_switches                        :                  120\n\
            nr_involuntary_switches                      :                    6\n\
            se.load.weight                               :              1048576\n";
        let status =
            b"Name:\tschedlab\nvoluntary_ctxt_switches:\t120\nnonvoluntary_ctxt_switches:\t6\n";
        let counts = sched_counts(sched);
        assert_eq!(counts.migrations, Some(3));
        assert_eq!(counts.switches, status_switches(status));
        assert_eq!(counts.switches, Some((120, 6)));
        // A kernel whose file lacks either count gives none (status is read instead).
        assert_eq!(
            sched_counts(b"se.nr_migrations : 1\nnr_voluntary_switches : 2\n").switches,
            None
        );
        assert_eq!(
            sched_counts(b"se.nr_migrations_x : \n"),
            SchedCounts::default()
        );
        assert_eq!(sched_counts(b""), SchedCounts::default());
    }

    #[test]
    fn machine_files() {
        let ps = proc_stat(b"cpu  100 1 50 800 20 0 9 0 0 0\ncpu0 1 0 0 0 0 0 0 0 0 0\ncpu1 1 0 0 0 0 0 0 0 0 0\nintr 5 1 2\nctxt 369267\nbtime 1\nprocesses 999\nprocs_running 3\nprocs_blocked 0\n").unwrap();
        assert_eq!(ps.cpus, 2);
        assert_eq!(ps.busy_ticks, 160);
        assert_eq!((ps.ctxt, ps.processes, ps.procs_running), (369267, 999, 3));
        assert_eq!(
            psi_some(b"some avg10=5.47 avg60=4.07 avg300=4.94 total=36218594\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"),
            Some((5.47, 36218594))
        );
        // Kernels before 5.13 print no "full" line for the CPU.
        assert_eq!(
            psi_some(b"some avg10=0.12 avg60=4.07 avg300=4.94 total=7\n"),
            Some((0.12, 7))
        );
        assert_eq!(
            psi_some(b"full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"),
            None
        );
        assert_eq!(psi_some(b"some avg10=x avg60=0 avg300=0 total=7\n"), None);
        assert_eq!(autogroup(b"/autogroup-5 nice -3\n"), Some((5, -3)));
        assert_eq!(autogroup(b""), Some((ROOT_AUTOGROUP, 0)));
        assert_eq!(autogroup(b"/autogroup-x nice 0\n"), None);
        assert_eq!(schedstat(b"158183 76538 2\n"), Some((158183, 76538, 2)));
        assert_eq!(
            status_switches(
                b"Name:\tx\nvoluntary_ctxt_switches:\t17\nnonvoluntary_ctxt_switches:\t4\n"
            ),
            Some((17, 4))
        );
        // A long file with the counts at its end, and one with them elsewhere.
        let long = format!(
            "{}voluntary_ctxt_switches:\t170\nnonvoluntary_ctxt_switches:\t40\n",
            "Filler:\tx\n".repeat(100)
        );
        assert_eq!(status_switches(long.as_bytes()), Some((170, 40)));
        let early = format!(
            "voluntary_ctxt_switches:\t1\nnonvoluntary_ctxt_switches:\t2\n{}",
            "Filler:\tx\n".repeat(100)
        );
        assert_eq!(status_switches(early.as_bytes()), Some((1, 2)));
        assert_eq!(
            cgroup2_usage_ns(b"usage_usec 1500\nuser_usec 1000\n"),
            Some(1_500_000)
        );
        assert_eq!(
            proc_schedstat(b"version 15\ntimestamp 1\ncpu0 0 0 0 0 0 0 100 20 5\ndomain0 3 1\ncpu1 0 0 0 0 0 0 50 10 2\n"),
            Some((150, 30))
        );
    }

    #[test]
    fn proc_stat_keeps_the_ids_of_online_cpus() {
        use procfs::FromReadSI;
        // cpu1 offline: the kernel lists cpu0 and cpu2.
        let text = b"cpu  30 0 0 70 0 0 0 0 0 0\ncpu0 10 0 0 40 0 0 0 0 0 0\n\
                     cpu2 20 0 0 30 0 0 0 0 0 0\nctxt 5\nbtime 1\nprocesses 9\n";
        let ids: Vec<u32> = proc_stat(text)
            .unwrap()
            .per_cpu
            .iter()
            .map(|c| c.id)
            .collect();
        assert_eq!(ids, [0, 2]);
        // procfs's KernelStats has the two lines by position only: no id to tell cpu2 by.
        let ks = procfs::KernelStats::from_read(&text[..], procfs::current_system_info()).unwrap();
        assert_eq!(ks.cpu_time.len(), 2);
        // And it refuses a file without btime, which the probe reads.
        let short = b"cpu  1 0 0 1 0 0 0 0 0 0\nctxt 5\nprocesses 9\n";
        assert!(procfs::KernelStats::from_read(&short[..], procfs::current_system_info()).is_err());
        assert!(proc_stat(short).is_some());
    }

    #[test]
    fn psi_averages_come_out_as_the_kernel_printed_them() {
        // Every avg10 the kernel can print (0.00 to 100.00, two decimals), through procfs's f32,
        // is the f64 a direct parse of its text gives.
        for k in 0..=10_000u32 {
            let text = format!("{}.{:02}", k / 100, k % 100);
            let line = format!("some avg10={text} avg60=0.00 avg300=0.00 total={k}\n");
            let direct: f64 = text.parse().unwrap();
            assert_eq!(
                psi_some(line.as_bytes()),
                Some((direct, u64::from(k))),
                "{text}"
            );
        }
        assert_eq!(decimal_f64(f32::MAX) as f32, f32::MAX);
        assert_eq!(decimal_f64(1e-7), 1e-7);
    }

    #[test]
    fn placement_files() {
        let line = b"599 (cat) R 594 594 1094 0 -1 4194304 101 0 0 0 0 0 0 0 20 0 1 0 83451 3133440 405 18446744073709551615 94242013835264 94242013855145 140737333911504 0 0 0 0 0 0 0 0 0 17 1 7 1 0 0 0\n";
        let st = stat(line).unwrap();
        assert_eq!(
            (st.state, st.processor, st.rt_priority, st.policy),
            (b'R', Some(1), 7, 1)
        );
        assert_eq!(stat_comm(line), Some("cat"));
        let status_text = format!(
            "Name:\tcat\n{}Cpus_allowed:\t3\nCpus_allowed_list:\t0-1\nMems_allowed_list:\t0\nvoluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t2\n",
            "Filler:\tx\n".repeat(200)
        );
        let st = status(status_text.as_bytes());
        assert_eq!(
            (st.vol, st.invol, st.cpus_allowed),
            (Some(5), Some(2), Some("0-1"))
        );
        assert_eq!(
            cpu_cgroup(b"9:name=systemd:/\n2:cpuacct:/\n1:cpu:/schedlab/w1\n0::/\n"),
            Some(("/schedlab/w1".to_string(), false))
        );
        assert_eq!(
            cpu_cgroup(b"0::/user.slice/x\n"),
            Some(("/user.slice/x".to_string(), true))
        );
        assert_eq!(
            cpu_cgroup(b"4:cpu,cpuacct:/a\n"),
            Some(("/a".to_string(), false))
        );
        assert_eq!(cpu_max(b"max 100000\n"), Some(None));
        assert_eq!(cpu_max(b"20000 100000\n"), Some(Some(0.2)));
        assert_eq!(
            keyed_u64(
                b"nr_periods 11\nnr_throttled 10\nthrottled_time 785368523\n",
                "throttled_time"
            ),
            Some(785368523)
        );
        assert_eq!(keyed_u64(b"nr_throttled_x 3\n", "nr_throttled"), None);
        assert_eq!(single_i64(b"-1\n"), Some(-1));
        let ps = proc_stat(b"cpu  100 1 50 800 20 0 9 3 0 0\ncpu0 60 0 20 300 10 0 5 0 0 0\ncpu1 40 1 30 500 10 0 4 3 0 0\nctxt 1\n").unwrap();
        let line = |id, busy, idle, steal, irq| CpuLine {
            id,
            busy,
            idle,
            steal,
            irq,
        };
        assert_eq!(
            ps.per_cpu,
            vec![line(0, 85, 310, 0, 5), line(1, 78, 510, 3, 4)]
        );
    }

    #[test]
    fn weights_follow_the_kernel_table() {
        assert_eq!(nice_to_weight(0), 1024.0);
        assert_eq!(nice_to_weight(-20), 88761.0);
        assert_eq!(nice_to_weight(19), 15.0);
        assert_eq!(nice_to_weight(1), 820.0);
    }
}
