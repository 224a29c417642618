//! The live Backend: the Lab with live knobs wired in, and the registry
//! of live process groups and cgroups that the exit hook kills when the dashboard is ended by
//! a signal or a panic.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::{Backend, LiveGroup};
use crate::engine::lab::Lab;
use crate::knobs::{Knobs, Placement};
use crate::model::Frame;
use crate::scenario::WorkloadDecl;
use crate::sys::kernel::cgroup;

/// What the exit hook kills when the process is ended by a signal or a panic, while the Lab
/// that started them may be busy: each Lab's live workloads, by the Lab's key, kept up to date
/// by the Lab itself after every change and sample (a test binary runs several Labs at once).
static LIVE: Mutex<Vec<(u64, Vec<LiveGroup>)>> = Mutex::new(Vec::new());

/// Registers, once, the exit hook that kills every live workload (lifeline runs it on
/// SIGTERM, SIGHUP, SIGINT and panics). A SIGKILL leaves it to the supervisor's lifeline
/// pipe: each workload gets SIGTERM when the pipe's writer, us, is gone. Every Lab calls it.
pub(crate) fn install_exit_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| crate::sys::exit::lifeline::on_exit(kill_live_groups));
}

fn kill_live_groups() {
    let groups = match LIVE.try_lock() {
        Ok(mut g) => std::mem::take(&mut *g),
        Err(std::sync::TryLockError::Poisoned(p)) => std::mem::take(&mut *p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    let groups: Vec<LiveGroup> = groups.into_iter().flat_map(|(_, g)| g).collect();
    if groups.is_empty() {
        return;
    }
    let pgids: Vec<u32> = groups.iter().map(|g| g.pgid).collect();
    crate::sys::exit::groups::kill(&pgids);
    // cgroups outlive their tasks unless removed; give the killed tasks a moment to exit.
    let deadline = Instant::now() + Duration::from_millis(500);
    for g in &groups {
        cgroup::kill_and_remove_dirs(&g.cgroup_dirs, deadline);
    }
    // What they made in SysV, once they are gone: nothing is left when we exit.
    crate::sys::exit::groups::wait_then_sweep(&pgids, Duration::from_millis(1500));
}

/// The live workloads' process groups and names, as last published.
pub(crate) fn live_workloads() -> Vec<(u32, String)> {
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .flat_map(|(_, groups)| groups)
        .map(|g| (g.pgid, g.name.clone()))
        .collect()
}

/// Tells the exit hook which workloads the Lab keyed `lab` has live now.
pub(super) fn publish(lab: u64, groups: Vec<LiveGroup>) {
    let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    match live.iter_mut().find(|(key, _)| *key == lab) {
        Some(entry) => entry.1 = groups,
        None => live.push((lab, groups)),
    }
}

/// Forgets the Lab keyed `lab`: it stopped its workloads itself.
pub(super) fn forget(lab: u64) {
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|(key, _)| *key != lab);
}

/// The real engine: the Lab, with live knobs wired in. The Lab itself learns a workload's
/// cgroup when it starts it, so `run` (which drives the Lab directly) accounts it the same.
impl Backend for Lab {
    fn add(&mut self, decl: WorkloadDecl) -> Result<u32> {
        Lab::add(self, decl)
    }

    fn restart(&mut self, id: u32) -> Result<()> {
        Lab::restart(self, id)
    }

    fn stop(&mut self, id: u32) -> Result<()> {
        Lab::stop(self, id);
        Ok(())
    }

    fn remove(&mut self, id: u32) -> Result<()> {
        Lab::remove(self, id);
        Ok(())
    }

    fn kill_attached(&mut self, id: u32) -> Result<String> {
        let name = self
            .decl_mut(id)
            .map(|d| d.name.clone())
            .unwrap_or_default();
        let n = Lab::kill_attached(self, id)?;
        Ok(format!(
            "{name}: sent SIGTERM to {n} process{} (you asked); let go",
            if n == 1 { "" } else { "es" }
        ))
    }

    fn set_knobs(&mut self, id: u32, knobs: &Knobs) -> Result<String> {
        let Some(old) = Backend::knobs(self, id) else {
            bail!("no workload {id}");
        };
        let name = self
            .decl_mut(id)
            .map(|d| d.name.clone())
            .unwrap_or_default();
        let attached = self
            .decl_mut(id)
            .map(|d| d.kind.clone())
            .filter(|k| k.attached());
        if let Some(kind) = attached {
            // What schedlab did not start: each thread's old values are saved first, and put
            // back on detach and on every exit (src/sys/exit/undo.rs).
            if self.attached_tids(id).is_empty() {
                // Nothing live (let go, ended, pending): its next attach applies them.
                crate::engine::lab::attached_knobs_allowed(&kind, knobs)
                    .map_err(|why| anyhow::anyhow!("{name}: {why}"))?;
                set_decl_knobs(self, id, knobs.clone());
                return Ok(format!("{name}: new knobs from its next attach"));
            }
            let n = self
                .knob_attached(id, &old, knobs)
                .with_context(|| format!("{name}: knobs unchanged"))?;
            set_decl_knobs(self, id, knobs.clone());
            return Ok(format!(
                "{name}: new knobs on {n} threads (put back when it is let go)"
            ));
        }
        let in_cgroup = self.running(id).is_some_and(|r| r.cgroup().is_some());
        let live = old.placement == knobs.placement
            || (in_cgroup
                && matches!(
                    (&old.placement, &knobs.placement),
                    (Placement::Cgroup { .. }, Placement::Cgroup { .. })
                ));
        if !live {
            // A process group cannot change session or cgroup from outside: start it anew.
            set_decl_knobs(self, id, knobs.clone());
            if let Err(e) = Lab::restart(self, id) {
                set_decl_knobs(self, id, old);
                let back = Lab::restart(self, id);
                return Err(e.context(match back {
                    Ok(()) => format!("{name}: kept its old placement"),
                    Err(_) => format!("{name}: could not restart it"),
                }));
            }
            return Ok(format!("{name}: restarted in {}", knobs.placement.words()));
        }
        match self.running_mut(id) {
            Some(run) => {
                let n = run
                    .set_knobs(knobs)
                    .with_context(|| format!("{name}: knobs unchanged"))?;
                set_decl_knobs(self, id, knobs.clone());
                Ok(format!("{name}: new knobs on {n} threads"))
            }
            None => {
                set_decl_knobs(self, id, knobs.clone());
                Ok(format!("{name}: new knobs from its next start"))
            }
        }
    }

    fn knobs(&self, id: u32) -> Option<Knobs> {
        self.workloads()
            .into_iter()
            .find(|w| w.id == id)
            .map(|w| w.decl.knobs)
    }

    fn set_interval(&mut self, interval: Duration) {
        Lab::set_interval(self, interval);
    }

    fn tick(&mut self) -> Frame {
        Lab::tick(self)
    }

    fn next_due(&self) -> Option<std::time::Instant> {
        Some(Lab::next_due(self))
    }

    fn sample(&self) -> Option<std::sync::Arc<crate::probe::Sample>> {
        self.shared_sample()
    }
}

impl Lab {
    /// The process groups and cgroup directories of every live workload, for the exit path.
    pub(super) fn live_groups(&self) -> Vec<LiveGroup> {
        self.workloads()
            .iter()
            .filter_map(|w| Some((w, self.running(w.id)?)))
            .map(|(w, r)| LiveGroup {
                pgid: r.pgid(),
                cgroup_dirs: r.cgroup().map(|g| g.dirs().to_vec()).unwrap_or_default(),
                name: w.name.clone(),
            })
            .collect()
    }
}

fn set_decl_knobs(lab: &mut Lab, id: u32, knobs: Knobs) {
    if let Some(d) = lab.decl_mut(id) {
        d.knobs = knobs;
    }
}
