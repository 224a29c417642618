//! The engine's one loop: it owns the workloads and the probe (through its Backend), samples
//! every interval, serves commands between samples, and hands each Frame to its frontend. The
//! dashboard runs it on a thread of its own (as bottom collects off the UI thread), so a slow
//! sweep over 5,000 tasks never delays a key press; `run` runs it on its own thread, with the
//! raw Samples for its recording.

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::{Backend, Command, Event};

/// A Backend and how it is driven.
pub(crate) struct Engine {
    backend: Box<dyn Backend>,
    interval: Duration,
    samples: bool,
}

impl Engine {
    pub fn new(backend: Box<dyn Backend>, interval: Duration) -> Engine {
        Engine {
            backend,
            interval,
            samples: false,
        }
    }

    /// Sends the raw Sample behind each Frame too ([`Event::Sample`], right after it).
    pub(crate) fn with_samples(mut self) -> Engine {
        self.samples = true;
        self
    }

    /// Runs until `Command::Quit`, until `commands` has no sender left, or until `sink`
    /// returns false (the frontend is done or gone). A Frame goes to `sink` every interval;
    /// commands are served as they come, between samples. Every workload is stopped before
    /// it returns.
    pub fn run(self, commands: Receiver<Command>, mut sink: impl FnMut(Event) -> bool) {
        let Engine {
            mut backend,
            mut interval,
            samples,
        } = self;
        let mut next = Instant::now() + interval;
        if let Some(status) = backend.replay_status() {
            if !sink(Event::Replay(status)) {
                return stop(backend);
            }
        }
        loop {
            let now = Instant::now();
            // A live Lab keeps the grid (its Samples say how late they were against it).
            if let Some(due) = backend.next_due() {
                next = due;
            }
            let cmd = match commands.recv_timeout(next.saturating_duration_since(now)) {
                Ok(cmd) => cmd,
                Err(RecvTimeoutError::Timeout) => {
                    // A paused replay sends nothing: the UI keeps what it has.
                    if !backend.replay_status().is_some_and(|s| s.paused)
                        && !tick(backend.as_mut(), samples, &mut sink)
                    {
                        break;
                    }
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
                Command::Tick => {
                    if !tick(backend.as_mut(), samples, &mut sink) {
                        break;
                    }
                    vec![]
                }
                Command::SetInterval(d) => {
                    backend.set_interval(d);
                    interval = d;
                    next = Instant::now() + d;
                    continue;
                }
                cmd => answer(backend.as_mut(), cmd),
            };
            if !reply.into_iter().all(&mut sink) {
                break;
            }
        }
        stop(backend)
    }
}

/// Samples once and hands the Frame (and its Sample, when asked) to the frontend; false when
/// the frontend is done.
fn tick(backend: &mut dyn Backend, samples: bool, sink: &mut impl FnMut(Event) -> bool) -> bool {
    if !sink(Event::Frame(backend.tick())) {
        return false;
    }
    match backend.sample() {
        Some(s) if samples => sink(Event::Sample(s)),
        _ => true,
    }
}

/// What the engine says to a command that changes a workload or a replay.
fn answer(backend: &mut dyn Backend, cmd: Command) -> Vec<Event> {
    match cmd {
        Command::Add(decl) => match backend.add(decl.clone()) {
            Ok(id) => {
                // An attached row's knobs start from its processes' own (their nice): the
                // dashboard's next `]` builds on those.
                let started = backend.knobs(id).filter(|k| *k != decl.knobs);
                let mut out = vec![Event::Added(id, decl)];
                out.extend(started.map(|k| Event::Knobs(id, k)));
                out
            }
            Err(e) => {
                // Named once, whether or not the backend's error names it already.
                let why = format!("{e:#}");
                let prefix = format!("{}: ", decl.name);
                let why = why.strip_prefix(&prefix).unwrap_or(&why);
                vec![Event::Error(format!("cannot add {}: {why}", decl.name))]
            }
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
        Command::KillAttached(id) => match backend.kill_attached(id) {
            Ok(what) => vec![Event::Notice(what)],
            Err(e) => vec![Event::Error(format!("{e:#}"))],
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
        Command::Quit | Command::SetInterval(_) | Command::Tick => vec![],
    }
}

/// Dropping the backend stops every workload and removes their cgroups; a Lab then tells
/// the exit hook it has nothing left to kill.
fn stop(backend: Box<dyn Backend>) {
    drop(backend);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knobs::Knobs;
    use crate::model::Frame;
    use crate::scenario::{Scenario, WorkloadDecl};
    use anyhow::Result;
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
    }

    /// A workload that cannot start is named once in the error, with what went wrong in
    /// words (the Lab and the supervisor leave the name to the engine).
    #[test]
    fn a_failed_add_names_the_workload_once() {
        let lab = crate::engine::lab::Lab::new(Duration::from_millis(100)).unwrap();
        let mut events = Vec::new();
        let (ctx, crx) = mpsc::channel();
        let decl = WorkloadDecl {
            name: "cpu-hog".into(),
            kind: crate::workload::registry::WorkloadKind::Command {
                argv: vec!["/nonexistent/prog".into()],
            },
            knobs: Knobs::default(),
            start_delay: 0.0,
            duration: None,
        };
        ctx.send(Command::Add(decl)).unwrap();
        ctx.send(Command::Quit).unwrap();
        Engine::new(Box::new(lab), Duration::from_secs(10)).run(crx, |e| {
            events.push(e);
            true
        });
        let error = events
            .iter()
            .find_map(|e| match e {
                Event::Error(text) => Some(text.clone()),
                _ => None,
            })
            .expect("an error");
        assert!(
            error.starts_with("cannot add cpu-hog: `/nonexistent/prog` could not be run: "),
            "{error}"
        );
        assert!(!error.contains("cpu-hog: cpu-hog"), "{error}");
    }

    #[test]
    fn commands_are_answered_and_frames_flow() {
        let (ctx, crx) = mpsc::channel();
        let (etx, erx) = mpsc::channel();
        let h = std::thread::spawn(move || {
            Engine::new(Box::new(Fake::default()), Duration::from_millis(20))
                .run(crx, move |e| etx.send(e).is_ok())
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
