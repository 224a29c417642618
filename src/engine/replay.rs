//! A recording as the dashboard's engine: each tick hands the next recorded Frame to the UI,
//! so `schedlab replay FILE` shows a past run in the same dashboard as a live one. Read-only:
//! commands that would start, stop or change a workload are refused with one line. Playback
//! can be paused, stepped one interval, and moved by a tenth of the recording.

use std::time::Duration;

use anyhow::{bail, Result};

use crate::engine::{Backend, Playback, ReplayStatus};
use crate::knobs::Knobs;
use crate::model::Frame;
use crate::record::recording::Replay;
use crate::scenario::WorkloadDecl;

pub(crate) struct ReplayBackend {
    replay: Replay,
    /// The first tick shows the first Frame; later ticks advance.
    started: bool,
    /// The engine sends no Frames while paused.
    paused: bool,
}

impl ReplayBackend {
    pub fn new(replay: Replay) -> Self {
        ReplayBackend {
            replay,
            started: false,
            paused: false,
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
    /// The next recorded Frame; at the end, or while paused, the same one again.
    fn tick(&mut self) -> Frame {
        if self.started && !self.paused {
            self.replay.next_frame();
        }
        self.started = true;
        self.replay.current().clone()
    }
    fn replay_status(&self) -> Option<ReplayStatus> {
        Some(ReplayStatus {
            duration: self.replay.duration(),
            paused: self.paused,
        })
    }
    fn playback(&mut self, p: Playback) -> Result<Option<Vec<Frame>>> {
        match p {
            Playback::TogglePause => {
                self.paused = !self.paused;
                return Ok(None);
            }
            Playback::Step(n) => {
                self.paused = true;
                for _ in 0..n.unsigned_abs() {
                    let moved = if n > 0 {
                        self.replay.next_frame().is_some()
                    } else {
                        self.replay.prev_frame().is_some()
                    };
                    if !moved {
                        break;
                    }
                }
            }
            Playback::SeekFraction(x) => {
                // A hair past the target, so rounding cannot land one Frame short of it.
                self.replay.seek_by(x * self.replay.duration() + 1e-9);
            }
        }
        // The UI now shows the current Frame: the next tick moves on from it.
        self.started = true;
        Ok(Some(self.replay.history().to_vec()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recording of `samples` samples one second apart: Frames at t = 1, 2, ... s.
    fn recording(dir: &tempfile::TempDir, samples: u64) -> std::path::PathBuf {
        let path = dir.path().join("r.jsonl");
        let mut text = String::new();
        let header = crate::record::recording::Header::new(
            &crate::scenario::Scenario::builtin_default(),
            2,
            true,
        );
        text.push_str(&serde_json::to_string(&header).unwrap());
        text.push('\n');
        for k in 0..samples {
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
        path
    }

    fn times(frames: &[Frame]) -> Vec<f64> {
        frames.iter().map(|f| f.t).collect()
    }

    #[test]
    fn read_only_and_ids_from_the_recording() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = ReplayBackend::new(Replay::open(&recording(&dir, 3)).unwrap());
        let decl = crate::scenario::Scenario::builtin_default().workloads[1].clone();
        assert_eq!(b.add(decl).unwrap(), 7);
        assert!(b.stop(7).unwrap_err().to_string().contains("replay"));
        let t1 = b.tick().t;
        let t2 = b.tick().t;
        let t3 = b.tick().t;
        assert!(t1 < t2 && t2 == t3, "advances, then holds the last frame");
    }

    #[test]
    fn pause_holds_the_frame_until_resumed() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = ReplayBackend::new(Replay::open(&recording(&dir, 11)).unwrap());
        let status = b.replay_status().unwrap();
        assert_eq!((status.duration, status.paused), (10.0, false));
        b.tick();
        assert_eq!(b.tick().t, 2.0);
        assert_eq!(b.playback(Playback::TogglePause).unwrap(), None);
        assert!(b.replay_status().unwrap().paused);
        assert_eq!(b.tick().t, 2.0);
        assert_eq!(b.tick().t, 2.0);
        b.playback(Playback::TogglePause).unwrap();
        assert!(!b.replay_status().unwrap().paused);
        assert_eq!(b.tick().t, 3.0);
    }

    #[test]
    fn steps_and_seeks_land_on_the_right_time_with_the_history_up_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = ReplayBackend::new(Replay::open(&recording(&dir, 11)).unwrap());
        b.tick();
        b.tick();
        // A step pauses, and moves one recorded interval.
        let h = b.playback(Playback::Step(1)).unwrap().unwrap();
        assert_eq!(times(&h), vec![1.0, 2.0, 3.0]);
        assert!(b.replay_status().unwrap().paused);
        assert_eq!(b.tick().t, 3.0, "held after a step");
        let h = b.playback(Playback::Step(-1)).unwrap().unwrap();
        assert_eq!(times(&h), vec![1.0, 2.0]);
        // A tenth of 10 s, forward then back; and the ends hold.
        let h = b.playback(Playback::SeekFraction(0.1)).unwrap().unwrap();
        assert_eq!(h.last().unwrap().t, 3.0);
        assert_eq!(h.len(), 3);
        let h = b.playback(Playback::SeekFraction(-0.1)).unwrap().unwrap();
        assert_eq!(times(&h), vec![1.0, 2.0]);
        let h = b.playback(Playback::SeekFraction(-0.1)).unwrap().unwrap();
        let h2 = b.playback(Playback::SeekFraction(-0.1)).unwrap().unwrap();
        assert_eq!((times(&h), times(&h2)), (vec![1.0], vec![1.0]));
        for _ in 0..12 {
            b.playback(Playback::SeekFraction(0.1)).unwrap();
        }
        let h = b.playback(Playback::Step(1)).unwrap().unwrap();
        assert_eq!(h.len(), 10);
        assert_eq!(h.last().unwrap().t, 10.0);
        // Resumed after a seek: playback goes on from the new position.
        b.playback(Playback::Step(-5)).unwrap();
        b.playback(Playback::TogglePause).unwrap();
        assert_eq!(b.tick().t, 6.0);
    }

    #[test]
    fn the_engine_sends_no_frame_while_paused() {
        use crate::engine::thread::Engine;
        use crate::engine::{Command, Event};
        use std::sync::mpsc;
        let dir = tempfile::tempdir().unwrap();
        let b = ReplayBackend::new(Replay::open(&recording(&dir, 11)).unwrap());
        let (ctx, crx) = mpsc::channel();
        let (etx, erx) = mpsc::channel();
        let h = std::thread::spawn(move || {
            Engine::new(Box::new(b), Duration::from_millis(10))
                .run(crx, move |e| etx.send(e).is_ok())
        });
        let first = erx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(matches!(first, Event::Replay(s) if !s.paused), "{first:?}");
        ctx.send(Command::Playback(Playback::TogglePause)).unwrap();
        loop {
            match erx.recv_timeout(Duration::from_secs(5)).unwrap() {
                Event::Replay(s) if s.paused => break,
                Event::Frame(_) => {}
                other => panic!("{other:?}"),
            }
        }
        // From here on the engine only answers: a step, then the end.
        ctx.send(Command::Playback(Playback::Step(1))).unwrap();
        ctx.send(Command::Quit).unwrap();
        h.join().unwrap();
        let rest: Vec<Event> = erx.try_iter().collect();
        assert!(
            matches!(rest.as_slice(), [Event::History(h), Event::Replay(s)] if s.paused && !h.is_empty()),
            "{rest:?}"
        );
    }
}
