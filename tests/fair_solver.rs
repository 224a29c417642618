//! Property tests of the fairness solver (`model::solver`): with CPU sets, groups, quotas and
//! real-time tasks it must never give a task more than it wanted or CPUs outside its set,
//! never overfill a set of CPUs or a quota, split by weight whatever it splits, and give
//! today's water-filling answer when every task may use every CPU.

use proptest::prelude::*;
use schedlab::model::cpuset::CpuSet;
use schedlab::model::fair::{hierarchical, water_fill, Claim, Entity};
use schedlab::model::solver::{solve, Class, Group, Limit, Machine, Task};
use schedlab::probe::parse::nice_to_weight;

const EPS: f64 = 1e-7;

fn machine(n: usize) -> Machine {
    Machine {
        cpus: CpuSet::first(n),
        fair_reserve: 0.05,
    }
}

/// A non-empty subset of CPUs 0..n, from bits.
fn set_of(bits: u8, n: usize) -> CpuSet {
    let mut s = CpuSet::new();
    for c in 0..n {
        if bits & (1 << c) != 0 {
            s.insert(c as u32);
        }
    }
    if s.is_empty() {
        s.insert((bits as usize % n) as u32);
    }
    s
}

fn fair_task(demand: f64, nice: i32, cpus: CpuSet, group: usize) -> Task {
    Task {
        group,
        weight: nice_to_weight(nice),
        demand,
        cpus,
        class: Class::Fair,
    }
}

/// Up to 4 CPUs, up to 3 groups under the root (one with a quota sometimes), up to 24 tasks
/// with any demand, nice, CPU set, group.
fn instance() -> impl Strategy<Value = (usize, Vec<Group>, Vec<Task>)> {
    (1usize..=4, 0usize..=3, any::<bool>(), 0.05f64..2.0).prop_flat_map(|(n, ngroups, quota, q)| {
        let mut groups = vec![Group::root()];
        for g in 0..ngroups {
            groups.push(Group {
                parent: 0,
                weight: [100.0, 1024.0, 3072.0][g % 3],
                quota: (quota && g == 0).then_some(q),
            });
        }
        let ng = groups.len();
        let tasks = prop::collection::vec((0.0f64..=1.0, -20i32..=19, any::<u8>(), 0..ng), 0..24)
            .prop_map(move |v| {
                v.into_iter()
                    .map(|(d, nice, bits, g)| fair_task(d, nice, set_of(bits, n), g))
                    .collect::<Vec<_>>()
            });
        (Just(n), Just(groups), tasks)
    })
}

fn subsets(n: usize) -> impl Iterator<Item = CpuSet> {
    (1u8..(1u8 << n)).map(move |b| set_of(b, n))
}

proptest! {
    #[test]
    fn no_task_above_its_demand_or_outside_its_cpus((n, groups, tasks) in instance()) {
        let s = solve(&machine(n), &groups, &tasks);
        for (x, t) in s.share.iter().zip(&tasks) {
            prop_assert!(*x >= -EPS && *x <= t.demand + EPS, "{x} for {t:?}");
        }
        // Every set of CPUs holds at most its size of the tasks confined to it.
        for set in subsets(n) {
            let inside: f64 = s
                .share
                .iter()
                .zip(&tasks)
                .filter(|(_, t)| t.cpus.is_subset(&set))
                .map(|(x, _)| x)
                .sum();
            prop_assert!(inside <= set.len() as f64 + EPS, "{inside} in {set}");
        }
        // Quotas hold.
        for (g, grp) in groups.iter().enumerate() {
            if let Some(q) = grp.quota {
                let got: f64 = s.share.iter().zip(&tasks).filter(|(_, t)| t.group == g).map(|(x, _)| x).sum();
                prop_assert!(got <= q + EPS, "group {g} got {got} over quota {q}");
            }
        }
    }

    #[test]
    fn every_task_is_bounded_by_something_real((n, groups, tasks) in instance()) {
        // Max-min: a task short of its demand is held by a full set of CPUs it is confined
        // to, or by a full quota; never by nothing.
        let s = solve(&machine(n), &groups, &tasks);
        for (i, t) in tasks.iter().enumerate() {
            match &s.limit[i] {
                Limit::Idle => prop_assert!(t.demand <= 1e-12),
                Limit::Demand => prop_assert!((s.share[i] - t.demand).abs() < EPS),
                Limit::Cpus(set) => {
                    prop_assert!(t.cpus.is_subset(set), "{:?} not within {set}", t.cpus);
                    let filled: f64 = s
                        .share
                        .iter()
                        .zip(&tasks)
                        .filter(|(_, o)| o.cpus.is_subset(set))
                        .map(|(x, _)| x)
                        .sum();
                    prop_assert!(filled >= set.len() as f64 - 1e-6, "{set} holds only {filled}");
                }
                Limit::Quota(g) => {
                    let q = groups[*g].quota.unwrap();
                    let got: f64 = s.share.iter().zip(&tasks).filter(|(_, o)| o.group == *g).map(|(x, _)| x).sum();
                    prop_assert!(got >= q - 1e-6);
                }
                Limit::Reservation => prop_assert!(false, "no deadline task here"),
            }
        }
    }

    #[test]
    fn tasks_held_by_the_same_set_in_one_group_split_by_weight((n, groups, tasks) in instance()) {
        let s = solve(&machine(n), &groups, &tasks);
        for i in 0..tasks.len() {
            for j in 0..tasks.len() {
                let same = matches!((&s.limit[i], &s.limit[j]), (Limit::Cpus(a), Limit::Cpus(b)) if a == b)
                    && tasks[i].group == tasks[j].group;
                if same {
                    let li = s.share[i] / tasks[i].weight;
                    let lj = s.share[j] / tasks[j].weight;
                    prop_assert!((li - lj).abs() <= 1e-7 * li.max(lj) + 1e-12, "{li} vs {lj}");
                }
            }
        }
    }

    #[test]
    fn with_every_cpu_allowed_it_is_todays_water_filling(
        n in 1usize..=8,
        cs in prop::collection::vec((0.0f64..=1.0, -20i32..=19), 0..40),
    ) {
        let claims: Vec<Claim> = cs.iter().map(|&(d, nice)| Claim { demand: d, weight: nice_to_weight(nice) }).collect();
        let tasks: Vec<Task> = cs.iter().map(|&(d, nice)| fair_task(d, nice, CpuSet::first(n), 0)).collect();
        let want = water_fill(n as f64, &claims);
        let got = solve(&machine(n), &[], &tasks);
        for (a, b) in want.iter().zip(&got.share) {
            prop_assert!((a - b).abs() < 1e-7, "{want:?} vs {:?}", got.share);
        }
    }

    #[test]
    fn with_every_cpu_allowed_two_levels_are_todays_hierarchy(
        n in 1usize..=4,
        groups in prop::collection::vec((prop::collection::vec((0.0f64..=1.0, -20i32..=19), 0..6), 1u32..4000), 0..5),
        loose in prop::collection::vec((0.0f64..=1.0, -20i32..=19), 0..6),
    ) {
        let mut entities = Vec::new();
        let mut tree = vec![Group::root()];
        let mut tasks = Vec::new();
        for (members, w) in &groups {
            tree.push(Group { parent: 0, weight: *w as f64, quota: None });
            let g = tree.len() - 1;
            entities.push(Entity::Group {
                weight: *w as f64,
                tasks: members.iter().map(|&(d, nice)| Claim { demand: d, weight: nice_to_weight(nice) }).collect(),
            });
            tasks.extend(members.iter().map(|&(d, nice)| fair_task(d, nice, CpuSet::first(n), g)));
        }
        for &(d, nice) in &loose {
            entities.push(Entity::Task(Claim { demand: d, weight: nice_to_weight(nice) }));
            tasks.push(fair_task(d, nice, CpuSet::first(n), 0));
        }
        let want: Vec<f64> = hierarchical(n as f64, &entities).into_iter().flatten().collect();
        let got = solve(&machine(n), &tree, &tasks);
        for (a, b) in want.iter().zip(&got.share) {
            prop_assert!((a - b).abs() < 1e-7, "{want:?} vs {:?}", got.share);
        }
    }

    #[test]
    fn real_time_comes_first_and_leaves_the_fair_reserve(
        n in 1usize..=3,
        rt in prop::collection::vec((0.0f64..=1.0, 1u32..99, any::<u8>()), 1..6),
        fair in prop::collection::vec((0.0f64..=1.0, any::<u8>()), 0..6),
    ) {
        let mut tasks: Vec<Task> = rt.iter().map(|&(d, p, bits)| Task {
            group: 0, weight: 1024.0, demand: d, cpus: set_of(bits, n), class: Class::RealTime(p),
        }).collect();
        let nrt = tasks.len();
        tasks.extend(fair.iter().map(|&(d, _)| fair_task(d, 0, CpuSet::first(n), 0)));
        let s = solve(&machine(n), &[], &tasks);
        for set in subsets(n) {
            let all: f64 = s.share.iter().zip(&tasks).filter(|(_, t)| t.cpus.is_subset(&set)).map(|(x, _)| x).sum();
            prop_assert!(all <= set.len() as f64 + EPS);
        }
        // Fair tasks free to run anywhere share at least the fair reserve of every CPU
        // (or all they want), however the real-time tasks are pinned.
        let wanted: f64 = (nrt..tasks.len()).map(|i| tasks[i].demand).sum();
        let got: f64 = (nrt..tasks.len()).map(|i| s.share[i]).sum();
        prop_assert!(got >= (0.05 * n as f64).min(wanted) - 1e-6, "{got} of {wanted}");
        // Real-time tasks never get less than what the fair tasks leave them.
        let total: f64 = s.share.iter().sum();
        let all_wanted: f64 = tasks.iter().map(|t| t.demand).sum();
        prop_assert!(total >= all_wanted.min(n as f64) - 1e-6 || rt.iter().any(|r| r.0 > 0.0));
    }
}

#[test]
fn sixteen_thousand_tasks_with_different_demands_are_solved() {
    // The 200-room chat run: 16,000 threads, each wanting a little, in one group.
    let tasks: Vec<Task> = (0..16_000)
        .map(|k| fair_task(0.001 + (k % 997) as f64 * 1e-4, 0, CpuSet::first(2), 0))
        .collect();
    let s = solve(&machine(2), &[], &tasks);
    let total: f64 = s.share.iter().sum();
    assert!((total - 2.0).abs() < 1e-6, "{total}");
}
