//! The live Backend: the Lab with live knobs wired in. What the exit hook kills is
//! `live_groups.rs`.

use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::{Backend, LiveGroup};
use crate::engine::lab::Lab;
use crate::knobs::{Knobs, Placement};
use crate::model::Frame;
use crate::scenario::WorkloadDecl;

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
