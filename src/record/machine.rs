//! The machine and the run a result file or recording came from, so it can travel: a figure
//! from another kernel, CPU, governor or scheduler setting reads differently, and `compare`
//! says so. Read once per run, through the probe ([`crate::probe::host`]).

use serde::{Deserialize, Serialize};

/// The machine the results come from. Everything after `autogroup` came in schema 4: absent
/// (None, empty) in older files, and where this machine does not show it.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// `uname -r`.
    pub kernel: String,
    /// CPUs the workloads could use.
    pub cpus: usize,
    /// Whether the kernel's autogroup was enabled.
    pub autogroup: bool,
    /// `uname -n`.
    pub hostname: Option<String>,
    /// `uname -v`: the kernel's build and preemption flavour.
    pub kernel_version: Option<String>,
    /// /proc/cpuinfo's "model name".
    pub cpu_model: Option<String>,
    /// cpu0's cpufreq scaling_governor, where readable.
    pub cpufreq_governor: Option<String>,
    /// The scheduler settings readable by the user who ran it, sorted by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sched: Vec<SchedSetting>,
}

/// One scheduler setting: `kernel.sched_rt_runtime_us` = `950000`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedSetting {
    pub name: String,
    pub value: String,
}

impl Host {
    /// This machine now, with the CPU count and autogroup as the probe saw them.
    pub fn here(cpus: usize, autogroup: bool) -> Host {
        use crate::probe::host;
        Host {
            kernel: kernel_release(),
            cpus,
            autogroup,
            hostname: host::hostname(),
            kernel_version: host::kernel_version(),
            cpu_model: host::cpu_model(),
            cpufreq_governor: host::cpufreq_governor(),
            sched: host::sched_settings()
                .into_iter()
                .map(|(name, value)| SchedSetting { name, value })
                .collect(),
        }
    }

    /// Every field a comparison looks at, by name, with its value when known, in a fixed
    /// order: what makes two machines' figures differ.
    pub fn fields(&self) -> Vec<(String, Option<String>)> {
        let mut out = vec![
            ("kernel".to_owned(), Some(self.kernel.clone())),
            ("kernel version".to_owned(), self.kernel_version.clone()),
            ("host".to_owned(), self.hostname.clone()),
            ("CPU model".to_owned(), self.cpu_model.clone()),
            ("CPUs".to_owned(), Some(self.cpus.to_string())),
            ("cpufreq governor".to_owned(), self.cpufreq_governor.clone()),
            (
                "autogroup".to_owned(),
                Some(if self.autogroup { "on" } else { "off" }.to_owned()),
            ),
        ];
        out.extend(
            self.sched
                .iter()
                .map(|s| (s.name.clone(), Some(s.value.clone()))),
        );
        out
    }
}

/// The commit schedlab was built from (`git rev-parse --short HEAD` at build time), or
/// "unknown" when built outside a git checkout.
pub const GIT_COMMIT: &str = env!("SCHEDLAB_GIT_COMMIT");

/// This process's command line, as it was given.
pub fn command_line() -> Vec<String> {
    std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// The time now, in UTC, as RFC 3339 to the second: `2026-12-06T02:11:19Z`.
pub fn now_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339_utc(secs)
}

/// Seconds since the Unix epoch as an RFC 3339 UTC time (the proleptic Gregorian calendar,
/// Howard Hinnant's days-to-civil algorithm).
pub fn rfc3339_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

/// `uname -r`.
pub(crate) fn kernel_release() -> String {
    nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_else(|_| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_utc() {
        // As `date -u -d @SECONDS` has them.
        for (secs, text) in [
            (0, "1970-01-01T00:00:00Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (1_796_523_079, "2026-12-06T02:11:19Z"),
            (4_107_542_399, "2100-02-28T23:59:59Z"),
        ] {
            assert_eq!(rfc3339_utc(secs), text);
        }
        let now = now_utc();
        assert_eq!(now.len(), 20, "{now}");
    }

    #[test]
    fn this_machine_is_described() {
        let h = Host::here(2, true);
        assert!(!h.kernel.is_empty());
        assert_eq!((h.cpus, h.autogroup), (2, true));
        assert!(h.hostname.is_some() && h.kernel_version.is_some());
        assert!(!GIT_COMMIT.is_empty());
        let f = h.fields();
        assert_eq!(f[0].0, "kernel");
        assert_eq!(f.len(), 7 + h.sched.len());
    }
}
