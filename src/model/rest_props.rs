//! A property of the rest of the machine through the whole model: for any mix of tasks seen,
//! threads and children born and gone between reads, and unseen time, the fair shares of all
//! groups never exceed the machine and every CPU-second the rest took lands in one group.

use proptest::prelude::*;

use super::derive::Model;
use crate::probe::{CpuTimes, MachineSample, RestProc, RestSample, RestTask, Sample};

const SEC: u64 = 1_000_000_000;

/// A process of the rest: its session, its seen threads' (run, wait, slices, switches), and
/// what its threads born and gone (extra own) and its reaped children used, in ms.
#[derive(Clone, Debug)]
struct Proc {
    session: u32,
    nice: i32,
    threads: Vec<(u64, u64, u64, bool)>,
    unseen_own: u64,
    reaped: u64,
}

fn procs() -> impl Strategy<Value = Vec<Proc>> {
    let thread = (0u64..1000, 0u64..1000, 0u64..200, any::<bool>());
    let proc = (
        0u32..4,
        -5i32..6,
        prop::collection::vec(thread, 0..4),
        0u64..1500,
        0u64..1500,
    )
        .prop_map(|(session, nice, threads, unseen_own, reaped)| Proc {
            session,
            nice,
            threads,
            unseen_own,
            reaped,
        });
    prop::collection::vec(proc, 1..8)
}

/// The rest's read over one second, scaled so that it used no more than the machine.
fn rest(ps: &[Proc], cpus: usize) -> (RestSample, u64) {
    let used: u64 = ps
        .iter()
        .map(|p| p.threads.iter().map(|t| t.0).sum::<u64>() + p.unseen_own + p.reaped)
        .sum();
    let room = cpus as u64 * 1000;
    let scale = |ms: u64| ms * room.min(used.max(1)) / used.max(1) * 1_000_000;
    let mut tasks = Vec::new();
    let mut out = Vec::new();
    for (i, p) in ps.iter().enumerate() {
        let pid = 1000 + i as u32 * 10;
        let session = 100 + p.session;
        let autogroup = Some((u64::from(session), 0));
        let mut seen = 0;
        for (j, &(run, wait, slices, preempted)) in p.threads.iter().enumerate() {
            let run = scale(run);
            seen += run;
            tasks.push(RestTask {
                pid,
                tid: pid + j as u32,
                comm: format!("p{i}"),
                session,
                autogroup,
                run_ns: run,
                wait_ns: wait * 1_000_000,
                slices,
                runnable: preempted,
                vol: Some(if preempted { 0 } else { slices }),
                invol: Some(if preempted { slices } else { 0 }),
                nice: p.nice,
                ..RestTask::default()
            });
        }
        out.push(RestProc {
            pid,
            comm: format!("p{i}"),
            session,
            autogroup,
            own_ns: seen + scale(p.unseen_own),
            reaped_ns: scale(p.reaped),
            nice: p.nice,
            ..RestProc::default()
        });
    }
    let total = out.iter().map(|p| p.own_ns + p.reaped_ns).sum();
    let sample = RestSample {
        t_ns: 2 * SEC,
        since_ns: SEC,
        tasks,
        procs: out,
        skipped: 0,
    };
    (sample, total)
}

fn machine(cpus: usize, busy_ns: u64, rest: Option<RestSample>) -> MachineSample {
    let per_cpu = (0..cpus)
        .map(|id| CpuTimes {
            id: id as u32,
            busy_ns: busy_ns / cpus as u64,
            idle_ns: 0,
            ..CpuTimes::default()
        })
        .collect();
    MachineSample {
        cpus,
        autogroup: true,
        busy_ns,
        per_cpu,
        rest,
        ..MachineSample::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn shares_fit_the_machine_and_every_cpu_second_has_one_group(
        ps in procs(),
        cpus in 1usize..5,
    ) {
        let (rest, used) = rest(&ps, cpus);
        let prev = Sample {
            t_ns: SEC,
            machine: machine(cpus, 0, None),
            ..Sample::default()
        };
        let cur = Sample {
            t_ns: 2 * SEC,
            machine: machine(cpus, used, Some(rest)),
            ..Sample::default()
        };
        let mut m = Model::new();
        m.first(&prev);
        let f = m.step(&prev, &cur);
        let eps = 1e-6;
        let fair: f64 = f.machine.rest_groups.iter().map(|g| g.fair).sum();
        prop_assert!(fair <= cpus as f64 + eps, "due {fair} on {cpus} CPUs");
        prop_assert!(f.machine.rest_cpu_fair <= cpus as f64 + eps);
        let received: f64 = f.machine.rest_groups.iter().map(|g| g.received).sum();
        let took = used as f64 / SEC as f64;
        prop_assert!(
            (received - took).abs() < 1e-3,
            "the groups received {received}, the rest took {took}"
        );
        // One group per session: no CPU-second in two.
        let mut keys: Vec<_> = f.machine.rest_groups.iter().map(|g| g.key.clone()).collect();
        keys.sort();
        keys.dedup();
        prop_assert_eq!(keys.len(), f.machine.rest_groups.len());
    }
}
