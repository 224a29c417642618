//! The machine's own figures at each sweep: /proc/stat (busy time, context switches, each
//! CPU's times), PSI, whether autogroup is on, the run queues' schedstat, and the share of
//! each CPU real-time tasks must leave to fair ones.

use super::parse::{self, NS_PER_TICK};
use super::reader::read_path;
use super::{monotonic_ns, CpuTimes, MachineSample, Probe, ProbeConfig};
use super::{CONTENDED_IDLE, RESERVE_EVERY_NS};

impl Probe {
    /// /proc/stat, PSI, autogroup's switch, the run queues' schedstat and the fair server's
    /// reserve: the machine's figures of one sweep.
    pub(super) fn read_machine(&mut self, now: u64) -> MachineSample {
        let mut m = MachineSample::default();
        if let Ok(b) = self.proc_stat.read(&mut self.buf) {
            m.stat_ns = monotonic_ns();
            if let Some(ps) = parse::proc_stat(b) {
                m.cpus = ps.cpus.max(1);
                m.busy_ns = ps.busy_ticks * NS_PER_TICK;
                m.ctxt = ps.ctxt;
                m.procs_running = ps.procs_running;
                self.last_forks = ps.processes;
                if !ps.per_cpu.is_empty() {
                    let mut online = crate::sys::kernel::cpuset::CpuSet::new();
                    for c in &ps.per_cpu {
                        online.insert(c.id);
                    }
                    m.online = Some(online.to_string());
                    m.per_cpu = ps
                        .per_cpu
                        .iter()
                        .map(|c| CpuTimes {
                            id: c.id,
                            busy_ns: c.busy * NS_PER_TICK,
                            idle_ns: c.idle * NS_PER_TICK,
                            steal_ns: c.steal * NS_PER_TICK,
                            irq_ns: c.irq * NS_PER_TICK,
                        })
                        .collect();
                }
            }
        }
        if let Some(r) = &self.psi {
            if let Some((avg10, total)) = r.read(&mut self.buf).ok().and_then(parse::psi_some) {
                m.psi_some_avg10 = Some(avg10);
                m.psi_some_total_us = Some(total);
            }
        }
        if let Some(r) = &self.autogroup_enabled {
            m.autogroup = r
                .read(&mut self.buf)
                .ok()
                .and_then(parse::single_u64)
                .is_some_and(|v| v != 0);
        }
        if let Some(r) = &self.schedstat {
            if let Some((run, wait)) = r.read(&mut self.buf).ok().and_then(parse::proc_schedstat) {
                m.rq_run_ns = Some(run);
                m.rq_wait_ns = Some(wait);
            }
        }
        if self.reserve_ns == 0 || now.saturating_sub(self.reserve_ns) >= RESERVE_EVERY_NS {
            self.reserve_ns = now;
            self.fair_reserve = fair_reserve(&self.cfg, &mut self.buf);
        }
        m.fair_reserve = self.fair_reserve;
        m
    }

    /// Whether some CPU was idle for almost none of the interval since the last sweep.
    pub(super) fn contended(&mut self, m: &MachineSample) -> bool {
        let now: Vec<(u32, u64, u64)> = m
            .per_cpu
            .iter()
            .map(|c| (c.id, c.busy_ns, c.idle_ns))
            .collect();
        let busy = now.iter().any(|&(id, b1, i1)| {
            self.cpu_last
                .iter()
                .find(|(id0, _, _)| *id0 == id)
                .is_some_and(|&(_, b0, i0)| {
                    let busy = b1.saturating_sub(b0) as f64;
                    let idle = i1.saturating_sub(i0) as f64;
                    busy + idle > 0.0 && idle < CONTENDED_IDLE * (busy + idle)
                })
        });
        // Without per-CPU figures (an old fake tree), assume the worst: read the suspects.
        let unknown = self.cpu_last.is_empty() || now.is_empty();
        self.cpu_last = now;
        busy || unknown
    }
}

/// The share of each CPU real-time tasks must leave to fair ones: the fair server's
/// runtime / period (debugfs, kernel 6.12 and later), else RT throttling's complement.
/// None when neither can be read (the model takes the kernel's default).
fn fair_reserve(cfg: &ProbeConfig, buf: &mut Vec<u8>) -> Option<f64> {
    let server = cfg.sys_root.join("kernel/debug/sched/fair_server/cpu0");
    let read_u = |name: &str, buf: &mut Vec<u8>| {
        read_path(&server.join(name), buf)
            .ok()
            .and_then(|_| parse::single_u64(buf))
    };
    if let (Some(runtime), Some(period)) = (read_u("runtime", buf), read_u("period", buf)) {
        if period > 0 {
            return Some((runtime as f64 / period as f64).clamp(0.0, 1.0));
        }
    }
    read_path(&cfg.proc_root.join("sys/kernel/osrelease"), buf).ok()?;
    if release(buf)? >= procfs::KernelVersion::new(6, 12, 0) {
        // The fair server replaced RT throttling; its default is 50 ms in every second.
        return None;
    }
    let read_i = |name: &str, buf: &mut Vec<u8>| {
        read_path(&cfg.proc_root.join("sys/kernel").join(name), buf)
            .ok()
            .and_then(|_| parse::single_i64(buf))
    };
    let runtime = read_i("sched_rt_runtime_us", buf)?;
    let period = read_i("sched_rt_period_us", buf)?;
    if runtime < 0 || period <= 0 {
        return Some(0.0);
    }
    Some((1.0 - runtime as f64 / period as f64).clamp(0.0, 1.0))
}

/// The kernel release an osrelease text names ("6.18.44-fc" is 6.18.44), by procfs's parser.
fn release(osrelease: &[u8]) -> Option<procfs::KernelVersion> {
    std::str::from_utf8(osrelease).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use procfs::KernelVersion;

    #[test]
    fn releases_read_as_the_kernel_names_them() {
        assert_eq!(
            release(b"6.18.44-fc-v1045\n"),
            Some(KernelVersion::new(6, 18, 44))
        );
        let fair_server = KernelVersion::new(6, 12, 0);
        // A release candidate of 6.12 has the fair server already.
        assert!(release(b"6.12.0-rc3\n").unwrap() >= fair_server);
        assert!(release(b"5.15.0-91-generic\n").unwrap() < fair_server);
        assert!(release(b"6.9.12\n").unwrap() < fair_server);
        assert_eq!(release(b"not a release\n"), None);
    }
}
