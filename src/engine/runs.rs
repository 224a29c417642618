//! The runs of a finite workload, followed Frame by Frame: when one ends by itself, how long it
//! took, its mean throughput over it, and whether it starts again (a looping workload does).
//! Pure: a frontend keeps one [`RunTracker`] per workload and feeds it the Frames it receives,
//! live or replayed, and applies what it returns (the dashboard's LAST RUN column and its loop
//! key).

use crate::model::{WorkloadFrame, WorkloadState};

/// A finished run of a finite workload and its figure.
#[derive(Clone, Debug, PartialEq)]
pub struct RunResult {
    pub seconds: f64,
    /// Mean operations per second over the run.
    pub ops_per_sec: f64,
    pub exit_code: i32,
}

/// A run that ended in the Frame just seen.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Ended {
    pub run: RunResult,
    /// The policy: a looping workload is started again once a run ends by itself.
    pub restart: bool,
}

/// One workload's run in progress.
#[derive(Clone, Debug, Default)]
pub(crate) struct RunTracker {
    started: Option<f64>,
    ops: f64,
    last_state: Option<WorkloadState>,
}

impl RunTracker {
    /// Takes the workload's row of a Frame at session time `t`, `interval` seconds long.
    /// Returns the run that ended in it, if one did.
    pub(crate) fn observe(
        &mut self,
        t: f64,
        interval: f64,
        wf: &WorkloadFrame,
        looping: bool,
    ) -> Option<Ended> {
        let was = self.last_state.replace(wf.state.clone());
        match (&was, &wf.state) {
            (_, WorkloadState::Running) => {
                if !matches!(was, Some(WorkloadState::Running)) {
                    self.started = Some(t - interval);
                    self.ops = 0.0;
                }
                self.ops += wf.ops_per_sec * interval;
                None
            }
            (Some(WorkloadState::Running), WorkloadState::Done(code)) => {
                self.ops += wf.ops_per_sec * interval;
                let seconds = t - self.started.unwrap_or(t - interval);
                Some(Ended {
                    run: RunResult {
                        seconds,
                        ops_per_sec: if seconds > 0.0 {
                            self.ops / seconds
                        } else {
                            0.0
                        },
                        exit_code: *code,
                    },
                    restart: looping,
                })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(state: WorkloadState, ops_per_sec: f64) -> WorkloadFrame {
        WorkloadFrame {
            state,
            ops_per_sec,
            ..WorkloadFrame::default()
        }
    }

    #[test]
    fn a_run_is_timed_from_its_first_running_interval_to_its_end() {
        let mut r = RunTracker::default();
        assert_eq!(
            r.observe(1.0, 0.5, &row(WorkloadState::Starting, 0.0), true),
            None
        );
        assert_eq!(
            r.observe(1.5, 0.5, &row(WorkloadState::Running, 100.0), true),
            None
        );
        assert_eq!(
            r.observe(2.0, 0.5, &row(WorkloadState::Running, 300.0), true),
            None
        );
        let ended = r
            .observe(2.5, 0.5, &row(WorkloadState::Done(0), 200.0), false)
            .unwrap();
        assert_eq!(
            ended,
            Ended {
                run: RunResult {
                    seconds: 1.5,
                    ops_per_sec: 200.0,
                    exit_code: 0
                },
                restart: false
            }
        );
        // A run stopped by hand is no finished run.
        r.observe(3.0, 0.5, &row(WorkloadState::Running, 1.0), true);
        assert_eq!(
            r.observe(3.5, 0.5, &row(WorkloadState::Stopped, 0.0), true),
            None
        );
    }
}
