//! The sampling side of the dashboard, on a thread of its own (as bottom collects off the UI
//! thread): it owns the workloads and the probe, samples every interval, and sends Frames over
//! a channel. The UI only sends commands and draws what arrives, so a slow sweep over 5,000
//! tasks never delays a key press.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::engine::lab::Lab;
use crate::model::Frame;
use crate::scenario::WorkloadDecl;
use crate::supervisor::{Knobs, Placement};

/// What the UI asks of the engine.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    Add(WorkloadDecl),
    /// Start a stopped or finished workload again (same id, same knobs).
    Restart(u32),
    Stop(u32),
    Remove(u32),
    /// New knobs for a workload: applied live when possible; a new placement restarts it.
    SetKnobs(u32, Knobs),
    SetInterval(Duration),
    /// Pause or seek a replay (a live backend refuses).
    Playback(Playback),
    /// Stop everything and end the thread.
    Quit,
}

/// What the engine tells the UI.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    Frame(Frame),
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
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Playback {
    TogglePause,
    /// This many recorded intervals forward (negative: back); pauses playback.
    Step(i32),
    /// This fraction of the recording forward (negative: back); playback goes on as it was.
    SeekFraction(f64),
}

/// A replay's length and whether it plays; the position is the shown Frame's time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
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
    /// Samples now and derives the Frame for the interval since the last sample.
    fn tick(&mut self) -> Frame;
    /// The process groups and cgroup directories of every live workload, for the exit path.
    fn live_groups(&self) -> Vec<LiveGroup>;
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
}

/// What the exit hook kills when the dashboard is ended by a signal or a panic, while the
/// engine thread may be busy: kept up to date after every command.
static LIVE: Mutex<Vec<LiveGroup>> = Mutex::new(Vec::new());

/// Registers the exit hook that kills every live workload (lifeline runs it on SIGTERM,
/// SIGHUP, SIGINT and panics). A SIGKILL of the dashboard leaves it to the supervisor's
/// lifeline pipe: each workload gets SIGTERM when the pipe's writer, us, is gone.
pub fn install_exit_hook() {
    crate::sys::lifeline::on_exit(kill_live_groups);
}

fn kill_live_groups() {
    let groups = match LIVE.try_lock() {
        Ok(mut g) => std::mem::take(&mut *g),
        Err(std::sync::TryLockError::Poisoned(p)) => std::mem::take(&mut *p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    for g in &groups {
        if g.pgid > 1 {
            unsafe { libc::kill(-(g.pgid as libc::pid_t), libc::SIGKILL) };
        }
    }
    // cgroups outlive their tasks unless removed; give the killed tasks a moment to exit.
    let deadline = Instant::now() + Duration::from_millis(500);
    for g in &groups {
        for dir in &g.cgroup_dirs {
            for pid in read_ids(&dir.join("cgroup.procs")) {
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            }
        }
        for dir in g.cgroup_dirs.iter().rev() {
            while std::fs::remove_dir(dir).is_err() && dir.exists() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

fn read_ids(path: &std::path::Path) -> Vec<u32> {
    std::fs::read_to_string(path)
        .map(|s| {
            s.split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

fn publish_live(backend: &dyn Backend) {
    let groups = backend.live_groups();
    if let Ok(mut live) = LIVE.lock() {
        *live = groups;
    }
}

/// Runs the engine until `Command::Quit` or until the UI hangs up (`sink` returns false).
/// A Frame goes to `sink` every `interval`; commands are served as they come, between samples.
pub fn run(
    mut backend: Box<dyn Backend>,
    mut interval: Duration,
    commands: Receiver<Command>,
    mut sink: impl FnMut(Event) -> bool,
) {
    let mut next = Instant::now() + interval;
    if let Some(status) = backend.replay_status() {
        if !sink(Event::Replay(status)) {
            return;
        }
    }
    loop {
        let now = Instant::now();
        let cmd = match commands.recv_timeout(next.saturating_duration_since(now)) {
            Ok(cmd) => cmd,
            Err(RecvTimeoutError::Timeout) => {
                // A paused replay sends nothing: the UI keeps what it has.
                if !backend.replay_status().is_some_and(|s| s.paused)
                    && !sink(Event::Frame(backend.tick()))
                {
                    break;
                }
                publish_live(backend.as_ref());
                // Keep to the grid; after a long stall start afresh instead of bursting.
                next += interval;
                if next < Instant::now() {
                    next = Instant::now() + interval;
                }
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => break,
        };
        let reply = match cmd {
            Command::Quit => break,
            Command::Add(decl) => match backend.add(decl.clone()) {
                Ok(id) => vec![Event::Added(id, decl)],
                Err(e) => vec![Event::Error(format!("cannot add {}: {e:#}", decl.name))],
            },
            // The next Frame shows a restart or a stop.
            Command::Restart(id) => match backend.restart(id) {
                Ok(()) => vec![],
                Err(e) => vec![Event::Error(format!("cannot restart: {e:#}"))],
            },
            Command::Stop(id) => match backend.stop(id) {
                Ok(()) => vec![],
                Err(e) => vec![Event::Error(format!("cannot stop: {e:#}"))],
            },
            Command::Remove(id) => match backend.remove(id) {
                Ok(()) => vec![Event::Removed(id)],
                Err(e) => vec![Event::Error(format!("cannot remove: {e:#}"))],
            },
            Command::SetKnobs(id, knobs) => match backend.set_knobs(id, &knobs) {
                Ok(what) => vec![Event::Knobs(id, knobs), Event::Notice(what)],
                Err(e) => {
                    let mut out = vec![Event::Error(format!("{e:#}"))];
                    out.extend(backend.knobs(id).map(|k| Event::Knobs(id, k)));
                    out
                }
            },
            Command::Playback(p) => match backend.playback(p) {
                Ok(history) => history
                    .map(Event::History)
                    .into_iter()
                    .chain(backend.replay_status().map(Event::Replay))
                    .collect(),
                Err(e) => vec![Event::Error(format!("{e:#}"))],
            },
            Command::SetInterval(d) => {
                backend.set_interval(d);
                interval = d;
                next = Instant::now() + d;
                continue;
            }
        };
        publish_live(backend.as_ref());
        if !reply.into_iter().all(&mut sink) {
            break;
        }
    }
    // Dropping the backend stops every workload and removes their cgroups.
    drop(backend);
    if let Ok(mut live) = LIVE.lock() {
        live.clear();
    }
}

/// The real engine: the Lab, with live knobs and cgroup placement wired in.
impl Backend for Lab {
    fn add(&mut self, decl: WorkloadDecl) -> Result<u32> {
        let id = Lab::add(self, decl)?;
        sync_cgroup(self, id);
        Ok(id)
    }

    fn restart(&mut self, id: u32) -> Result<()> {
        let r = Lab::restart(self, id);
        sync_cgroup(self, id);
        r
    }

    fn stop(&mut self, id: u32) -> Result<()> {
        Lab::stop(self, id);
        Ok(())
    }

    fn remove(&mut self, id: u32) -> Result<()> {
        Lab::remove(self, id);
        Ok(())
    }

    fn set_knobs(&mut self, id: u32, knobs: &Knobs) -> Result<String> {
        let Some(old) = Backend::knobs(self, id) else {
            bail!("no workload {id}");
        };
        let name = self
            .decl_mut(id)
            .map(|d| d.name.clone())
            .unwrap_or_default();
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
                sync_cgroup(self, id);
                return Err(e.context(match back {
                    Ok(()) => format!("{name}: kept its old placement"),
                    Err(_) => format!("{name}: could not restart it"),
                }));
            }
            sync_cgroup(self, id);
            return Ok(format!(
                "{name}: restarted in {}",
                crate::supervisor::knobs::placement_words(&knobs.placement)
            ));
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

    fn live_groups(&self) -> Vec<LiveGroup> {
        self.workloads()
            .iter()
            .filter_map(|w| self.running(w.id))
            .map(|r| LiveGroup {
                pgid: r.pgid(),
                cgroup_dirs: r.cgroup().map(|g| g.dirs().to_vec()).unwrap_or_default(),
            })
            .collect()
    }
}

fn set_decl_knobs(lab: &mut Lab, id: u32, knobs: Knobs) {
    if let Some(d) = lab.decl_mut(id) {
        d.knobs = knobs;
    }
}

/// Tells the probe where a workload's own cgroup is (exact accounting, its weight).
fn sync_cgroup(lab: &mut Lab, id: u32) {
    let dir = lab
        .running(id)
        .and_then(|r| r.cgroup())
        .map(|g| g.dir().to_path_buf());
    lab.set_cgroup(id, dir);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;
    use std::sync::mpsc;

    #[derive(Default)]
    struct Fake {
        next_id: u32,
        ticks: u32,
    }

    impl Backend for Fake {
        fn add(&mut self, decl: WorkloadDecl) -> Result<u32> {
            if decl.name == "bad" {
                anyhow::bail!("no such thing");
            }
            self.next_id += 1;
            Ok(self.next_id)
        }
        fn restart(&mut self, _: u32) -> Result<()> {
            Ok(())
        }
        fn stop(&mut self, _: u32) -> Result<()> {
            Ok(())
        }
        fn remove(&mut self, _: u32) -> Result<()> {
            Ok(())
        }
        fn set_knobs(&mut self, _: u32, k: &Knobs) -> Result<String> {
            Ok(format!("nice {}", k.nice))
        }
        fn knobs(&self, _: u32) -> Option<Knobs> {
            None
        }
        fn set_interval(&mut self, _: Duration) {}
        fn tick(&mut self) -> Frame {
            self.ticks += 1;
            Frame {
                t: self.ticks as f64,
                ..Frame::default()
            }
        }
        fn live_groups(&self) -> Vec<LiveGroup> {
            Vec::new()
        }
    }

    #[test]
    fn commands_are_answered_and_frames_flow() {
        let (ctx, crx) = mpsc::channel();
        let (etx, erx) = mpsc::channel();
        let h = std::thread::spawn(move || {
            run(
                Box::new(Fake::default()),
                Duration::from_millis(20),
                crx,
                move |e| etx.send(e).is_ok(),
            )
        });
        let mut decl = Scenario::builtin_default().workloads[0].clone();
        ctx.send(Command::Add(decl.clone())).unwrap();
        decl.name = "bad".into();
        ctx.send(Command::Add(decl)).unwrap();
        let mut added = false;
        let mut error = false;
        let mut frames = 0;
        while frames < 3 || !added || !error {
            match erx.recv_timeout(Duration::from_secs(5)).unwrap() {
                Event::Added(1, d) => added = d.name == "ref-job",
                Event::Error(e) => error = e.contains("cannot add bad: no such thing"),
                Event::Frame(_) => frames += 1,
                _ => {}
            }
        }
        ctx.send(Command::Quit).unwrap();
        h.join().unwrap();
    }
}
