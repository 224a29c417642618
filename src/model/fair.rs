//! Weighted max-min fair shares (water-filling), flat and in two levels (groups, then tasks).
//!
//! Each claimant has a demand d ≥ 0 (CPUs it would use if it never waited) and a weight
//! w > 0. The fair share is f = min(d, λ·w), with λ the level at which Σ f = min(C, Σ d):
//! the capacity is poured in proportion to weight, and whoever is satisfied drops out and
//! leaves the rest to the others.

/// One claimant: demand in CPUs and weight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Claim {
    pub demand: f64,
    pub weight: f64,
}

/// Fair shares of `capacity` among `claims`, in the same order.
pub fn water_fill(capacity: f64, claims: &[Claim]) -> Vec<f64> {
    let n = claims.len();
    let mut share = vec![0.0; n];
    let capacity = capacity.max(0.0);
    let total_demand: f64 = claims.iter().map(|c| c.demand.max(0.0)).sum();
    if n == 0 || capacity <= 0.0 {
        return share;
    }
    if total_demand <= capacity {
        for (s, c) in share.iter_mut().zip(claims) {
            *s = c.demand.max(0.0);
        }
        return share;
    }
    // Sort by the level at which each claimant is satisfied (d / w); fill in that order.
    let mut order: Vec<usize> = (0..n).filter(|&i| claims[i].demand > 0.0).collect();
    order.sort_by(|&a, &b| {
        let la = claims[a].demand / claims[a].weight.max(f64::MIN_POSITIVE);
        let lb = claims[b].demand / claims[b].weight.max(f64::MIN_POSITIVE);
        la.total_cmp(&lb)
    });
    let mut left = capacity;
    let mut weight_left: f64 = order.iter().map(|&i| claims[i].weight.max(0.0)).sum();
    for (k, &i) in order.iter().enumerate() {
        let c = claims[i];
        let w = c.weight.max(0.0);
        let lambda = if weight_left > 0.0 {
            left / weight_left
        } else {
            0.0
        };
        if c.demand <= lambda * w {
            share[i] = c.demand;
            left -= c.demand;
            weight_left -= w;
        } else {
            // Everyone from here on is capped by λ: they split what is left by weight.
            for &j in &order[k..] {
                let wj = claims[j].weight.max(0.0);
                share[j] = if weight_left > 0.0 {
                    left * wj / weight_left
                } else {
                    0.0
                };
            }
            break;
        }
    }
    share
}

/// A group of tasks sharing one scheduling entity (an autogroup or a cgroup), or loose
/// tasks competing at the top level on their own.
#[derive(Clone, Debug, PartialEq)]
pub enum Entity {
    /// A group with its own weight; its tasks split whatever the group gets.
    Group { weight: f64, tasks: Vec<Claim> },
    /// A task (or "rest of system" lump) at the top level.
    Task(Claim),
}

/// Two-level water-filling: capacity among top-level entities, then within each group.
/// Returns per entity the share of each of its tasks (a Task entity has one).
pub fn hierarchical(capacity: f64, entities: &[Entity]) -> Vec<Vec<f64>> {
    let top: Vec<Claim> = entities
        .iter()
        .map(|e| match e {
            Entity::Group { weight, tasks } => Claim {
                demand: tasks.iter().map(|t| t.demand.max(0.0)).sum(),
                weight: *weight,
            },
            Entity::Task(c) => *c,
        })
        .collect();
    let shares = water_fill(capacity, &top);
    entities
        .iter()
        .zip(shares)
        .map(|(e, s)| match e {
            Entity::Group { tasks, .. } => water_fill(s, tasks),
            Entity::Task(_) => vec![s],
        })
        .collect()
}

/// Jain's fairness index of `xs`: (Σx)² / (n·Σx²); 1 when all are equal.
pub fn jain(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let sum: f64 = xs.iter().sum();
    let sq: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || sq <= 0.0 {
        1.0
    } else {
        sum * sum / (n * sq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(demand: f64, weight: f64) -> Claim {
        Claim { demand, weight }
    }

    #[test]
    fn fork_load_in_one_session_gets_two_fifths() {
        // Four hogs and one fork loop, one group, 2 CPUs: 0.4 each.
        let tasks = vec![c(1.0, 1024.0); 5];
        let s = hierarchical(
            2.0,
            &[Entity::Group {
                weight: 1024.0,
                tasks,
            }],
        );
        for x in &s[0] {
            assert!((x - 0.4).abs() < 1e-12);
        }
    }

    #[test]
    fn fork_load_in_its_own_session_gets_a_cpu() {
        let s = hierarchical(
            2.0,
            &[
                Entity::Group {
                    weight: 1024.0,
                    tasks: vec![c(1.0, 1024.0); 4],
                },
                Entity::Group {
                    weight: 1024.0,
                    tasks: vec![c(1.0, 1024.0)],
                },
            ],
        );
        assert!((s[1][0] - 1.0).abs() < 1e-12);
        assert!(s[0].iter().all(|x| (x - 0.25).abs() < 1e-12));
    }

    #[test]
    fn satisfied_claimants_leave_the_rest() {
        let s = water_fill(2.0, &[c(0.1, 1.0), c(1.0, 1.0), c(1.0, 1.0)]);
        assert!((s[0] - 0.1).abs() < 1e-12);
        assert!((s[1] - 0.95).abs() < 1e-12);
        assert!((s[2] - 0.95).abs() < 1e-12);
        assert_eq!(jain(&[1.0, 1.0]), 1.0);
        assert!((jain(&[1.0, 0.0]) - 0.5).abs() < 1e-12);
    }
}
