//! How figures read in a terminal: numbers scaled to k, M, G with three significant digits,
//! confidence intervals that do not cross zero for quantities that cannot be negative, and
//! lines wrapped to fit a 100-column terminal.

use crate::model::stats::{num, Summary};

/// The width every text report fits.
pub const COLUMNS: usize = 100;

/// A number a person reads at a glance: `1303576696` is `1.30 G`, `61235` is `61.2 k` (three
/// significant digits, k = 10³, M = 10⁶, G = 10⁹, T = 10¹²); below 1000 as
/// [`num`] prints it (`512.3`, `0.981`).
pub fn human(x: f64) -> String {
    if !x.is_finite() || x.abs() < 999.5 {
        return num(x);
    }
    let (scale, suffix) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(s, _)| x.abs() >= s * 0.9995)
        .unwrap_or((1e12, "T"));
    let v = x / scale;
    let a = v.abs();
    if a >= 99.95 {
        format!("{v:.0} {suffix}")
    } else if a >= 9.995 {
        format!("{v:.1} {suffix}")
    } else {
        format!("{v:.2} {suffix}")
    }
}

/// [`human`] with a sign: a difference.
pub fn signed(x: f64) -> String {
    let s = human(x);
    if x > 0.0 {
        format!("+{s}")
    } else {
        s
    }
}

/// How a report shows the 95% interval of a mean.
#[derive(Clone, Debug, PartialEq)]
pub enum Interval {
    /// One run: no spread, no interval.
    None,
    /// Two runs: Student's t with one degree of freedom is 12.7, so the interval is ±12.7
    /// standard errors wide and says nothing (it read `-5607268918 .. 8214422310` for a
    /// throughput); the report says so instead of printing it.
    TwoRuns,
    /// `lo..hi`, with `clamped` when the low end fell below zero and was raised to 0 (every
    /// figure schedlab reports is a rate, a share, a percentage or a time: none is negative).
    Shown { lo: f64, hi: f64, clamped: bool },
}

impl Interval {
    pub fn of(s: &Summary) -> Interval {
        match (s.n, s.ci95_low, s.ci95_high) {
            (2, _, _) => Interval::TwoRuns,
            (_, Some(lo), Some(hi)) => Interval::Shown {
                lo: lo.max(0.0),
                hi: hi.max(0.0),
                clamped: lo < 0.0,
            },
            _ => Interval::None,
        }
    }

    /// The table cell: `1.28 G..1.33 G`, `0*..4.12` (clamped), `2 runs`, `-`.
    pub fn cell(&self) -> String {
        match self {
            Interval::None => "-".into(),
            Interval::TwoRuns => "(2 runs)".into(),
            Interval::Shown { lo, hi, clamped } => {
                let lo = if *clamped { "0*".into() } else { human(*lo) };
                format!("{lo}..{}", human(*hi))
            }
        }
    }
}

/// The note under a table that showed `(2 runs)` cells.
pub const TWO_RUNS_NOTE: &str = "(2 runs): two repeats cannot give a meaningful 95% interval \
    (Student's t is 12.7 with one degree of freedom); use --repeat 5 or more";
/// The note under a table that showed a clamped interval.
pub const CLAMPED_NOTE: &str =
    "0*: the interval's low end fell below zero and is shown as 0 (none of these figures can be \
     negative); with so few or so spread runs, trust the interval little";

/// Appends `s` to `out` as one paragraph of a report for people: lines of at most
/// [`COLUMNS`], those after the first indented by `indent`.
pub fn push_wrapped(out: &mut String, s: &str, indent: usize) {
    out.push_str(&wrap(s, COLUMNS, indent));
    out.push('\n');
}

/// `text` as lines of at most `width` characters: broken at spaces, every line after the
/// first indented by `indent` spaces; a word longer than a line stays whole.
pub fn wrap(text: &str, width: usize, indent: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    let lead = text.len() - text.trim_start().len();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if line.is_empty() {
            line = if out.is_empty() {
                " ".repeat(lead)
            } else {
                " ".repeat(indent)
            };
            line.push_str(word);
        } else if line.chars().count() + 1 + word.chars().count() <= width {
            line.push(' ');
            line.push_str(word);
        } else {
            out.push_str(&line);
            out.push('\n');
            line = " ".repeat(indent) + word;
        }
    }
    out.push_str(&line);
    out
}

/// `s` cut to `width` characters, its end replaced by `…` when it was longer (nothing at
/// width 0). The dashboard's cells are cut by the same function (`ui::fmt::clip`).
pub fn fit(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_owned();
    }
    if width == 0 {
        return String::new();
    }
    let mut t: String = s.chars().take(width - 1).collect();
    t.push('…');
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::stats::summarize;

    #[test]
    fn large_numbers_read_at_a_glance() {
        for (x, text) in [
            (1_303_576_696.0, "1.30 G"),
            (61_235.0, "61.2 k"),
            (999.4, "999.4"),
            (999.7, "1.00 k"),
            (123_456.0, "123 k"),
            (999_999.0, "1.00 M"),
            (-5_607_268_918.0, "-5.61 G"),
            (0.981, "0.981"),
            (4.2e13, "42.0 T"),
        ] {
            assert_eq!(human(x), text);
        }
        assert_eq!(signed(1500.0), "+1.50 k");
        assert_eq!(signed(-2.0), "-2.00");
    }

    #[test]
    fn intervals_never_cross_zero_and_two_runs_give_none() {
        // The figures: two throughputs far apart.
        let two = summarize(&[1.0e9, 1.6e9]).unwrap();
        assert_eq!(Interval::of(&two), Interval::TwoRuns);
        assert_eq!(Interval::of(&two).cell(), "(2 runs)");
        let one = summarize(&[5.0]).unwrap();
        assert_eq!(Interval::of(&one).cell(), "-");
        let spread = summarize(&[0.1, 0.1, 9.0]).unwrap();
        assert!(spread.ci95_low.unwrap() < 0.0);
        let i = Interval::of(&spread);
        assert!(matches!(i, Interval::Shown { lo, clamped: true, .. } if lo == 0.0));
        assert!(i.cell().starts_with("0*.."), "{}", i.cell());
        let tight = summarize(&[1.0e9, 1.01e9, 1.02e9]).unwrap();
        assert_eq!(Interval::of(&tight).cell(), "985 M..1.03 G");
    }

    #[test]
    fn long_lines_wrap_at_spaces_with_an_indent() {
        let w = wrap("  warning: one two three four", 16, 4);
        assert_eq!(w, "  warning: one\n    two three\n    four");
        assert!(w.lines().all(|l| l.chars().count() <= 16));
        assert_eq!(wrap("short", 100, 2), "short");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abc", 4), "abc");
    }
}
