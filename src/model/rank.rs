//! Whether two small sets of values differ, assuming no shape: the Mann–Whitney rank test
//! (exact, ties included, up to [`EXACT_MAX`] values in all) and the Hodges–Lehmann estimate of
//! the shift from A to B with its distribution-free confidence interval (Moses). Made for the
//! repeats' latency percentiles, which are few, skewed (one repeat with a preemption storm has
//! a p99 ten times the others) and often tied (a percentile is its bucket's midpoint).
//! Deterministic: nothing is resampled.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};

use super::stats::CONFIDENCE;

/// Up to this many values in all the p-value and the interval are exact (every split of the
/// pooled values into the two sides equally likely); beyond, the normal approximation.
pub(crate) const EXACT_MAX: usize = 60;

/// Beyond this many pairs the shift is the difference of the medians, without an interval.
const PAIRS_MAX: usize = 1_000_000;

/// The rank test of B against A.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankTest {
    /// Mann–Whitney U of B against A: pairs (a, b) with b above a, a tie counting one half.
    pub u: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// The p-value is exact (else the normal approximation, with tie and continuity
    /// corrections).
    pub exact: bool,
    /// Hodges–Lehmann: the median of b − a over all pairs.
    pub shift: f64,
    /// Its 95% confidence interval (Moses: order statistics of the pairs' differences); None
    /// past a million pairs.
    pub ci95_low: Option<f64>,
    pub ci95_high: Option<f64>,
    /// p < 1 − CONFIDENCE.
    pub significant: bool,
}

/// The rank test of `b` against `a` (their finite values); None when a side is empty or the
/// sides are too small for any arrangement to reach p < 0.05 (four runs each at least, or
/// three against five: 3 against 3 has only 20 splits, so its best p is 0.1).
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<RankTest> {
    let a: Vec<f64> = a.iter().copied().filter(|x| x.is_finite()).collect();
    let b: Vec<f64> = b.iter().copied().filter(|x| x.is_finite()).collect();
    let (na, nb) = (a.len(), b.len());
    if na == 0 || nb == 0 || !testable(na, nb) {
        return None;
    }
    let alpha = 1.0 - CONFIDENCE;
    let ranks = doubled_ranks(&a, &b);
    let n = na + nb;
    // Twice the rank sum of A, and twice its expectation, na (n + 1): integers.
    let w2: i64 = ranks[..na].iter().sum();
    let mean2 = (na * (n + 1)) as i64;
    let u_a = w2 as f64 / 2.0 - (na * (na + 1)) as f64 / 2.0;
    let pairs = (na * nb) as f64;
    let exact = n <= EXACT_MAX;
    let p_value = if exact {
        let ways = rank_sum_ways(&ranks, na);
        let total: f64 = ways.iter().sum();
        let far = (w2 - mean2).abs();
        let extreme: f64 = ways
            .iter()
            .enumerate()
            .filter(|(s, _)| (*s as i64 - mean2).abs() >= far)
            .map(|(_, c)| c)
            .sum();
        (extreme / total).min(1.0)
    } else {
        normal_p(u_a, na, nb, &ranks)
    };
    let (shift, ci) = shift_and_interval(&a, &b, alpha);
    Some(RankTest {
        u: pairs - u_a,
        p_value,
        exact,
        shift,
        ci95_low: ci.map(|c| c.0),
        ci95_high: ci.map(|c| c.1),
        significant: p_value < alpha,
    })
}

/// Whether some arrangement of `na` and `nb` distinct values reaches p < 0.05: the two most
/// extreme splits have probability 2 / C(na + nb, na).
pub(crate) fn testable(na: usize, nb: usize) -> bool {
    na > 0 && nb > 0 && 2.0 / choose(na + nb, na) < 1.0 - CONFIDENCE
}

fn choose(n: usize, k: usize) -> f64 {
    let k = k.min(n - k);
    (0..k).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64)
}

/// Each value's rank in the pooled set, doubled so a tie's midrank is an integer: A's first,
/// then B's, in their order.
fn doubled_ranks(a: &[f64], b: &[f64]) -> Vec<i64> {
    let mut pooled: Vec<(f64, usize)> = a.iter().chain(b).copied().zip(0..).collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut ranks = vec![0i64; pooled.len()];
    let mut i = 0;
    while i < pooled.len() {
        let j = (i..pooled.len())
            .find(|&j| pooled[j].0 != pooled[i].0)
            .unwrap_or(pooled.len());
        // Positions i..j (1-based i+1..=j) share the midrank (i + 1 + j) / 2.
        for &(_, at) in &pooled[i..j] {
            ranks[at] = (i + 1 + j) as i64;
        }
        i = j;
    }
    ranks
}

/// How many ways `k` of the values with these doubled ranks add up to each doubled sum.
fn rank_sum_ways(ranks: &[i64], k: usize) -> Vec<f64> {
    let top: usize = ranks.iter().map(|&r| r as usize).sum();
    // ways[j][s]: subsets of j of the ranks seen so far with doubled sum s.
    let mut ways = vec![vec![0.0f64; top + 1]; k + 1];
    ways[0][0] = 1.0;
    for &r in ranks {
        let r = r as usize;
        for j in (1..=k).rev() {
            let (lower, upper) = ways.split_at_mut(j);
            for s in (r..=top).rev() {
                upper[0][s] += lower[j - 1][s - r];
            }
        }
    }
    ways.swap_remove(k)
}

/// The normal approximation to U's two-sided p-value, with the tie correction of its variance
/// and a continuity correction.
fn normal_p(u_a: f64, na: usize, nb: usize, ranks: &[i64]) -> f64 {
    let n = (na + nb) as f64;
    let mut sorted = ranks.to_vec();
    sorted.sort_unstable();
    let ties: f64 = sorted
        .chunk_by(|x, y| x == y)
        .map(|g| {
            let t = g.len() as f64;
            t * t * t - t
        })
        .sum();
    let pairs = (na * nb) as f64;
    let var = pairs / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((u_a - pairs / 2.0).abs() - 0.5).max(0.0) / var.sqrt();
    let normal = Normal::new(0.0, 1.0).expect("the standard normal");
    (2.0 * (1.0 - normal.cdf(z))).min(1.0)
}

fn median(sorted: &[f64]) -> f64 {
    let m = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[m]
    } else {
        (sorted[m - 1] + sorted[m]) / 2.0
    }
}

/// The Hodges–Lehmann shift and Moses' interval: with the pairs' differences b − a sorted,
/// the interval runs from the (c+1)-th to the (mn−c)-th, c being the largest U whose lower
/// tail is at most alpha/2 (U's distribution without ties).
fn shift_and_interval(a: &[f64], b: &[f64], alpha: f64) -> (f64, Option<(f64, f64)>) {
    let (na, nb) = (a.len(), b.len());
    if na * nb > PAIRS_MAX {
        let sorted = |xs: &[f64]| {
            let mut v = xs.to_vec();
            v.sort_by(f64::total_cmp);
            v
        };
        return (median(&sorted(b)) - median(&sorted(a)), None);
    }
    let mut diffs: Vec<f64> = b
        .iter()
        .flat_map(|y| a.iter().map(move |x| y - x))
        .collect();
    diffs.sort_by(f64::total_cmp);
    let shift = median(&diffs);
    let n = na + nb;
    let c = if n <= EXACT_MAX {
        // U = doubled rank sum / 2 − na(na+1)/2 over the ranks 1..=n.
        let plain: Vec<i64> = (1..=n as i64).map(|r| 2 * r).collect();
        let ways = rank_sum_ways(&plain, na);
        let total: f64 = ways.iter().sum();
        let offset = na * (na + 1);
        let mut below = 0.0;
        let mut c = None;
        // Doubled sums step by 2 here: U = (s − offset) / 2.
        for (s, w) in ways.iter().enumerate().skip(offset).step_by(2) {
            below += w;
            if below / total > alpha / 2.0 {
                break;
            }
            c = Some((s - offset) / 2);
        }
        match c {
            Some(c) => c,
            None => return (shift, None),
        }
    } else {
        let z = Normal::new(0.0, 1.0)
            .expect("the standard normal")
            .inverse_cdf(1.0 - alpha / 2.0);
        let pairs = (na * nb) as f64;
        let k = pairs / 2.0 - z * (pairs * (n as f64 + 1.0) / 12.0).sqrt();
        if k < 1.0 {
            return (shift, None);
        }
        k.floor() as usize - 1
    };
    let m = diffs.len();
    (shift, Some((diffs[c], diffs[m - 1 - c])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, RngExt, SeedableRng};

    #[test]
    fn exact_p_values_of_small_samples() {
        // Complete separation of 5 and 5: the two extreme splits of C(10, 5) = 252.
        let t = mann_whitney(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert!((t.p_value - 2.0 / 252.0).abs() < 1e-12, "{t:?}");
        assert_eq!(t.u, 25.0);
        assert!(t.significant && t.exact);
        assert_eq!(t.shift, 5.0);
        // 4 against 4 with U_A = 2: P(U <= 2) = 4/70, two-sided 8/70.
        let t = mann_whitney(&[1.0, 2.0, 3.0, 4.0], &[2.5, 5.0, 6.0, 7.0]).unwrap();
        assert!((t.p_value - 8.0 / 70.0).abs() < 1e-12, "{t:?}");
        assert_eq!(t.u, 14.0);
        assert!(!t.significant);
    }

    #[test]
    fn ties_are_midranks_and_all_equal_is_no_difference() {
        let t = mann_whitney(&[3.04; 5], &[3.04; 5]).unwrap();
        assert_eq!(t.p_value, 1.0);
        assert_eq!((t.u, t.shift), (12.5, 0.0));
        assert!(!t.significant);
        // Each side in one bucket, the buckets apart: as separate as values can be.
        let t = mann_whitney(&[3.04; 5], &[6.08; 5]).unwrap();
        assert!((t.p_value - 2.0 / 252.0).abs() < 1e-12, "{t:?}");
        assert_eq!(t.shift, 3.04);
        assert_eq!((t.ci95_low, t.ci95_high), (Some(3.04), Some(3.04)));
    }

    #[test]
    fn too_few_runs_cannot_be_tested() {
        assert!(mann_whitney(&[1.0, 2.0, 3.0], &[7.0, 8.0, 9.0]).is_none());
        assert!(mann_whitney(&[1.0], &[2.0, 3.0]).is_none());
        assert!(mann_whitney(&[], &[2.0; 10]).is_none());
        assert!(testable(4, 4) && testable(3, 5) && !testable(3, 4) && !testable(1, 30));
    }

    #[test]
    fn the_interval_holds_the_shift_and_excludes_zero_when_significant() {
        let a = [10.0, 11.0, 12.5, 9.5, 10.5, 11.5];
        let b: Vec<f64> = a.iter().map(|x| x * 2.0).collect();
        let t = mann_whitney(&a, &b).unwrap();
        let (lo, hi) = (t.ci95_low.unwrap(), t.ci95_high.unwrap());
        assert!(0.0 < lo && lo <= t.shift && t.shift <= hi, "{t:?}");
        assert!(t.significant);
    }

    #[test]
    fn large_samples_use_the_normal_approximation() {
        let a: Vec<f64> = (0..40).map(f64::from).collect();
        let b: Vec<f64> = (0..40).map(|i| f64::from(i) + 0.5).collect();
        let t = mann_whitney(&a, &b).unwrap();
        assert!(!t.exact);
        assert!(t.p_value > 0.5 && !t.significant, "{t:?}");
        let far: Vec<f64> = (0..40).map(|i| f64::from(i) + 30.0).collect();
        let t = mann_whitney(&a, &far).unwrap();
        assert!(t.significant && t.p_value < 1e-6, "{t:?}");
        assert!(
            t.ci95_low.unwrap() > 20.0 && t.ci95_high.unwrap() < 40.0,
            "{t:?}"
        );
    }

    /// A normal sample (Box–Muller on a seeded generator).
    fn normal(rng: &mut StdRng, n: usize, mean: f64, sd: f64) -> Vec<f64> {
        (0..n)
            .map(|_| {
                let (u1, u2): (f64, f64) = (1.0 - rng.random::<f64>(), rng.random());
                mean + sd * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
            })
            .collect()
    }

    /// The 95% percentile-bootstrap interval of the difference of means, resampling each
    /// side's values: what the rank test stands in for.
    fn bootstrap_excludes_zero(rng: &mut StdRng, a: &[f64], b: &[f64]) -> bool {
        let mean_of_resample = |rng: &mut StdRng, xs: &[f64]| {
            (0..xs.len())
                .map(|_| xs[rng.random_range(0..xs.len())])
                .sum::<f64>()
                / xs.len() as f64
        };
        let mut d: Vec<f64> = (0..400)
            .map(|_| mean_of_resample(rng, b) - mean_of_resample(rng, a))
            .collect();
        d.sort_by(f64::total_cmp);
        d[10] > 0.0 || d[389] < 0.0
    }

    #[test]
    fn five_runs_a_side_cry_wolf_at_most_one_time_in_twenty() {
        // Two sets of five runs of one distribution, 1,000 times: the exact test calls at most
        // 5% of them significant; a bootstrap over five values, far more (why it is not used).
        let mut rng = StdRng::seed_from_u64(16);
        let (mut rank, mut boot) = (0, 0);
        let trials = 1_000;
        for _ in 0..trials {
            let a = normal(&mut rng, 5, 100.0, 10.0);
            let b = normal(&mut rng, 5, 100.0, 10.0);
            rank += usize::from(mann_whitney(&a, &b).unwrap().significant);
            boot += usize::from(bootstrap_excludes_zero(&mut rng, &a, &b));
        }
        let (rank, boot) = (rank as f64 / trials as f64, boot as f64 / trials as f64);
        assert!(rank <= 0.05, "rank test false alarms {rank}");
        assert!(boot >= 0.08, "bootstrap false alarms {boot}");
        // And a p99 that doubled, in five runs a side, is found every time.
        for _ in 0..100 {
            let a = normal(&mut rng, 5, 100.0, 10.0);
            let b = normal(&mut rng, 5, 200.0, 20.0);
            assert!(mann_whitney(&a, &b).unwrap().significant);
        }
    }
}
