//! Property tests on the fairness maths: weighted max-min (water-filling), flat and in two
//! levels, and the kernel's nice weights.

use proptest::prelude::*;
use schedlab::model::fair::{hierarchical, jain, water_fill, Claim, Entity};
use schedlab::probe::parse::{nice_to_weight, PRIO_TO_WEIGHT};

const EPS: f64 = 1e-9;

fn claims() -> impl Strategy<Value = Vec<Claim>> {
    prop::collection::vec(
        (0.0f64..=1.0, -20i32..=19).prop_map(|(demand, nice)| Claim {
            demand,
            weight: nice_to_weight(nice),
        }),
        0..40,
    )
}

proptest! {
    #[test]
    fn shares_sum_to_capacity_or_total_demand(cap in 0.0f64..64.0, cs in claims()) {
        let s = water_fill(cap, &cs);
        let demand: f64 = cs.iter().map(|c| c.demand).sum();
        let total: f64 = s.iter().sum();
        prop_assert!((total - cap.min(demand)).abs() < 1e-7, "{total} vs {}", cap.min(demand));
    }

    #[test]
    fn nobody_gets_more_than_it_wants(cap in 0.0f64..64.0, cs in claims()) {
        let s = water_fill(cap, &cs);
        for (x, c) in s.iter().zip(&cs) {
            prop_assert!(*x <= c.demand + EPS);
            prop_assert!(*x >= -EPS);
        }
    }

    #[test]
    fn unsatisfied_claimants_get_shares_in_proportion_to_weight(cap in 0.0f64..16.0, cs in claims()) {
        // Max-min: anyone below its demand is at the common level λ·w, and nobody satisfied
        // sits above that level.
        let s = water_fill(cap, &cs);
        let levels: Vec<f64> = s
            .iter()
            .zip(&cs)
            .filter(|(x, c)| **x < c.demand - 1e-7)
            .map(|(x, c)| x / c.weight)
            .collect();
        if let Some(&lambda) = levels.first() {
            for l in &levels {
                prop_assert!((l - lambda).abs() <= 1e-7 * lambda.max(1e-9) + 1e-12);
            }
            for (x, c) in s.iter().zip(&cs) {
                prop_assert!(x / c.weight <= lambda * (1.0 + 1e-7) + 1e-12);
            }
        }
    }

    #[test]
    fn equal_weights_and_demands_give_equal_shares(
        cap in 0.0f64..8.0, n in 1usize..50, demand in 0.0f64..=1.0, nice in -20i32..=19,
    ) {
        let cs = vec![Claim { demand, weight: nice_to_weight(nice) }; n];
        let s = water_fill(cap, &cs);
        let want = (cap / n as f64).min(demand);
        for x in &s {
            prop_assert!((x - want).abs() < 1e-9, "{x} vs {want}");
        }
    }

    #[test]
    fn one_nice_step_is_the_kernels_ratio(nice in -20i32..19, cap in 0.01f64..1.0) {
        // Two always-runnable tasks on less than their demand: shares in the weight ratio,
        // about 1.25 per nice step (1024 : 820 at nice 0 : 1).
        let a = Claim { demand: 1.0, weight: nice_to_weight(nice) };
        let b = Claim { demand: 1.0, weight: nice_to_weight(nice + 1) };
        let s = water_fill(cap, &[a, b]);
        let ratio = s[0] / s[1];
        let kernel = PRIO_TO_WEIGHT[(nice + 20) as usize] as f64
            / PRIO_TO_WEIGHT[(nice + 21) as usize] as f64;
        prop_assert!((ratio - kernel).abs() < 1e-9);
        prop_assert!((1.19..1.31).contains(&ratio), "{ratio}");
    }

    #[test]
    fn groups_conserve_and_respect_demand(
        cap in 0.0f64..16.0,
        groups in prop::collection::vec((1.0f64..10_000.0, claims()), 0..8),
        loose in claims(),
    ) {
        let mut es: Vec<Entity> = groups
            .into_iter()
            .map(|(weight, tasks)| Entity::Group { weight, tasks })
            .collect();
        es.extend(loose.into_iter().map(Entity::Task));
        let s = hierarchical(cap, &es);
        let demand: f64 = es.iter().map(|e| match e {
            Entity::Group { tasks, .. } => tasks.iter().map(|t| t.demand).sum(),
            Entity::Task(c) => c.demand,
        }).sum();
        let total: f64 = s.iter().flatten().sum();
        prop_assert!((total - cap.min(demand)).abs() < 1e-7);
        for (e, shares) in es.iter().zip(&s) {
            match e {
                Entity::Group { tasks, .. } => {
                    for (x, t) in shares.iter().zip(tasks) {
                        prop_assert!(*x <= t.demand + EPS);
                    }
                }
                Entity::Task(c) => prop_assert!(shares[0] <= c.demand + EPS),
            }
        }
    }

    #[test]
    fn jain_is_between_one_over_n_and_one(xs in prop::collection::vec(0.0f64..10.0, 1..30)) {
        let j = jain(&xs);
        prop_assert!(j <= 1.0 + 1e-12);
        prop_assert!(j >= 1.0 / xs.len() as f64 - 1e-12);
    }
}

#[test]
fn kernel_weight_table_ends_and_steps() {
    assert_eq!(nice_to_weight(-20), 88761.0);
    assert_eq!(nice_to_weight(0), 1024.0);
    assert_eq!(nice_to_weight(1), 820.0);
    assert_eq!(nice_to_weight(19), 15.0);
    // Out of range clamps rather than panics.
    assert_eq!(nice_to_weight(-99), 88761.0);
    assert_eq!(nice_to_weight(99), 15.0);
}
