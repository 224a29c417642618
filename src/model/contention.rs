//! A workload waits only behind someone. Its tasks' run-queue wait is CPU it wanted only as
//! far as something else took the CPUs it may use meanwhile (other workloads, the rest of the
//! machine, real-time tasks) or its quota held it off them: a fair share divides the CPUs among
//! those who want them, and a workload whose tasks waited for each other (a chat server's
//! sender preempted by the receiver it woke) or while a CPU it may use stood idle was not
//! denied a share in anyone's favour. Alone on an idle machine, a workload wants what it got.
//!
//! So a workload's demand is at most what it received, plus what others ran on its CPUs and
//! the time its quota held it back, over the same interval. A CPU left idle while its tasks
//! queued elsewhere still shows, as their run-queue wait and in the per-CPU view, but not as a
//! share it was refused.

use super::account::Claim;

/// Caps a workload's claims so that together they want at most `cap` CPUs, never less than
/// each received: what each wanted beyond what it got shrinks in proportion. Nothing changes
/// when the CPUs it may use (`capacity`) hold no more than `cap` anyway: the solver's own
/// bound by those CPUs then says the same, and how its tasks split them (three hogs pinned to
/// one CPU: a third each, by weight) stays the reason it gives.
///
/// `slack`: how far under `capacity` a `cap` still says those CPUs were full. What others
/// took comes from /proc/stat, which counts each CPU's busy time in ticks: three hogs pinned
/// to a CPU it showed 99.6% busy read as wanting 0.996 of it, all they got, where they wanted
/// three CPUs' worth (CI's run, 250 ms intervals).
pub fn cap(claims: &mut [Claim], cap: f64, capacity: f64, slack: f64) {
    let received: f64 = claims.iter().map(|c| c.received.min(c.demand)).sum();
    let wanted: f64 = claims.iter().map(|c| c.demand).sum();
    if wanted <= cap || wanted <= received || capacity <= cap + slack.max(1e-9) {
        return;
    }
    let k = ((cap - received) / (wanted - received)).clamp(0.0, 1.0);
    for c in claims {
        let got = c.received.min(c.demand);
        c.demand = got + (c.demand - got) * k;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::cpuset::CpuSet;
    use crate::model::solver::Class;
    use crate::model::tree::Placement;

    fn task(received: f64, demand: f64) -> Claim {
        Claim {
            demand,
            received,
            weight: 1024.0,
            class: Class::Fair,
            cpus: CpuSet::new(),
            cpu: None,
            placement: Placement::default(),
        }
    }

    #[test]
    fn a_chat_alone_wants_what_it_got_however_its_threads_queued_for_each_other() {
        // 160 threads got 1.62 CPUs and queued behind each other for 9 CPUs' worth; nothing
        // else ran on the machine (its CPUs were 1.62 busy).
        let mut c: Vec<Claim> = (0..160).map(|_| task(1.62 / 160.0, 9.0 / 160.0)).collect();
        cap(&mut c, 1.62, 2.0, 0.0);
        let wanted: f64 = c.iter().map(|x| x.demand).sum();
        assert!((wanted - 1.62).abs() < 1e-9);
    }

    #[test]
    fn beside_others_it_wants_up_to_what_they_took() {
        // Four compilers and a fork loop on one CPU: the compilers got 0.42 and waited 3
        // CPUs' worth; the loop ran 0.58 there.
        let mut c = vec![task(0.105, 0.8); 4];
        cap(&mut c, 0.42 + 0.58, 2.0, 0.0);
        let wanted: f64 = c.iter().map(|x| x.demand).sum();
        assert!((wanted - 1.0).abs() < 1e-9);
        assert!(c.iter().all(|x| (x.demand - 0.25).abs() < 1e-9));
    }

    #[test]
    fn tasks_pinned_to_fewer_cpus_than_they_want_keep_their_demand() {
        // Three hogs pinned to CPU 0, alone: the CPU bounds them anyway, a third each.
        let mut c = vec![task(1.0 / 3.0, 1.0); 3];
        cap(&mut c, 1.0, 1.0, 0.0);
        assert!(c.iter().all(|x| x.demand == 1.0));
    }

    #[test]
    fn a_cpu_full_within_a_tick_of_proc_stat_is_full() {
        // Three hogs pinned to CPU 0, which /proc/stat showed 99.6% busy over 250 ms: within
        // its tick (0.04 there), so full, and each still wants the whole CPU.
        let mut c = vec![task(0.332, 1.0); 3];
        cap(&mut c, 0.996, 1.0, 0.04);
        assert!(c.iter().all(|x| x.demand == 1.0));
        // Idle a tenth of the time: they queued for each other, and want what they got.
        let mut c = vec![task(0.3, 1.0); 3];
        cap(&mut c, 0.9, 1.0, 0.04);
        let wanted: f64 = c.iter().map(|x| x.demand).sum();
        assert!((wanted - 0.9).abs() < 1e-9);
    }

    #[test]
    fn a_quota_it_waits_behind_counts_as_wanted() {
        // A hog capped at 20% of a CPU on an otherwise idle machine still wants it all.
        let mut c = vec![task(0.2, 1.0)];
        cap(&mut c, 0.2 + 0.8, 2.0, 0.0);
        assert!((c[0].demand - 1.0).abs() < 1e-9);
    }
}
