//! Closed loops: a workload whose tasks take turns (a ping-pong pair, a fork loop's forker and
//! its child), judged as loops rather than task by task.
//!
//! Task by task, such a workload misreads both ways. Each ping-pong task sleeps once a round
//! trip, so by demand::wanted it wants about three quarters of a CPU, and a pair alone on an
//! idle machine would be due a CPU and a half that it can never use (`short`, falsely). A
//! fork loop's forker sleeps while its child runs, so its wait is a wakeup delay, and the loop
//! would want only what it got: never `short`, even at the 2002 thread's 5 to 8% of a CPU.
//!
//! Taken as a whole, a loop wants what it ran, and the time one of its tasks waited while none
//! of it ran: it waited behind someone else then, and it can only have waited behind others
//! while they ran on its CPUs. Its own tasks' waits for each other (a ping-pong task preempted
//! by the partner it woke) are not demand: the loop ran meanwhile. So a loop wants its CPU
//! time, plus its run-queue wait up to what others ran on the CPUs it may use, and never more
//! than one CPU per loop. A pair alone on its CPU wants what it got; a pair across two CPUs,
//! which spends a third of each round trip waking the other CPU, wants what it got too; the
//! 2002 fork loop beside four compilers on one CPU wants the whole CPU, as it always has a task
//! ready. Each loop weighs one task: only one of its tasks competes at a time.
//!
//! The workload says how many loops it runs (its counter region's header); its claims are
//! then reshaped: each task that ran gets its part of that demand by its part of what the
//! workload received, and of the loops' weight likewise, each on the CPUs where it runs.

use super::account::Claim;

/// What `loops` closed loops want: what they received, and the wait they had while none of
/// their tasks ran, which is at most what others ran on their CPUs (all in CPUs).
pub(crate) fn demand(loops: u32, received: f64, waited: f64, others_ran: f64) -> f64 {
    (received + waited.min(others_ran).max(0.0)).min(f64::from(loops))
}

/// Reshapes a workload's claims into `loops` closed loops wanting `wanted` CPUs in all.
pub(crate) fn reshape(claims: &mut [Claim], loops: u32, wanted: f64) {
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
        claims[i].demand = (wanted * p).min(1.0);
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
        // Alone on their CPUs: they want what they got, both CPUs.
        let wanted = demand(2, 2.0, 2.0, 0.01);
        assert!((wanted - 2.0).abs() < 1e-12);
        reshape(&mut c, 2, wanted);
        assert_eq!(c[0].demand, 0.0);
        for x in &c[1..] {
            assert!((x.demand - 0.5).abs() < 1e-12 && (x.weight - 512.0).abs() < 1e-9);
        }
    }

    #[test]
    fn a_fork_loop_wants_a_whole_cpu_though_its_forker_mostly_waits() {
        // The forker's claim carries its reaped children; a live child got a little.
        // On one CPU beside four compilers that ran 0.8 of it: it waited while they ran.
        let mut c = vec![task(0.19, 0.2, 0), task(0.01, 0.01, 0)];
        let wanted = demand(1, 0.2, 3.0, 0.8);
        assert!((wanted - 1.0).abs() < 1e-12);
        reshape(&mut c, 1, wanted);
        assert!((c[0].demand + c[1].demand - 1.0).abs() < 1e-12);
        assert!((c[0].weight + c[1].weight - 1024.0).abs() < 1e-9);
    }

    #[test]
    fn a_pair_across_cpus_wants_what_it_ran_not_the_time_its_wakeups_cross() {
        // 0.64 of a CPU in all, the rest of each round trip in flight between CPUs; nothing
        // else ran there.
        assert!((demand(1, 0.64, 0.0004, 0.0) - 0.64).abs() < 1e-12);
    }

    #[test]
    fn a_loop_starved_outright_still_wants_its_cpu() {
        let mut c = vec![task(0.0, 0.0, 0), task(0.0, 0.0, 0)];
        reshape(&mut c, 1, demand(1, 0.0, 1.0, 1.0));
        assert!((c[0].demand - 0.5).abs() < 1e-12 && (c[1].demand - 0.5).abs() < 1e-12);
    }
}
