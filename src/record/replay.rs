//! A recording as the dashboard's engine: each tick hands the next recorded Frame to the UI,
//! so `schedlab replay FILE` shows a past run in the same dashboard as a live one. Read-only:
//! commands that would start, stop or change a workload are refused with one line.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Result};

use crate::model::Frame;
use crate::record::recording::Replay;
use crate::scenario::WorkloadDecl;
use crate::supervisor::Knobs;
use crate::ui::engine::{Backend, LiveGroup};

pub struct ReplayBackend {
    replay: Replay,
    /// The first tick shows the first Frame; later ticks advance.
    started: bool,
}

impl ReplayBackend {
    pub fn new(replay: Replay) -> Self {
        ReplayBackend {
            replay,
            started: false,
        }
    }
}

const READ_ONLY: &str = "this is a replay of a recording: nothing can be started or changed";

impl Backend for ReplayBackend {
    /// The dashboard adds the recorded scenario's workloads; answer with the id they had when
    /// recorded, so the recorded Frames land on the right rows.
    fn add(&mut self, decl: WorkloadDecl) -> Result<u32> {
        self.replay
            .frames()
            .iter()
            .flat_map(|f| &f.workloads)
            .find(|w| w.name == decl.name)
            .map(|w| w.id)
            .ok_or_else(|| anyhow::anyhow!("{}: not in the recording", decl.name))
    }
    fn restart(&mut self, _id: u32) -> Result<()> {
        bail!(READ_ONLY)
    }
    fn stop(&mut self, _id: u32) -> Result<()> {
        bail!(READ_ONLY)
    }
    fn remove(&mut self, _id: u32) -> Result<()> {
        bail!(READ_ONLY)
    }
    fn set_knobs(&mut self, _id: u32, _knobs: &Knobs) -> Result<String> {
        bail!(READ_ONLY)
    }
    fn knobs(&self, _id: u32) -> Option<Knobs> {
        None
    }
    /// The playback speed: one recorded interval per tick.
    fn set_interval(&mut self, _interval: Duration) {}
    /// The next recorded Frame; at the end, the last one again (the run is over).
    fn tick(&mut self) -> Frame {
        if self.started {
            self.replay.next_frame();
        }
        self.started = true;
        self.replay.current().clone()
    }
    fn live_groups(&self) -> Vec<LiveGroup> {
        Vec::new()
    }
}

/// Opens the dashboard on a recording.
pub fn dashboard(path: &Path) -> Result<()> {
    let replay = Replay::open(path)?;
    let mut scenario = replay.header().scenario.clone();
    // The header line says it is a replay, and of which run.
    scenario.name = format!(
        "replay of {}{}",
        scenario.name,
        if replay.complete() {
            ""
        } else {
            " (cut short)"
        }
    );
    let interval = Duration::from_millis(scenario.interval_ms);
    crate::ui::run(scenario, interval, move |_| {
        Ok(Box::new(ReplayBackend::new(replay)) as Box<dyn Backend>)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_and_ids_from_the_recording() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let mut text = String::new();
        let header = crate::record::recording::Header::new(
            &crate::scenario::Scenario::builtin_default(),
            2,
            true,
        );
        text.push_str(&serde_json::to_string(&header).unwrap());
        text.push('\n');
        for k in 0..3u64 {
            let s = crate::probe::Sample {
                t_ns: (k + 1) * 1_000_000_000,
                workloads: vec![crate::probe::WorkloadSample {
                    id: 7,
                    name: "fork_load".into(),
                    ops: Some(k * 10),
                    ..Default::default()
                }],
                ..Default::default()
            };
            text.push_str(&format!(
                "{{\"sample\":{}}}\n",
                serde_json::to_string(&s).unwrap()
            ));
        }
        std::fs::write(&path, text).unwrap();
        let mut b = ReplayBackend::new(Replay::open(&path).unwrap());
        let decl = crate::scenario::Scenario::builtin_default().workloads[1].clone();
        assert_eq!(b.add(decl).unwrap(), 7);
        assert!(b.stop(7).unwrap_err().to_string().contains("replay"));
        let t1 = b.tick().t;
        let t2 = b.tick().t;
        let t3 = b.tick().t;
        assert!(t1 < t2 && t2 == t3, "advances, then holds the last frame");
    }
}
