//! The dashboard's state: what arrived from the engine (Frames, kept as short histories), what
//! the person is doing (selection, overlays, frozen view, zoom), and the commands waiting to
//! go to the engine. No I/O: tests drive it with plain Frames and keys.

use std::cell::Cell;
use std::time::{Duration, Instant};

use ratatui::layout::Rect;

pub use crate::engine::runs::RunResult;
use crate::engine::runs::RunTracker;
use crate::engine::{Command, Event, Playback, ReplayStatus};
use crate::explain::tracer::Tracer;
use crate::knobs::{Knobs, Placement, Policy};
use crate::model::{Frame, WorkloadFrame, WorkloadState};
use crate::scenario::WorkloadDecl;

use super::form::Form;
use super::history::{MachineSeries, Point, Series};
use super::picker::Template;
use super::theme::Theme;

/// Sampling intervals offered by + and -.
pub(crate) const INTERVALS_MS: [u64; 9] = [100, 200, 250, 500, 1000, 2000, 3000, 5000, 10_000];
/// Time windows offered by z and Z, in seconds.
pub(crate) const WINDOWS: [f64; 7] = [15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 600.0];

/// One workload as the dashboard knows it.
#[derive(Clone, Debug)]
pub struct WorkloadView {
    pub id: u32,
    pub decl: WorkloadDecl,
    /// Its colour, for good: the order it arrived in.
    pub slot: usize,
    pub series: Series,
    /// Restart it each time it finishes.
    pub looping: bool,
    pub runs: Vec<RunResult>,
    /// Its run in progress: the engine's account of runs, fed with the Frames that arrive.
    run: RunTracker,
}

impl WorkloadView {
    /// Whether it ends by itself (so looping it means something): the registry's answer,
    /// the same `run` gives.
    pub fn finite(&self) -> bool {
        self.decl.kind.ends_by_itself()
    }
}

/// What covers the main screen.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Mode {
    #[default]
    Normal,
    Help,
    /// The list of kinds; the index of the highlighted one.
    Picker(usize),
    /// The parameters of a new workload.
    NewWorkload(Template, Form),
    /// The knobs of a running workload.
    EditKnobs(u32, Form),
    /// The last stderr lines of a failed workload.
    Stderr(u32),
    /// The last messages, in full.
    Messages,
    /// Asks before killing an attached row's processes (which schedlab did not start).
    ConfirmKill(u32),
    /// What the kernel's events said of a row (`E`), as lines.
    Evidence(Vec<String>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    pub text: String,
    pub error: bool,
    /// Frame time after which it fades.
    pub until: f64,
}

/// Where the table's rows were drawn, for mouse clicks: set while drawing.
#[derive(Clone, Copy, Debug, Default)]
pub struct TableGeometry {
    pub rows: Rect,
    pub offset: usize,
}

/// The kernel's events being recorded for a row (`E`, src/ui/evidence.rs), until `until`.
pub(crate) struct EvidenceRun {
    pub(super) workload: String,
    pub(super) tracer: Tracer,
    pub(super) until: Instant,
}

pub struct App {
    pub title: String,
    /// The scenario's name, as `schedlab explain` takes it.
    pub scenario_name: String,
    /// The kernel's events being recorded for a row (`E`).
    pub(crate) evidence: Option<EvidenceRun>,
    /// The address of the served lab shown (`tui --connect`); None: a lab of this process.
    pub remote: Option<String>,
    /// What the scenario reproduces, when it is a finding: the help overlay shows its text.
    pub finding: Option<crate::finding::Finding>,
    pub theme: Theme,
    pub interval: Duration,
    pub window: f64,
    pub cpus: usize,
    pub workloads: Vec<WorkloadView>,
    pub selected: usize,
    pub machine: MachineSeries,
    /// The newest Frame.
    pub latest: Option<Frame>,
    /// The Frame on screen while frozen.
    pub frozen: Option<Frame>,
    pub mode: Mode,
    /// The message the bottom line shows until it fades.
    pub message: Option<Message>,
    /// The last messages, oldest first, for the key that shows them in full.
    pub messages: Vec<Message>,
    pub quit: bool,
    /// Commands for the engine, drained by the main loop.
    pub outbox: Vec<Command>,
    /// A remove waiting for its confirming second key.
    pub pending_remove: Option<u32>,
    pub table_geometry: Cell<TableGeometry>,
    /// Some in a replay of a recording: its length and whether it plays.
    pub replay: Option<ReplayStatus>,
    /// The latency panel is shown where the layout would not show it, and hidden where it
    /// would (App::latency_shown).
    pub latency_toggled: bool,
    /// The per-CPU view takes the charts' place.
    pub cpu_view: bool,
    /// The rest of the machine's groups are listed under its row.
    pub rest_expanded: bool,
    /// The width the charts were last drawn at, for what the latency key does: set while
    /// drawing.
    pub chart_width: Cell<u16>,
    next_slot: usize,
    /// Workloads the person asked for and the engine has not added yet, by name, with their
    /// loop setting: once added, each is selected.
    asked: Vec<(String, bool)>,
}

/// Messages kept for the key that shows them in full.
const MESSAGES_KEPT: usize = 20;

/// From this width the latency panel is beside the three charts unless hidden: four panels
/// of 35 columns still hold a y axis and a minute of points.
pub(crate) const LATENCY_BESIDE_WIDTH: u16 = 140;

/// Whether a screen this wide shows the latency panel beside the charts by itself.
pub(crate) fn latency_beside(width: u16) -> bool {
    width >= LATENCY_BESIDE_WIDTH
}

impl App {
    pub fn new(title: impl Into<String>, interval: Duration, cpus: usize, theme: Theme) -> Self {
        let title = title.into();
        App {
            scenario_name: title.clone(),
            evidence: None,
            remote: None,
            title,
            finding: None,
            theme,
            interval,
            window: 60.0,
            cpus,
            workloads: Vec::new(),
            selected: 0,
            machine: MachineSeries::default(),
            latest: None,
            frozen: None,
            mode: Mode::Normal,
            message: None,
            messages: Vec::new(),
            quit: false,
            outbox: Vec::new(),
            pending_remove: None,
            table_geometry: Cell::new(TableGeometry::default()),
            replay: None,
            latency_toggled: false,
            cpu_view: false,
            rest_expanded: false,
            chart_width: Cell::new(0),
            next_slot: 0,
            asked: Vec::new(),
        }
    }

    /// The Frame the screen shows: the frozen one, else the newest.
    pub fn shown(&self) -> Option<&Frame> {
        self.frozen.as_ref().or(self.latest.as_ref())
    }

    /// The right edge of the charts, in session seconds.
    pub fn view_end(&self) -> f64 {
        self.shown().map_or(0.0, |f| f.t)
    }

    pub fn frame_of(&self, id: u32) -> Option<&WorkloadFrame> {
        self.shown()?.workloads.iter().find(|w| w.id == id)
    }

    pub(crate) fn selected_view(&self) -> Option<&WorkloadView> {
        self.workloads.get(self.selected)
    }

    fn now(&self) -> f64 {
        self.latest.as_ref().map_or(0.0, |f| f.t)
    }

    pub(crate) fn notice(&mut self, text: impl Into<String>) {
        self.say(text.into(), false);
    }

    pub fn error(&mut self, text: impl Into<String>) {
        self.say(text.into(), true);
    }

    fn say(&mut self, text: String, error: bool) {
        let until = self.now() + if error { 15.0 } else { 6.0 };
        let message = Message { text, error, until };
        if self.messages.len() == MESSAGES_KEPT {
            self.messages.remove(0);
        }
        self.messages.push(message.clone());
        self.message = Some(message);
    }

    /// A replay shows what was recorded: a key that would start, stop or change a workload
    /// says so at once instead of opening its form.
    fn live_only(&mut self) -> bool {
        if self.replay.is_some() {
            self.error("a replay shows what was recorded: its workloads and knobs cannot change");
            return false;
        }
        true
    }

    /// Shows the last messages in full.
    pub(crate) fn open_messages(&mut self) {
        if self.messages.is_empty() {
            self.notice("no messages yet");
        } else {
            self.mode = Mode::Messages;
        }
    }

    /// Takes in what the engine sent.
    pub fn on_event(&mut self, ev: Event) {
        match ev {
            Event::Frame(f) => self.on_frame(f),
            // The dashboard's engine sends none: it records nothing.
            Event::Sample(_) => {}
            Event::Added(id, decl) => self.on_added(id, decl),
            Event::Removed(id) => {
                if let Some(i) = self.workloads.iter().position(|w| w.id == id) {
                    let name = self.workloads.remove(i).decl.name;
                    self.notice(format!("removed {name}"));
                    if self.selected >= self.workloads.len() {
                        self.selected = self.workloads.len().saturating_sub(1);
                    }
                }
            }
            Event::Knobs(id, knobs) => {
                if let Some(w) = self.workloads.iter_mut().find(|w| w.id == id) {
                    w.decl.knobs = knobs;
                }
            }
            Event::Notice(text) if !text.is_empty() => self.notice(text),
            Event::Notice(_) => {}
            Event::Error(text) => self.error(text),
            Event::Replay(status) => self.replay = Some(status),
            Event::History(frames) => self.rebuild(frames),
        }
    }

    /// After a seek: forgets every chart point and run, and takes the Frames up to the new
    /// position in again, so the charts and the table agree on where the replay is.
    pub(crate) fn rebuild(&mut self, frames: Vec<Frame>) {
        self.machine = MachineSeries::default();
        for w in &mut self.workloads {
            w.series = Series::default();
            w.runs.clear();
            w.run = RunTracker::default();
        }
        self.latest = None;
        self.frozen = None;
        // Looping restarts the history asks for happened long ago, or never will.
        let queued = self.outbox.len();
        for f in frames {
            self.on_frame(f);
        }
        self.outbox.truncate(queued);
    }

    pub(crate) fn on_added(&mut self, id: u32, decl: WorkloadDecl) {
        if self.workloads.iter().any(|w| w.id == id) {
            return;
        }
        let asked = self
            .asked
            .iter()
            .position(|(n, _)| *n == decl.name)
            .map(|i| self.asked.remove(i).1);
        self.workloads.push(WorkloadView {
            id,
            decl,
            slot: self.next_slot,
            series: Series::default(),
            looping: asked.unwrap_or(false),
            runs: Vec::new(),
            run: RunTracker::default(),
        });
        self.next_slot += 1;
        // The one just asked for is the one the next key is about (a nice step, a stop).
        if asked.is_some() {
            self.selected = self.workloads.len() - 1;
        }
    }

    pub(crate) fn on_frame(&mut self, frame: Frame) {
        self.poll_evidence();
        // A replay never goes back by Frames, only by History; a Frame seen already would
        // count its operations twice.
        if self.replay.is_some() && self.latest.as_ref().is_some_and(|l| frame.t <= l.t) {
            return;
        }
        self.machine.push(&frame);
        let mut restarts = Vec::new();
        for wf in &frame.workloads {
            let Some(view) = self.workloads.iter_mut().find(|w| w.id == wf.id) else {
                continue;
            };
            view.series.push(Point::of(frame.t, wf));
            if let Some(ended) = view.run.observe(frame.t, frame.interval, wf, view.looping) {
                view.runs.push(ended.run);
                if ended.restart {
                    restarts.push(view.id);
                }
            }
        }
        for id in restarts {
            self.outbox.push(Command::Restart(id));
        }
        if self.message.as_ref().is_some_and(|m| frame.t > m.until) {
            self.message = None;
        }
        self.latest = Some(frame);
    }

    // ---- what keys do (input.rs maps keys to these) ----

    pub fn select(&mut self, index: usize) {
        if !self.workloads.is_empty() {
            self.selected = index.min(self.workloads.len() - 1);
        }
    }

    pub(crate) fn select_next(&mut self) {
        if !self.workloads.is_empty() {
            self.selected = (self.selected + 1) % self.workloads.len();
        }
    }

    pub(crate) fn select_prev(&mut self) {
        if !self.workloads.is_empty() {
            self.selected = (self.selected + self.workloads.len() - 1) % self.workloads.len();
        }
    }

    pub(crate) fn toggle_freeze(&mut self) {
        self.frozen = match self.frozen {
            Some(_) => None,
            None => self.latest.clone(),
        };
    }

    /// Shows the latency panel if it is not on screen (the per-CPU view leaves it off),
    /// hides it if it is.
    pub(crate) fn toggle_latency(&mut self) {
        let width = self.chart_width.get();
        let on_screen = !self.cpu_view && self.latency_shown(width);
        self.cpu_view = false;
        self.latency_toggled = latency_beside(width) == on_screen;
    }

    /// Whether the latency panel is on screen at this width: as the layout has it, unless its
    /// key turned that round.
    pub(crate) fn latency_shown(&self, width: u16) -> bool {
        latency_beside(width) != self.latency_toggled
    }

    /// The per-CPU view in the charts' place, or the charts back.
    pub(crate) fn toggle_cpu_view(&mut self) {
        self.cpu_view = !self.cpu_view;
    }

    /// Space: a replay pauses or resumes playback; a live run freezes the view.
    pub(crate) fn pause_or_freeze(&mut self) {
        if self.replay.is_some() {
            self.outbox.push(Command::Playback(Playback::TogglePause));
        } else {
            self.toggle_freeze();
        }
    }

    /// Seek keys: only a replay has a position to move.
    pub fn playback(&mut self, p: Playback) {
        if self.replay.is_some() {
            self.outbox.push(Command::Playback(p));
        }
    }

    /// A longer (`up`) or shorter sampling interval.
    pub(crate) fn step_interval(&mut self, up: bool) {
        let ms = self.interval.as_millis() as u64;
        let i = INTERVALS_MS
            .iter()
            .position(|&x| x >= ms)
            .unwrap_or(INTERVALS_MS.len() - 1);
        let j = if up {
            (i + usize::from(INTERVALS_MS[i] <= ms)).min(INTERVALS_MS.len() - 1)
        } else {
            i.saturating_sub(1)
        };
        let new = Duration::from_millis(INTERVALS_MS[j]);
        if new != self.interval {
            self.interval = new;
            self.outbox.push(Command::SetInterval(new));
        }
    }

    /// A shorter (`zoom in`) or longer time window.
    pub fn zoom(&mut self, zoom_in: bool) {
        let i = WINDOWS
            .iter()
            .position(|&w| w >= self.window)
            .unwrap_or(WINDOWS.len() - 1);
        let j = if zoom_in {
            i.saturating_sub(1)
        } else {
            (i + 1).min(WINDOWS.len() - 1)
        };
        self.window = WINDOWS[j];
    }

    /// Promotes the busiest group of the rest (those `x` lists under it) that no row attaches
    /// yet to an attached row of its own: a cgroup by its path, a session's autogroup by its
    /// session. Its processes leave the rest for the row; `d d` on the row lets them go back.
    pub(crate) fn promote_rest(&mut self) {
        if !self.live_only() {
            return;
        }
        let attached: Vec<crate::scenario::WorkloadDecl> = self
            .workloads
            .iter()
            .filter(|w| w.decl.kind.attached())
            .map(|w| w.decl.clone())
            .collect();
        let Some(groups) = self.shown().map(|f| f.machine.rest_groups.clone()) else {
            return;
        };
        let pick = groups.iter().find_map(|g| {
            let sel = rest_selector(g)?;
            let kind = crate::workload::registry::WorkloadKind::attach(&sel);
            (!attached.iter().any(|d| d.kind == kind)).then_some((sel, g.name.clone()))
        });
        let Some((sel, group)) = pick else {
            self.error(
                "no group of the rest to attach (the root group is the whole machine's; x lists them)",
            );
            return;
        };
        let decl = crate::scenario::WorkloadDecl {
            name: sel.to_string(),
            kind: crate::workload::registry::WorkloadKind::attach(&sel),
            knobs: Default::default(),
            start_delay: 0.0,
            duration: None,
        };
        self.notice(format!(
            "attaching {group} as {sel} (d d lets it go back to the rest)"
        ));
        self.asked.push((decl.name.clone(), false));
        self.outbox.push(Command::Add(decl));
    }

    /// The selected workload's id and name, when there is one and the run is live.
    fn live_selected(&mut self) -> Option<(u32, String)> {
        if !self.live_only() {
            return None;
        }
        self.selected_view().map(|w| (w.id, w.decl.name.clone()))
    }

    /// Start a stopped or finished workload; stop a running one.
    pub(crate) fn toggle_run(&mut self) {
        let Some((id, name)) = self.live_selected() else {
            return;
        };
        match self.frame_of(id).map(|f| &f.state) {
            Some(WorkloadState::Running | WorkloadState::Starting | WorkloadState::Partial(_)) => {
                self.outbox.push(Command::Stop(id));
                self.notice(format!("stopping {name}"));
            }
            None => {}
            Some(_) => {
                self.outbox.push(Command::Restart(id));
                self.notice(format!("starting {name}"));
            }
        }
    }

    pub fn restart(&mut self) {
        if let Some((id, name)) = self.live_selected() {
            self.outbox.push(Command::Restart(id));
            self.notice(format!("restarting {name}"));
        }
    }

    /// `K` on an attached row asks whether to kill its processes; anything else says why not.
    pub(crate) fn ask_kill(&mut self) {
        let Some((id, name)) = self.live_selected() else {
            return;
        };
        if self.selected_view().is_some_and(|w| w.decl.kind.attached()) {
            self.mode = Mode::ConfirmKill(id);
        } else {
            self.notice(format!(
                "{name} was started by schedlab: s stops it; K kills only attached processes"
            ));
        }
    }

    /// The answer to [`Mode::ConfirmKill`]: only `y` kills.
    pub(crate) fn confirm_kill(&mut self, id: u32, yes: bool) {
        let name = self
            .workloads
            .iter()
            .find(|w| w.id == id)
            .map(|w| w.decl.name.clone())
            .unwrap_or_default();
        if yes {
            self.outbox.push(Command::KillAttached(id));
            self.notice(format!("killing {name}'s processes"));
        } else {
            self.notice(format!("{name}: not killed"));
        }
    }

    /// The first press asks, the second removes.
    pub fn remove(&mut self) {
        let Some((id, name)) = self.live_selected() else {
            return;
        };
        if self.pending_remove == Some(id) {
            self.pending_remove = None;
            self.outbox.push(Command::Remove(id));
        } else {
            self.pending_remove = Some(id);
            self.notice(format!("press d again to stop and remove {name}"));
        }
    }

    pub(crate) fn toggle_loop(&mut self) {
        if !self.live_only() {
            return;
        }
        let Some(w) = self.workloads.get_mut(self.selected) else {
            return;
        };
        if !w.finite() {
            let name = w.decl.name.clone();
            self.notice(format!("{name} runs until stopped: nothing to loop"));
            return;
        }
        w.looping = !w.looping;
        let text = format!(
            "{}: loop {}",
            w.decl.name,
            if w.looping { "on" } else { "off" }
        );
        self.notice(text);
    }

    /// Sends new knobs for the selected workload.
    pub(crate) fn set_knobs(&mut self, change: impl FnOnce(&mut Knobs) -> Result<String, String>) {
        if !self.live_only() {
            return;
        }
        let Some(w) = self.workloads.get_mut(self.selected) else {
            return;
        };
        let (id, name) = (w.id, w.decl.name.clone());
        let mut knobs = w.decl.knobs.clone();
        match change(&mut knobs) {
            Ok(what) => {
                // Shown at once, so the next key builds on it; the engine sends back the knobs
                // it really applied (Event::Knobs), also when it refuses them.
                w.decl.knobs = knobs.clone();
                self.outbox.push(Command::SetKnobs(id, knobs));
                self.notice(format!("{name}: {what}"));
            }
            Err(why) => self.error(format!("{name}: {why}")),
        }
    }

    pub(crate) fn nice_step(&mut self, delta: i32) {
        self.set_knobs(|k| {
            let new = (k.nice + delta).clamp(-20, 19);
            if new == k.nice {
                return Err(format!("nice is already {new}"));
            }
            k.nice = new;
            Ok(format!("nice {new}"))
        });
    }

    pub(crate) fn cycle_policy(&mut self) {
        self.set_knobs(|k| {
            k.policy = match k.policy {
                Policy::Other => Policy::Batch,
                Policy::Batch => Policy::Idle,
                _ => Policy::Other,
            };
            k.rt_priority = 0;
            Ok(format!("policy {} (fifo and rr: e)", k.policy.word()))
        });
    }

    pub(crate) fn cycle_placement(&mut self) {
        self.set_knobs(|k| {
            k.placement = match k.placement {
                Placement::Shared => Placement::OwnSession,
                Placement::OwnSession => Placement::Cgroup { weight: 100 },
                Placement::Cgroup { .. } => Placement::Shared,
            };
            Ok(format!("restarting in {}", k.placement.words()))
        });
    }

    /// Doubles or halves a cgroup weight.
    pub(crate) fn weight_step(&mut self, up: bool) {
        self.set_knobs(|k| match k.placement {
            Placement::Cgroup { weight } => {
                let new = if up {
                    (weight * 2).min(10_000)
                } else {
                    (weight / 2).max(1)
                };
                k.placement = Placement::Cgroup { weight: new };
                Ok(format!("cgroup weight {new}"))
            }
            _ => Err("not in a cgroup of its own (g cycles the placement)".into()),
        });
    }

    pub(crate) fn open_picker(&mut self) {
        if !self.live_only() {
            return;
        }
        self.mode = Mode::Picker(0);
    }

    /// Shows what the selected workload wrote to stderr before it failed.
    pub(crate) fn open_stderr(&mut self) {
        let Some(id) = self.selected_view().map(|w| w.id) else {
            return;
        };
        if self.frame_of(id).is_some_and(|f| !f.stderr.is_empty()) {
            self.mode = Mode::Stderr(id);
        } else {
            self.notice("it has not failed, or wrote nothing on stderr");
        }
    }

    pub(crate) fn open_knob_editor(&mut self) {
        if !self.live_only() {
            return;
        }
        let Some(w) = self.selected_view() else {
            return;
        };
        let mut fields = super::picker::knob_fields(&w.decl.knobs);
        if w.finite() {
            fields.push(super::form::Field::toggle(
                "loop",
                "loop",
                w.looping,
                "start it again each time it finishes",
            ));
        }
        let form = Form::new(format!("knobs of {}", w.decl.name), fields);
        self.mode = Mode::EditKnobs(w.id, form);
    }

    /// Submits the new-workload form; keeps it open with the reason when it is refused.
    pub(crate) fn submit_new(&mut self, template: Template, mut form: Form) {
        let taken: Vec<String> = self.workloads.iter().map(|w| w.decl.name.clone()).collect();
        match template.decl(&form, &taken) {
            Ok(decl) => {
                self.notice(format!("starting {}", decl.name));
                self.asked.push((decl.name.clone(), form.toggle("loop")));
                self.outbox.push(Command::Add(decl));
                self.mode = Mode::Normal;
            }
            Err(why) => {
                form.error = Some(why);
                self.mode = Mode::NewWorkload(template, form);
            }
        }
    }

    pub(crate) fn submit_knobs(&mut self, id: u32, mut form: Form) {
        let Some(w) = self.workloads.iter_mut().find(|w| w.id == id) else {
            self.mode = Mode::Normal;
            return;
        };
        match super::picker::knobs_from(&form, crate::supervisor::usable_cpus()) {
            Ok(knobs) => {
                if w.finite() {
                    w.looping = form.toggle("loop");
                }
                let name = w.decl.name.clone();
                if knobs != w.decl.knobs {
                    let restart = knobs.placement != w.decl.knobs.placement;
                    w.decl.knobs = knobs.clone();
                    self.outbox.push(Command::SetKnobs(id, knobs));
                    self.notice(if restart {
                        format!("{name}: new placement, restarting")
                    } else {
                        format!("{name}: new knobs")
                    });
                }
                self.mode = Mode::Normal;
            }
            Err(why) => {
                form.error = Some(why);
                self.mode = Mode::EditKnobs(id, form);
            }
        }
    }
}

/// What attaches a group of the rest: a cgroup by its path, a session (or its autogroup) by
/// the session; None for the root group, which is the whole machine's.
pub(crate) fn rest_selector(g: &crate::model::RestGroup) -> Option<crate::probe::Selector> {
    use crate::probe::Selector;
    if let Some(path) = g.key.strip_prefix("cgroup ") {
        return Some(Selector::Cgroup(path.into()));
    }
    if (g.key.starts_with("autogroup-") || g.key.starts_with("session ")) && g.session != 0 {
        return Some(Selector::Session(g.session));
    }
    None
}
