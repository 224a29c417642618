//! Closed loops: a workload whose tasks take turns (a ping-pong pair, a fork loop's forker and
//! its child) wants one whole CPU per loop, however its tasks split the turns.
//!
//! Task by task, such a workload misreads both ways. Each ping-pong task sleeps once a round
//! trip, so by demand::wanted it wants about three quarters of a CPU, and a pair alone on an
//! idle machine would be due a CPU and a half that it can never use (`short`, falsely). A
//! fork loop's forker sleeps while its child runs, so its wait is a wakeup delay, and the loop
//! would want only what it got: never `short`, even at the 2002 thread's 5 to 8% of a CPU.
//! Taken as a whole, one task of a loop is runnable whenever none of it runs: each loop wants
//! a whole CPU, at the weight of one task (only one of its tasks competes at a time).
//!
//! The workload says how many loops it runs (its counter region's header); its claims are
//! then reshaped: each task that ran gets its part of the loops by its part of what the
//! workload received, as demand and as weight, so that the loops together want `loops` CPUs
//! at `loops` tasks' weight, each on the CPUs where its tasks ran.

use super::account::Claim;

/// Reshapes a workload's claims into `loops` closed loops.
pub(crate) fn reshape(claims: &mut [Claim], loops: u32) {
    let loops = f64::from(loops);
    let received: f64 = claims.iter().map(|c| c.received).sum();
    let members: Vec<usize> = if received > 0.0 {
        (0..claims.len())
            .filter(|&i| claims[i].received > 0.0)
            .collect()
    } else {
        // Starved outright: every task holds its part of the loops alike.
        (0..claims.len()).collect()
    };
    if members.is_empty() {
        return;
    }
    let parts: Vec<f64> = members
        .iter()
        .map(|&i| {
            if received > 0.0 {
                claims[i].received / received
            } else {
                1.0 / members.len() as f64
            }
        })
        .collect();
    // The weight of one of its tasks (they share nice and policy; a mean where they do not).
    let weight: f64 = members
        .iter()
        .zip(&parts)
        .map(|(&i, p)| claims[i].weight * p)
        .sum();
    for (&i, p) in members.iter().zip(&parts) {
        claims[i].demand = (loops * p).min(1.0);
        claims[i].weight = weight * loops * p;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::cpuset::CpuSet;
    use crate::model::solver::Class;
    use crate::model::tree::Placement;

    fn task(received: f64, demand: f64, cpu: u32) -> Claim {
        Claim {
            demand,
            received,
            weight: 1024.0,
            class: Class::Fair,
            cpus: CpuSet::one(cpu),
            cpu: Some(cpu),
            placement: Placement::default(),
        }
    }

    #[test]
    fn two_pinned_pairs_want_a_cpu_each_at_one_task_weight() {
        // Pair 0 on CPU 0, pair 1 on CPU 1, each task running half its CPU and wanting 0.75
        // by itself; the runner that started them sleeps.
        let mut c = vec![
            task(0.0, 0.0, 0),
            task(0.5, 0.75, 0),
            task(0.5, 0.75, 0),
            task(0.5, 0.75, 1),
            task(0.5, 0.75, 1),
        ];
        reshape(&mut c, 2);
        assert_eq!(c[0].demand, 0.0);
        for x in &c[1..] {
            assert!((x.demand - 0.5).abs() < 1e-12 && (x.weight - 512.0).abs() < 1e-9);
        }
    }

    #[test]
    fn a_fork_loop_wants_a_whole_cpu_though_its_forker_mostly_waits() {
        // The forker's claim carries its reaped children; a live child got a little.
        let mut c = vec![task(0.19, 0.2, 0), task(0.01, 0.01, 0)];
        reshape(&mut c, 1);
        assert!((c[0].demand + c[1].demand - 1.0).abs() < 1e-12);
        assert!((c[0].weight + c[1].weight - 1024.0).abs() < 1e-9);
    }

    #[test]
    fn a_loop_starved_outright_still_wants_its_cpu() {
        let mut c = vec![task(0.0, 0.0, 0), task(0.0, 0.0, 0)];
        reshape(&mut c, 1);
        assert!((c[0].demand - 0.5).abs() < 1e-12 && (c[1].demand - 0.5).abs() < 1e-12);
    }
}
