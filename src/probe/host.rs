//! What machine a run measured, for results and recordings that carry it: host name, the
//! kernel's version string, the CPU model, cpu0's cpufreq governor and the scheduler settings
//! the kernel shows this user. Each read is one small file, taken once per run; a file that
//! is absent or unreadable (another architecture, no cpufreq, debugfs root-only) gives None or
//! is left out, never an error.

use std::fs;

/// The host's name, as `uname -n` says it.
pub fn hostname() -> Option<String> {
    nix::sys::utsname::uname()
        .ok()
        .map(|u| u.nodename().to_string_lossy().trim().to_owned())
        .filter(|h| !h.is_empty())
}

/// The kernel's version string (`uname -v`: build number, date, PREEMPT flavour).
pub fn kernel_version() -> Option<String> {
    nix::sys::utsname::uname()
        .ok()
        .map(|u| u.version().to_string_lossy().trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// The CPU model: /proc/cpuinfo's first "model name" (x86, and arm64 where the kernel gives
/// one), else its "Hardware" or "cpu model" line.
pub fn cpu_model() -> Option<String> {
    cpu_model_of(&fs::read_to_string("/proc/cpuinfo").ok()?)
}

/// The CPU model named in a /proc/cpuinfo text. Not procfs's `CpuInfo`: it skips the lines
/// after a blank one, where arm64 prints "Hardware", and cuts a value at its second colon.
pub fn cpu_model_of(cpuinfo: &str) -> Option<String> {
    ["model name", "Hardware", "cpu model"]
        .iter()
        .find_map(|key| {
            cpuinfo.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == *key).then(|| v.trim().to_owned())
            })
        })
        .filter(|m| !m.is_empty())
}

/// cpu0's cpufreq governor ("performance", "schedutil", ...); None without cpufreq (most
/// virtual machines).
pub fn cpufreq_governor() -> Option<String> {
    fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
        .ok()
        .map(|g| g.trim().to_owned())
        .filter(|g| !g.is_empty())
}

/// Where debugfs shows EEVDF's base slice (root only, when debugfs is mounted).
const BASE_SLICE: &str = "/sys/kernel/debug/sched/base_slice_ns";

/// EEVDF's base slice in ns: debugfs's figure where it can be read, else the kernel's default
/// for this many CPUs (0.75 ms times 1 + log2 of the CPUs, counted up to 8).
pub fn base_slice_ns(cpus: usize) -> u64 {
    fs::read_to_string(BASE_SLICE)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| 750_000 * (1 + cpus.clamp(1, 8).ilog2() as u64))
}

/// The scheduler settings this user can read, by name, sorted: every readable
/// `/proc/sys/kernel/sched_*` file as its sysctl name (`kernel.sched_rt_runtime_us`), and
/// `debug/sched/base_slice_ns` where debugfs lets this user read it.
pub fn sched_settings() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = fs::read_dir("/proc/sys/kernel")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with("sched_") || e.file_type().ok()?.is_dir() {
                return None;
            }
            let value = fs::read_to_string(e.path()).ok()?;
            Some((format!("kernel.{name}"), one_line(&value)))
        })
        .collect();
    out.sort();
    if let Ok(v) = fs::read_to_string(BASE_SLICE) {
        out.push(("debug/sched/base_slice_ns".into(), one_line(&v)));
    }
    out
}

/// A setting's text on one line: its lines joined by a space, trailing newline dropped.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_model_is_the_first_model_name() {
        let x86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel\t\t: 49\n\
                   model name\t: AMD EPYC 7B12\nprocessor\t: 1\nmodel name\t: other\n";
        assert_eq!(cpu_model_of(x86).as_deref(), Some("AMD EPYC 7B12"));
        let arm = "processor\t: 0\nBogoMIPS\t: 50.00\nHardware\t: BCM2835\n";
        assert_eq!(cpu_model_of(arm).as_deref(), Some("BCM2835"));
        assert_eq!(cpu_model_of("processor : 0\n"), None);
    }

    #[test]
    fn procfs_cpuinfo_would_lose_what_is_read_here() {
        use procfs::FromRead;
        // arm64 prints "Hardware" after the processors' blocks, past a blank line.
        let arm = "processor\t: 0\nBogoMIPS\t: 50.00\n\nHardware\t: BCM2835\n";
        let info = procfs::CpuInfo::from_read(arm.as_bytes()).unwrap();
        assert_eq!(info.get_field(0, "Hardware"), None);
        assert_eq!(cpu_model_of(arm).as_deref(), Some("BCM2835"));
        // A model name with a colon in it is cut there.
        let colon = "processor\t: 0\nmodel name\t: Vendor CPU: rev 2\n";
        let info = procfs::CpuInfo::from_read(colon.as_bytes()).unwrap();
        assert_eq!(info.model_name(0), Some("Vendor CPU"));
        assert_eq!(cpu_model_of(colon).as_deref(), Some("Vendor CPU: rev 2"));
    }

    #[test]
    fn settings_read_here_are_sorted_one_line_sysctls() {
        let s = sched_settings();
        let names: Vec<&str> = s.iter().map(|(n, _)| n.as_str()).collect();
        // base_slice_ns, when readable, comes last on purpose, after the sorted sysctls.
        let sysctls: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| n.starts_with("kernel."))
            .collect();
        assert!(sysctls.windows(2).all(|w| w[0] < w[1]), "{sysctls:?}");
        assert!(s.iter().all(|(_, v)| !v.contains('\n')));
        if std::path::Path::new("/proc/sys/kernel/sched_autogroup_enabled").exists() {
            assert!(
                names.contains(&"kernel.sched_autogroup_enabled"),
                "{names:?}"
            );
        }
    }
}
