//! Statistics over repeated runs: mean, spread, Student-t confidence intervals, and Welch's
//! test for whether two sets of runs differ. Pure functions on plain numbers.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Confidence level of every interval schedlab prints.
pub(crate) const CONFIDENCE: f64 = 0.95;

/// A figure whose coefficient of variation across repeats exceeds this is flagged as too
/// noisy to trust: loopback chat runs (those of the 2002 chatroom benchmark thread) swing by
/// several percent from run to run, so a difference smaller than that spread means nothing.
pub(crate) const NOISY_CV: f64 = 0.05;

/// One figure across repeats: what it is (`what`: a metric's name and unit, a latency
/// figure's name), the value of each repeat, and their statistics, all written as fields of
/// one object. Every metric and latency figure of a results file is one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spread<K> {
    #[serde(flatten)]
    pub what: K,
    /// The value of each repeat that measured it, in order.
    pub runs: Vec<f64>,
    /// Their statistics (n, mean, std_dev, min, max, ci95_low, ci95_high, cv), written as
    /// fields of this object.
    #[serde(flatten)]
    pub summary: Summary,
    /// Present when the figure should not be trusted, saying why.
    pub warning: Option<String>,
}

impl<K> Spread<K> {
    /// `what` across these values; None without any.
    pub fn of(what: K, runs: Vec<f64>) -> Option<Self> {
        let summary = summarize(&runs)?;
        Some(Spread {
            what,
            warning: summary.noise().map(|n| n.to_string()),
            runs,
            summary,
        })
    }
}

/// A metric over n repeats.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n - 1 in the denominator); None with one run.
    pub std_dev: Option<f64>,
    pub min: f64,
    pub max: f64,
    /// 95% confidence interval of the mean (Student t, n - 1 degrees of freedom).
    pub ci95_low: Option<f64>,
    pub ci95_high: Option<f64>,
    /// Coefficient of variation: std_dev / |mean|; None with one run or a zero mean.
    pub cv: Option<f64>,
}

/// Why a figure should not be trusted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Noise {
    /// One run: the spread is unknown.
    SingleRun,
    /// Coefficient of variation above [`NOISY_CV`].
    HighCv(f64),
}

impl std::fmt::Display for Noise {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Noise::SingleRun => write!(f, "one run only: its spread is unknown, repeat it"),
            Noise::HighCv(cv) => write!(
                f,
                "too noisy to trust: runs vary by {:.1}% (coefficient of variation above {:.0}%)",
                cv * 100.0,
                NOISY_CV * 100.0
            ),
        }
    }
}

/// Two-sided critical value of Student's t for [`CONFIDENCE`] with `df` degrees of freedom.
pub(crate) fn t_critical(df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df)
        .map(|t| t.inverse_cdf(1.0 - (1.0 - CONFIDENCE) / 2.0))
        .unwrap_or(f64::NAN)
}

/// Summarises the finite values of `xs`; None when there are none.
pub(crate) fn summarize(xs: &[f64]) -> Option<Summary> {
    let xs: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    let n = xs.len();
    if n == 0 {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (std_dev, ci, cv) = if n >= 2 {
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let sd = var.sqrt();
        let half = t_critical((n - 1) as f64) * sd / (n as f64).sqrt();
        let cv = (mean != 0.0).then(|| sd / mean.abs());
        (Some(sd), Some((mean - half, mean + half)), cv)
    } else {
        (None, None, None)
    };
    Some(Summary {
        n,
        mean,
        std_dev,
        min,
        max,
        ci95_low: ci.map(|c| c.0),
        ci95_high: ci.map(|c| c.1),
        cv,
    })
}

impl Summary {
    /// Whether this figure is too noisy to trust, and why.
    pub fn noise(&self) -> Option<Noise> {
        if self.n < 2 {
            return Some(Noise::SingleRun);
        }
        match self.cv {
            Some(cv) if cv > NOISY_CV => Some(Noise::HighCv(cv)),
            _ => None,
        }
    }

    /// The relative standard deviation in percent (the coefficient of variation x 100), as
    /// `%stddev` tables print it; None with one run or a zero mean.
    pub fn pct_std_dev(&self) -> Option<f64> {
        self.cv.map(|cv| cv * 100.0)
    }
}

/// `x` against `base` in percent: (x - base) / |base| x 100; None when base is zero or either
/// is not a number.
pub(crate) fn pct_change(base: f64, x: f64) -> Option<f64> {
    (base != 0.0 && base.is_finite() && x.is_finite()).then(|| (x - base) / base.abs() * 100.0)
}

/// Welch's t-test of B against A (unequal variances, Welch–Satterthwaite degrees of freedom).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Welch {
    /// mean(B) - mean(A).
    pub diff: f64,
    /// 95% confidence interval of the difference.
    pub ci95_low: f64,
    pub ci95_high: f64,
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// p < 1 - CONFIDENCE: the difference is unlikely to be noise.
    pub significant: bool,
}

/// Welch's test from two summaries; None unless both have at least two runs.
pub fn welch(a: &Summary, b: &Summary) -> Option<Welch> {
    let (sa, sb) = (a.std_dev?, b.std_dev?);
    let (na, nb) = (a.n as f64, b.n as f64);
    let (va, vb) = (sa * sa / na, sb * sb / nb);
    let diff = b.mean - a.mean;
    let se = (va + vb).sqrt();
    if se == 0.0 {
        // No spread at all: any difference is exact.
        let significant = diff != 0.0;
        return Some(Welch {
            diff,
            ci95_low: diff,
            ci95_high: diff,
            t: if significant { f64::INFINITY } else { 0.0 },
            df: na + nb - 2.0,
            p_value: if significant { 0.0 } else { 1.0 },
            significant,
        });
    }
    let df = (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    let t = diff / se;
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let p_value = (2.0 * (1.0 - dist.cdf(t.abs()))).clamp(0.0, 1.0);
    let half = t_critical(df) * se;
    Some(Welch {
        diff,
        ci95_low: diff - half,
        ci95_high: diff + half,
        t,
        df,
        p_value,
        significant: p_value < 1.0 - CONFIDENCE,
    })
}

/// A number printed with the precision a person reads: whole above 1000, else 4 significant.
pub(crate) fn num(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    let a = x.abs();
    if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_critical_matches_tables() {
        // Two-sided 95%: df 1, 9, 30 from any t table.
        assert!((t_critical(1.0) - 12.7062).abs() < 1e-3);
        assert!((t_critical(9.0) - 2.2622).abs() < 1e-4);
        assert!((t_critical(30.0) - 2.0423).abs() < 1e-4);
    }

    #[test]
    fn one_run_has_no_spread() {
        let s = summarize(&[5.0]).unwrap();
        assert_eq!((s.n, s.mean, s.min, s.max), (1, 5.0, 5.0, 5.0));
        assert_eq!((s.std_dev, s.cv, s.ci95_low), (None, None, None));
        assert_eq!(s.noise(), Some(Noise::SingleRun));
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[f64::NAN]).is_none());
    }

    /// Paolo Ciarrocchi's ten chat_c runs per kernel, from the 2002 chatroom benchmark thread.
    const K2533: [f64; 10] = [
        60402.0, 63981.0, 60271.0, 61403.0, 61235.0, 60603.0, 61258.0, 61675.0, 62447.0, 64523.0,
    ];
    const K2536P: [f64; 10] = [
        58717.0, 62171.0, 63255.0, 60643.0, 61854.0, 63547.0, 55841.0, 62911.0, 55490.0, 64343.0,
    ];
    const K2538P: [f64; 10] = [
        63051.0, 60065.0, 61488.0, 63471.0, 62200.0, 61631.0, 64894.0, 63893.0, 63127.0, 61565.0,
    ];

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn summary_matches_hand_computed_values() {
        // Reference values computed by hand (Python's statistics module; t from a table).
        let s = summarize(&K2533).unwrap();
        assert_eq!(s.n, 10);
        assert!(close(s.mean, 61779.8, 1e-9), "the 2002 thread's average");
        assert!(close(s.std_dev.unwrap(), 1456.6817543078287, 1e-6));
        assert_eq!((s.min, s.max), (60271.0, 64523.0));
        assert!(close(s.ci95_low.unwrap(), 60737.75264728079, 1e-3));
        assert!(close(s.ci95_high.unwrap(), 62821.84735271922, 1e-3));
        assert!(close(s.cv.unwrap(), 0.023578609097274977, 1e-12));
        assert_eq!(s.noise(), None);
    }

    #[test]
    fn the_seeds_preempt_kernel_is_flagged_noisy() {
        let s = summarize(&K2536P).unwrap();
        assert!(close(s.std_dev.unwrap(), 3173.929943916357, 1e-6));
        assert!(close(s.cv.unwrap(), 0.052136595374234644, 1e-12));
        assert!(matches!(s.noise(), Some(Noise::HighCv(_))));
        assert!(s.noise().unwrap().to_string().contains("above 5%"));
    }

    #[test]
    fn welch_matches_hand_computed_values() {
        let a = summarize(&K2533).unwrap();
        let c = summarize(&K2538P).unwrap();
        let w = welch(&a, &c).unwrap();
        assert!(close(w.diff, 758.7, 1e-6));
        assert!(close(w.df, 17.98334255855514, 1e-9));
        assert!(close(w.t, 1.1822263695377313, 1e-9));
        assert!(close(w.p_value, 0.2525124581490026, 1e-6));
        assert!(close(w.ci95_low, -589.6673098312742, 1e-2));
        assert!(close(w.ci95_high, 2107.067309831268, 1e-2));
        assert!(!w.significant, "2.5.33 vs 2.5.38-preempt: within noise");
    }

    #[test]
    fn a_known_shift_is_significant() {
        let a = summarize(&K2533).unwrap();
        let shifted: Vec<f64> = K2533.iter().map(|x| x + 3000.0).collect();
        let b = summarize(&shifted).unwrap();
        let w = welch(&a, &b).unwrap();
        assert!(
            close(w.df, 18.0, 1e-9),
            "equal variances and sizes: df = 2n - 2"
        );
        assert!(close(w.t, 4.605126626087869, 1e-9));
        assert!(close(w.p_value, 0.0002197580639267116, 1e-7));
        assert!(w.significant);
        assert!(w.ci95_low > 0.0 && w.ci95_high < 6000.0);
    }

    #[test]
    fn percent_change_and_relative_spread() {
        assert_eq!(pct_change(200.0, 210.0), Some(5.0));
        assert_eq!(pct_change(-200.0, -210.0), Some(-5.0), "against |base|");
        assert_eq!(pct_change(0.0, 1.0), None);
        assert_eq!(pct_change(1.0, f64::NAN), None);
        let s = summarize(&K2533).unwrap();
        assert!(close(
            s.pct_std_dev().unwrap(),
            2.357_860_909_727_498,
            1e-10
        ));
        assert_eq!(summarize(&[1.0]).unwrap().pct_std_dev(), None);
    }

    #[test]
    fn welch_needs_two_runs_each_and_handles_zero_spread() {
        let one = summarize(&[1.0]).unwrap();
        let two = summarize(&[1.0, 2.0]).unwrap();
        assert!(welch(&one, &two).is_none());
        let same = summarize(&[3.0, 3.0]).unwrap();
        assert!(!welch(&same, &same).unwrap().significant);
        let other = summarize(&[4.0, 4.0]).unwrap();
        assert!(welch(&same, &other).unwrap().significant);
    }
}
