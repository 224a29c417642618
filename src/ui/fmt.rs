//! Numbers as the dashboard prints them: short, fixed width, no false precision.

use std::time::Duration;

/// A rate or count with a k/M/G suffix, at most 5 characters: 0, 3.2, 885, 12.3k, 123k, 1.5M.
pub(crate) fn si(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    let (x, suffix) = if a >= 999_500_000.0 {
        (v / 1e9, "G")
    } else if a >= 999_500.0 {
        (v / 1e6, "M")
    } else if a >= 999.5 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let xa = x.abs();
    if suffix.is_empty() && xa >= 9.95 || xa >= 99.95 {
        format!("{x:.0}{suffix}")
    } else if a == 0.0 {
        "0".into()
    } else if xa < 0.05 && suffix.is_empty() {
        format!("{x:.2}")
    } else {
        format!("{x:.1}{suffix}")
    }
}

/// CPUs as a percentage of one CPU (top's convention: 200 = two whole CPUs).
pub fn pct(cpus: f64) -> String {
    if !cpus.is_finite() {
        return "-".into();
    }
    let p = cpus * 100.0;
    if p.abs() >= 99.95 {
        format!("{p:.0}")
    } else {
        format!("{p:.1}")
    }
}

/// An interval: 100ms, 500ms, 1s, 2.5s.
pub fn interval(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// A time window or elapsed time: 45s, 2m, 2m30s, 1h5m.
pub fn span(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        if s.is_multiple_of(60) {
            format!("{}m", s / 60)
        } else {
            format!("{}m{:02}s", s / 60, s % 60)
        }
    } else {
        format!("{}h{}m", s / 3600, (s % 3600) / 60)
    }
}

/// A latency in µs as at most 5 characters with its unit: 2.6µs, 29µs, 931µs, 1.2ms, 12ms,
/// 931ms, 1.2s, 137s.
pub fn latency(us: f64) -> String {
    if !us.is_finite() || us < 0.0 {
        return "-".into();
    }
    // Each range ends where rounding would need a sixth character.
    if us < 9.95 {
        format!("{us:.1}µs")
    } else if us < 999.5 {
        format!("{us:.0}µs")
    } else if us < 9_950.0 {
        format!("{:.1}ms", us / 1e3)
    } else if us < 999_500.0 {
        format!("{:.0}ms", us / 1e3)
    } else if us < 9_950_000.0 {
        format!("{:.1}s", us / 1e6)
    } else {
        format!("{:.0}s", us / 1e6)
    }
}

/// Cuts `s` to `width` characters, marking the cut with an ellipsis (as reports do).
pub(crate) fn clip(s: &str, width: usize) -> String {
    crate::record::text::fit(s, width)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn si_is_short() {
        for (x, text) in [
            (0.0, "0"),
            (3.21, "3.2"),
            (885.4, "885"),
            (12_345.0, "12.3k"),
            (123_456.0, "123k"),
            (999_999.0, "1.0M"),
            (1_500_000.0, "1.5M"),
            (0.01, "0.01"),
            (f64::NAN, "-"),
        ] {
            assert_eq!(si(x), text);
        }
    }

    #[test]
    fn pct_of_one_cpu() {
        assert_eq!(pct(0.4), "40.0");
        assert_eq!(pct(0.08), "8.0");
        assert_eq!(pct(1.57), "157");
    }

    #[test]
    fn times() {
        assert_eq!(interval(Duration::from_millis(500)), "500ms");
        assert_eq!(interval(Duration::from_millis(2000)), "2s");
        assert_eq!(interval(Duration::from_millis(2500)), "2.5s");
        assert_eq!(span(60.0), "1m");
        assert_eq!(span(150.0), "2m30s");
        assert_eq!(span(3900.0), "1h5m");
        assert_eq!(clip("abcdef", 4), "abc…");
    }

    #[test]
    fn latencies_carry_their_unit_in_five_characters() {
        for (us, text) in [
            (2.592, "2.6µs"),
            (9.96, "10µs"),
            (29.44, "29µs"),
            (931.0, "931µs"),
            (999.6, "1.0ms"),
            (1_234.0, "1.2ms"),
            (12_000.0, "12ms"),
            (931_000.0, "931ms"),
            (1_200_000.0, "1.2s"),
            (137_438_953.0, "137s"),
        ] {
            assert_eq!(latency(us), text);
            assert!(text.chars().count() <= 5);
        }
        assert_eq!(latency(f64::NAN), "-");
    }
}
