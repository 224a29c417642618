//! `E` on a row: the kernel's own scheduler events for a few seconds of the live lab (as
//! root), read as `schedlab explain` reads them (src/explain/tracer.rs), then shown in a box:
//! who preempted the selected workload and whom it preempted, its wakeup-to-run delays, its
//! new tasks' first runs, its migrations; and the command that runs the counterfactual
//! variants, which need the machine to themselves and so run headless, not beside the
//! dashboard's own workloads.

use std::time::{Duration, Instant};

use super::app::{App, EvidenceRun, Mode};
use crate::explain::tracer::Tracer;

/// How long the events are recorded.
const RECORD_FOR: Duration = Duration::from_secs(3);

impl App {
    /// Starts recording the events for the selected row.
    pub(crate) fn record_evidence(&mut self) {
        if self.replay.is_some() {
            self.error("a replay shows what was recorded: the kernel's events are live only");
            return;
        }
        if let Some(addr) = &self.remote {
            self.error(format!(
                "the kernel's events are read where the lab runs: `schedlab explain` there \
                 (this dashboard watches {addr})"
            ));
            return;
        }
        let Some(name) = self.selected_view().map(|w| w.decl.name.clone()) else {
            return;
        };
        if let Some(run) = &self.evidence {
            self.notice(format!(
                "already recording the kernel's events for {}",
                run.workload
            ));
            return;
        }
        match Tracer::open(self.cpus) {
            Err(why) => self.error(format!(
                "the kernel's events cannot be recorded here: {why} (tracefs needs root)"
            )),
            Ok(tracer) => {
                tracer.set_workloads(crate::engine::live_groups::live_workloads());
                tracer.go();
                self.notice(format!(
                    "recording the kernel's events for {} s ({name} selected)",
                    RECORD_FOR.as_secs()
                ));
                self.evidence = Some(EvidenceRun {
                    workload: name,
                    tracer,
                    until: Instant::now() + RECORD_FOR,
                });
            }
        }
    }

    /// At every Frame: keeps the recording's workloads current, and shows what it found once
    /// it is done.
    pub(crate) fn poll_evidence(&mut self) {
        let Some(run) = &self.evidence else { return };
        run.tracer
            .set_workloads(crate::engine::live_groups::live_workloads());
        if Instant::now() < run.until {
            return;
        }
        let run = self.evidence.take().expect("checked above");
        let Some(e) = run.tracer.finish() else {
            self.error("recording the kernel's events failed");
            return;
        };
        // The command first: the box keeps its first lines in view on a small screen.
        let mut lines = vec![
            format!(
                "Which mechanism: the counterfactual variants need the machine to themselves. \
                 Quit, then: schedlab explain {} --workload {}",
                self.scenario_name, run.workload
            ),
            String::new(),
        ];
        lines.extend(crate::explain::report::evidence_lines(&run.workload, &e));
        self.mode = Mode::Evidence(lines);
    }
}
