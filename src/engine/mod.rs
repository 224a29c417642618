//! The engine every frontend is a client of: the Lab (workloads, probe, model), the contract
//! it is driven through, the engine thread, and replay.
//!
//! A frontend sends [`Command`]s and receives [`Event`]s; the engine's one loop
//! ([`thread::Engine`]) drives a [`Backend`]: the live Lab ([`live`]) or a recording
//! ([`replay`]). The dashboard runs it on a thread of its own, `run` on its own thread; what
//! a frontend makes of a finite workload's runs is [`runs`].

pub mod lab;
pub mod live;
pub mod live_groups;
pub mod replay;
pub mod runs;
pub(crate) mod schedule;
pub mod thread;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::knobs::Knobs;
use crate::model::Frame;
use crate::probe::Sample;
use crate::scenario::WorkloadDecl;

/// What the UI asks of the engine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Command {
    Add(WorkloadDecl),
    /// Start a stopped or finished workload again (same id, same knobs).
    Restart(u32),
    Stop(u32),
    Remove(u32),
    /// SIGTERM to an attached workload's processes, which the user confirmed; it is let go.
    KillAttached(u32),
    /// New knobs for a workload: applied live when possible; a new placement restarts it.
    SetKnobs(u32, Knobs),
    SetInterval(Duration),
    /// Sample now, off the grid: for a frontend that needs a reading at a moment of its own
    /// (contest, when its job ends).
    Tick,
    /// Pause or seek a replay (a live backend refuses).
    Playback(Playback),
    /// Stop everything and end the thread.
    Quit,
}

/// What the engine tells the UI (and, served, a remote dashboard: src/serve/).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Event {
    Frame(Frame),
    /// The raw Sample behind the Frame just sent, for a frontend that keeps them (a
    /// recording); sent only by an engine asked for them ([`thread::Engine::with_samples`]).
    Sample(Arc<Sample>),
    /// A workload was added under this id.
    Added(u32, WorkloadDecl),
    Removed(u32),
    /// A workload now runs with these knobs.
    Knobs(u32, Knobs),
    /// Something worth a line on screen.
    Notice(String),
    /// A command failed; the reason, in one line.
    Error(String),
    /// Where a replay stands: sent first, and after every playback command.
    Replay(ReplayStatus),
    /// The recording's Frames up to a new position, after a seek: the UI rebuilds its
    /// history from them, so the charts end where the table is.
    History(Vec<Frame>),
}

/// What a replay's keys ask for.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Playback {
    TogglePause,
    /// This many recorded intervals forward (negative: back); pauses playback.
    Step(i32),
    /// This fraction of the recording forward (negative: back); playback goes on as it was.
    SeekFraction(f64),
}

/// A replay's length and whether it plays; the position is the shown Frame's time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplayStatus {
    pub duration: f64,
    pub paused: bool,
}

/// What the engine drives: the Lab, or a stand-in in tests.
pub trait Backend: Send {
    fn add(&mut self, decl: WorkloadDecl) -> Result<u32>;
    fn restart(&mut self, id: u32) -> Result<()>;
    fn stop(&mut self, id: u32) -> Result<()>;
    fn remove(&mut self, id: u32) -> Result<()>;
    /// Applies new knobs; returns a line saying what happened ("reniced 5 threads").
    fn set_knobs(&mut self, id: u32, knobs: &Knobs) -> Result<String>;
    /// The knobs a workload has now (after a refused change, the old ones).
    fn knobs(&self, id: u32) -> Option<Knobs>;
    fn set_interval(&mut self, interval: Duration);
    /// Signals an attached workload's processes at the user's request; says what it did.
    fn kill_attached(&mut self, _id: u32) -> Result<String> {
        bail!("nothing attached can be killed here")
    }
    /// Samples now and derives the Frame for the interval since the last sample.
    fn tick(&mut self) -> Frame;
    /// The Sample behind the last Frame, when the backend has one.
    fn sample(&self) -> Option<Arc<Sample>> {
        None
    }
    /// When the next sample is due, for a backend that keeps its own grid (the live Lab: its
    /// Samples say how late they were against it); None: the engine keeps the grid.
    fn next_due(&self) -> Option<std::time::Instant> {
        None
    }
    /// Some for a replay of a recording; a live run has no position to show.
    fn replay_status(&self) -> Option<ReplayStatus> {
        None
    }
    /// Pauses or seeks a replay; returns the Frames up to the new position when it moved.
    fn playback(&mut self, _p: Playback) -> Result<Option<Vec<Frame>>> {
        bail!("only a replay can be paused or seeked")
    }
}

/// A live workload as the exit path sees it: enough to kill it without the engine's help.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiveGroup {
    pub pgid: u32,
    pub cgroup_dirs: Vec<PathBuf>,
    /// The workload's name (the dashboard's `E` tells the kernel's events apart by it).
    pub name: String,
}
