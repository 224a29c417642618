//! The Lab, the engine's live Backend (the dashboard's, `run`'s and contest's): starts
//! workloads on schedule, stops them when their time is up, reaps them, samples them with the
//! probe and derives a Frame per tick with the model. It never sleeps: the engine's loop
//! (thread.rs) ticks it on its grid (`next_due`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::schedule::Schedule;
use crate::model::{Frame, Model, WorkloadState};
use crate::probe::{Health, Life, Probe, ProbeConfig, Sample, Selector, Target, WorkloadSample};
use crate::scenario::WorkloadDecl;
use crate::supervisor::{self, LaunchSpec, Running, StderrTail};
use crate::sys::kernel::priority::{self, SamplerPriority};

/// Sampling interval bounds.
pub(crate) const MIN_INTERVAL: Duration = Duration::from_millis(100);
pub(crate) const MAX_INTERVAL: Duration = Duration::from_secs(10);
/// How long a stopped workload gets to end after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_millis(300);
/// Lines of a failed workload's stderr that go into its Samples (and Frames, recordings).
pub(crate) const STDERR_LINES: usize = 10;

/// What the dashboard lists for a workload.
#[derive(Clone, Debug)]
pub struct WorkloadInfo {
    pub id: u32,
    pub name: String,
    pub decl: WorkloadDecl,
    pub state: WorkloadState,
    /// Leader pid while it runs (or ran).
    pub pid: Option<u32>,
    /// When it failed: the last lines it wrote to stderr, oldest first.
    pub stderr: Vec<String>,
}

struct Entry {
    id: u32,
    decl: WorkloadDecl,
    /// Where it is in its life: what the Samples say of it (and the model shows).
    life: Life,
    /// When a pending workload is due to start.
    start_at: Instant,
    running: Option<Running>,
    /// When it must be stopped (start + duration).
    stop_at: Option<Instant>,
    /// A cgroup to account it exactly: its own, learnt when it starts.
    cgroup: Option<PathBuf>,
    /// What it watches when it is attached (processes schedlab did not start, and never
    /// signals), once checked against the machine; None when detached or not attached.
    attached: Option<Selector>,
    last_pid: Option<u32>,
    /// What its last start wrote to stderr.
    stderr: StderrTail,
}

impl Entry {
    /// Its last stderr lines, when it failed (exited non-zero, or died); else none.
    fn failure_lines(&self) -> Vec<String> {
        match self.life {
            Life::Done(code) if code != 0 => self.stderr.last(STDERR_LINES),
            Life::Failed(_) => self.stderr.last(STDERR_LINES),
            _ => Vec::new(),
        }
    }
}

/// Runs and watches a set of workloads.
pub struct Lab {
    probe: Probe,
    model: Model,
    interval: Duration,
    started: Instant,
    /// `started` on the Samples' clock (CLOCK_MONOTONIC ns): Frame times count from it.
    epoch_ns: u64,
    /// When each sample is due.
    schedule: Schedule,
    /// How the thread that ticks is scheduled, and whether it was promoted.
    sampler_priority: SamplerPriority,
    sampler_promoted: Option<bool>,
    next_id: u32,
    entries: Vec<Entry>,
    /// Shared: the engine hands it to a frontend that records it without a copy.
    last: Option<Arc<Sample>>,
    /// Its key among the Labs whose live workloads the exit hook kills (engine/live.rs).
    live_key: u64,
}

impl Lab {
    pub fn new(interval: Duration) -> Result<Lab> {
        Self::with_config(interval, ProbeConfig::default())
    }

    /// A Lab reading another /proc and /sys (tests).
    pub(crate) fn with_config(interval: Duration, cfg: ProbeConfig) -> Result<Lab> {
        // Stopped by a signal, its workloads and their cgroups go too, in any process that
        // drives it (a test binary as well as schedlab's commands).
        crate::sys::exit::lifeline::install_signals();
        super::live_groups::install_exit_hook();
        static LABS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let mut lab = Lab {
            probe: Probe::new(cfg)?,
            model: Model::new(),
            interval: MIN_INTERVAL,
            started: Instant::now(),
            epoch_ns: crate::probe::monotonic_ns(),
            schedule: Schedule::new(interval, Instant::now()),
            sampler_priority: SamplerPriority::default(),
            sampler_promoted: None,
            next_id: 1,
            entries: Vec::new(),
            last: None,
            live_key: LABS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        };
        lab.set_interval(interval);
        Ok(lab)
    }

    /// Declares a workload; it starts now or when its start delay is due. Returns its id; an
    /// error names it.
    pub fn add(&mut self, decl: WorkloadDecl) -> Result<u32> {
        if !decl.start_delay.is_finite() || decl.start_delay < 0.0 {
            anyhow::bail!("{}: start delay must be ≥ 0 seconds", decl.name);
        }
        if let Some(d) = decl.duration {
            if !d.is_finite() || d <= 0.0 {
                anyhow::bail!("{}: duration must be > 0 seconds", decl.name);
            }
        }
        let id = self.next_id;
        self.next_id += 1;
        let due = self.started.max(Instant::now()) + Duration::from_secs_f64(decl.start_delay);
        let mut entry = Entry {
            id,
            decl,
            life: Life::Pending,
            start_at: due,
            running: None,
            stop_at: None,
            cgroup: None,
            attached: None,
            last_pid: None,
            stderr: StderrTail::default(),
        };
        if entry.decl.start_delay == 0.0 {
            // Start now, so a bad command is reported to the caller at once.
            start(&mut entry, &self.probe.config().proc_root.clone())
                .with_context(|| entry.decl.name.clone())?;
        }
        let name = entry.decl.name.clone();
        self.entries.push(entry);
        let knobbed = self.knob_new_attached(id);
        if knobbed.is_err() {
            self.entries.retain(|e| e.id != id);
        }
        self.publish_live();
        knobbed.map_err(|err| err.context(name))?;
        Ok(id)
    }

    /// Tells the exit hook which of its workloads are live: after every change, so that a
    /// signal at any moment finds them.
    fn publish_live(&self) {
        super::live_groups::publish(self.live_key, self.live_groups());
    }

    /// Watches an existing process that schedlab did not start, with its threads and its
    /// children (born later too): an `attach` workload by pid ([`Lab::add`] takes any selector).
    pub fn attach(&mut self, name: &str, pid: u32) -> Result<u32> {
        self.add(WorkloadDecl {
            name: name.to_string(),
            kind: crate::workload::registry::WorkloadKind::attach(&Selector::Pid(pid)),
            knobs: Default::default(),
            start_delay: 0.0,
            duration: None,
        })
    }

    /// Stops a workload (its whole process group). A pending one will not start. An attached
    /// one is only detached: nothing schedlab did not start is ever signalled.
    pub fn stop(&mut self, id: u32) {
        if let Some(e) = self.entries.iter_mut().find(|e| e.id == id) {
            if let Some(run) = e.running.as_mut() {
                run.stop(STOP_GRACE);
            }
            e.running = None;
            detach(e);
            e.stop_at = None;
            if !matches!(e.life, Life::Done(_) | Life::Failed(_)) {
                e.life = Life::Stopped;
            }
        }
        self.publish_live();
    }

    /// Stops it if running and starts it again with its current declaration (knobs).
    pub fn restart(&mut self, id: u32) -> Result<()> {
        let proc_root = self.probe.config().proc_root.clone();
        let Some(e) = self.entries.iter_mut().find(|e| e.id == id) else {
            anyhow::bail!("no workload {id}");
        };
        // An attached workload is attached again (detached first): never signalled.
        detach(e);
        if let Some(run) = e.running.as_mut() {
            run.stop(STOP_GRACE);
        }
        e.running = None;
        let started = start(e, &proc_root);
        self.publish_live();
        started?;
        self.knob_new_attached(id)
    }

    /// Stops it and forgets it.
    pub fn remove(&mut self, id: u32) {
        self.stop(id);
        self.entries.retain(|e| e.id != id);
    }

    /// Verdicts over the last `secs` seconds (a fresh model: call before the first tick).
    pub fn set_verdict_window(&mut self, secs: f64) {
        self.model = Model::with_window(secs);
    }

    pub fn verdict_window(&self) -> f64 {
        self.model.window()
    }

    pub fn set_interval(&mut self, d: Duration) {
        self.interval = d.clamp(MIN_INTERVAL, MAX_INTERVAL);
        self.schedule.set_interval(self.interval, Instant::now());
        // Voluntary/involuntary switches at least once a second, at most once per tick.
        self.probe
            .set_status_every(self.interval.max(Duration::from_secs(1)));
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// How the sampling thread is scheduled (before the first tick: the thread that ticks is
    /// promoted at its first tick).
    pub(crate) fn set_sampler_priority(&mut self, p: SamplerPriority) {
        self.sampler_priority = p;
    }

    /// When the next sample is due: callers sleep until then and tick.
    pub(crate) fn next_due(&self) -> Instant {
        self.schedule.next_due()
    }

    /// Starts due workloads, stops expired ones, reaps exits, samples and derives.
    pub fn tick(&mut self) -> Frame {
        let now = Instant::now();
        let proc_root = self.probe.config().proc_root.clone();
        let mut attached_now = Vec::new();
        // A workload started, stopped or ended: the exit hook's list changes.
        let mut changed = false;
        for e in &mut self.entries {
            if e.life == Life::Pending && now >= e.start_at {
                changed = true;
                match start(e, &proc_root) {
                    Err(err) => e.life = Life::Failed(format!("{err:#}")),
                    Ok(()) if e.attached.is_some() => attached_now.push(e.id),
                    Ok(()) => {}
                }
            }
            if let Some(at) = e.stop_at {
                if now >= at {
                    changed = true;
                    if let Some(run) = e.running.as_mut() {
                        run.stop(STOP_GRACE);
                    }
                    e.running = None;
                    detach(e);
                    e.stop_at = None;
                    e.life = Life::Stopped;
                }
            }
            if let Some(run) = e.running.as_mut() {
                if let Some(status) = run.poll_exit() {
                    changed = true;
                    e.life = Life::Done(exit_code(status));
                    e.running = None;
                    if status.code() != Some(0) {
                        // Its group is killed: its last lines are arriving; wait for them.
                        e.stderr.settle(Duration::from_millis(200));
                    }
                }
            }
        }

        for id in attached_now {
            // Its knobs failed: the row says why (knob_new_attached set it).
            let _ = self.knob_new_attached(id);
        }
        if changed {
            self.publish_live();
        }

        if self.sampler_promoted.is_none() {
            // The thread that ticks is the sampler: make it prompt where the machine allows.
            self.sampler_promoted = Some(
                self.sampler_priority == SamplerPriority::Realtime
                    && priority::promote_this_thread(),
            );
        }
        let targets = self.targets();
        let slot = self.schedule.take(Instant::now());
        let mut sample = self.probe.sample(&targets);
        for e in self.entries.iter().filter(|e| e.attached.is_some()) {
            if crate::sys::exit::undo::owns(e.id) {
                // Threads and children born since its knobs changed inherited them: saved too,
                // so they are put back with it.
                let pids: Vec<u32> = self.probe.held(e.id).into_keys().collect();
                crate::sys::exit::undo::adopt(e.id, &pids);
            }
        }
        sample.epoch_ns = self.epoch_ns;
        // The grid on the Samples' clock: how late this sample was, and what it missed.
        sample.due_ns =
            self.epoch_ns + slot.due.saturating_duration_since(self.started).as_nanos() as u64;
        sample.missed = slot.missed;
        sample.interval_ns = self.interval.as_nanos() as u64;
        sample.observer_rt = self.sampler_promoted == Some(true);

        // Every workload goes into the Sample, running or not, with the life the Lab knows:
        // the model makes every row of the Frame from it, live and replayed alike.
        let mut rows = Vec::with_capacity(self.entries.len());
        let mut sampled: Vec<WorkloadSample> = std::mem::take(&mut sample.workloads);
        for e in &mut self.entries {
            let found = sampled
                .iter()
                .position(|w| w.id == e.id)
                .map(|k| sampled.swap_remove(k));
            if e.attached.is_some() {
                // What it watched is gone: its row ends (no failure, and no exit code to give).
                if let Some(Health::Gone(why)) = found.as_ref().map(|w| &w.health) {
                    e.life = Life::Ended(why.clone());
                    detach(e);
                }
            }
            let mut w = found.unwrap_or_else(|| WorkloadSample {
                id: e.id,
                name: e.decl.name.clone(),
                ops_unit: e.decl.kind.ops_unit().to_string(),
                ..WorkloadSample::default()
            });
            w.life = e.life.clone();
            w.stderr = e.failure_lines();
            rows.push(w);
        }
        sample.workloads = rows;
        let frame = match &self.last {
            Some(prev) => self.model.step(prev, &sample),
            None => self.model.first(&sample),
        };
        self.last = Some(Arc::new(sample));
        frame
    }

    /// The raw Sample behind the last Frame, for recording.
    pub fn last_sample(&self) -> Option<&Sample> {
        self.last.as_deref()
    }

    /// The raw Sample behind the last Frame, shared.
    pub(crate) fn shared_sample(&self) -> Option<Arc<Sample>> {
        self.last.clone()
    }

    pub fn workloads(&self) -> Vec<WorkloadInfo> {
        self.entries
            .iter()
            .map(|e| WorkloadInfo {
                id: e.id,
                name: e.decl.name.clone(),
                decl: e.decl.clone(),
                state: (&e.life).into(),
                pid: e.running.as_ref().map(|r| r.pid).or(e.last_pid),
                stderr: e.failure_lines(),
            })
            .collect()
    }

    /// The running process of a workload, for live knobs (renice, policy, affinity).
    pub fn running(&self, id: u32) -> Option<&Running> {
        self.entries
            .iter()
            .find(|e| e.id == id)
            .and_then(|e| e.running.as_ref())
    }

    pub(crate) fn running_mut(&mut self, id: u32) -> Option<&mut Running> {
        self.entries
            .iter_mut()
            .find(|e| e.id == id)
            .and_then(|e| e.running.as_mut())
    }

    /// The threads of an attached workload's processes now (none when it is not attached).
    pub(crate) fn attached_tids(&self, id: u32) -> Vec<u32> {
        let mut tids = Vec::new();
        for pid in self.attached_pids(id) {
            match crate::sys::kernel::proc::threads(pid) {
                Some(t) => tids.extend(t),
                None => tids.push(pid),
            }
        }
        tids
    }

    /// Sends SIGTERM to every process of an attached workload: only ever at the user's
    /// explicit request (a confirmation in the dashboard, `run --kill-attached`), the one way
    /// schedlab signals what it did not start. Its knobs are put back first and the row is
    /// let go. Returns how many processes were signalled.
    pub fn kill_attached(&mut self, id: u32) -> Result<usize> {
        let Some(e) = self.entries.iter().find(|e| e.id == id) else {
            anyhow::bail!("no workload {id}");
        };
        if !e.decl.kind.attached() {
            anyhow::bail!(
                "{} was started by schedlab: stop it instead (s); K is for attached rows",
                e.decl.name
            );
        }
        let pids = self.attached_pids(id);
        self.stop(id);
        Ok(terminate(pids))
    }

    /// The processes of an attached workload now (none when it is not attached): never
    /// schedlab itself or what it started.
    fn attached_pids(&self, id: u32) -> Vec<u32> {
        let Some(sel) = self
            .entries
            .iter()
            .find(|e| e.id == id)
            .and_then(|e| e.attached.clone())
        else {
            return Vec::new();
        };
        let me = std::process::id();
        let started: Vec<u32> = self
            .entries
            .iter()
            .filter_map(|e| e.running.as_ref().map(|r| r.pgid()))
            .collect();
        let skip = |pid: u32, pgid: u32| pid == me || started.contains(&pgid);
        crate::probe::attach::members_now(
            &sel,
            &self.probe.config().proc_root,
            &self.probe.held(id),
            &skip,
        )
    }

    /// Changes nice, policy and affinity of every thread of an attached workload from `old`
    /// to `new`, and its placement (a cgroup of its own, or back out of it), what it was
    /// saved in the undo journal first (put back on detach and on every exit, SIGKILL
    /// included). Returns how many threads changed; a refusal (EPERM) leaves them as they
    /// were.
    pub(crate) fn knob_attached(
        &mut self,
        id: u32,
        old: &crate::knobs::Knobs,
        new: &crate::knobs::Knobs,
    ) -> Result<usize> {
        use crate::knobs::Placement;
        use crate::supervisor::change::{apply, Change, Scope};
        use crate::sys::exit::undo;
        let Some(e) = self.entries.iter().find(|e| e.id == id) else {
            anyhow::bail!("no workload {id}");
        };
        attached_knobs_allowed(&e.decl.kind, new).map_err(|why| anyhow::anyhow!(why))?;
        let name = e.decl.name.clone();
        let change = Change::between(old, new);
        let moves = (&old.placement, old.cpu_quota) != (&new.placement, new.cpu_quota);
        if change.is_empty() && !moves {
            return Ok(0);
        }
        let tids = self.attached_tids(id);
        if tids.is_empty() {
            anyhow::bail!("nothing attached to change");
        }
        // Placement first: the group and each process's old groups are journalled before a
        // process moves, and a refusal leaves nothing moved.
        if moves {
            match new.placement {
                Placement::Cgroup { weight } => {
                    let pids = self.attached_pids(id);
                    undo::place(id, &name, &pids, weight, new.cpu_quota)
                        .context("placement unchanged")?;
                }
                _ => {
                    undo::unplace(id);
                }
            }
        }
        let undo_placement = || match old.placement {
            Placement::Cgroup { weight } if moves => {
                let _ = undo::place(id, &name, &[], weight, old.cpu_quota);
            }
            _ if moves => {
                undo::unplace(id);
            }
            _ => {}
        };
        if change.is_empty() {
            return Ok(tids.len());
        }
        if let Err(err) = undo::remember(id, &tids) {
            undo_placement();
            return Err(err.context("nothing changed: what to undo could not be saved"));
        }
        match apply(&Scope::Threads(&tids), &change) {
            Ok(n) => Ok(n),
            Err(err) => {
                // Back to what it was before this change (a first thread refused: nothing).
                let _ = apply(&Scope::Threads(&tids), &Change::between(new, old));
                undo_placement();
                Err(err)
            }
        }
    }

    /// Applies an attached workload's declared knobs as it is attached (a scenario's
    /// `nice = 5` on `kind = "attach"`, a restart); its row fails with the reason when refused.
    fn knob_new_attached(&mut self, id: u32) -> Result<()> {
        let Some(e) = self.entries.iter().find(|e| e.id == id) else {
            return Ok(());
        };
        if e.attached.is_none() {
            return Ok(());
        }
        if e.decl.knobs == crate::knobs::Knobs::default() {
            // Nothing asked: the row's nice starts from its processes' own (the first one
            // found), so `]` on a process at nice 5 makes it 6, not 1. Nothing is changed.
            let nice = self
                .attached_tids(id)
                .first()
                .and_then(|&tid| crate::sys::kernel::proc::read_stat(tid))
                .map(|st| st.nice);
            if let (Some(nice), Some(e)) = (nice, self.entries.iter_mut().find(|e| e.id == id)) {
                e.decl.knobs.nice = nice;
            }
            return Ok(());
        }
        let knobs = e.decl.knobs.clone();
        if let Err(err) = self.knob_attached(id, &crate::knobs::Knobs::default(), &knobs) {
            if let Some(e) = self.entries.iter_mut().find(|e| e.id == id) {
                detach(e);
                e.life = Life::Failed(format!("{err:#}"));
            }
            return Err(err);
        }
        Ok(())
    }

    /// The declaration, to change knobs for the next restart (or to record what was changed
    /// live).
    pub(crate) fn decl_mut(&mut self, id: u32) -> Option<&mut WorkloadDecl> {
        self.entries
            .iter_mut()
            .find(|e| e.id == id)
            .map(|e| &mut e.decl)
    }

    /// The probe targets of everything running now.
    pub fn targets(&self) -> Vec<Target> {
        self.entries
            .iter()
            .filter_map(|e| {
                let ops_unit = e.decl.kind.ops_unit().to_string();
                if let Some(run) = &e.running {
                    return Some(Target {
                        id: e.id,
                        name: e.decl.name.clone(),
                        pgid: run.pgid(),
                        leader: run.pid,
                        cgroup: e.cgroup.clone(),
                        counters: Some(run.counters.clone()),
                        ops_unit,
                        attach: None,
                        paced: e.decl.kind.paced(),
                    });
                }
                let sel = e.attached.clone()?;
                Some(Target {
                    id: e.id,
                    name: e.decl.name.clone(),
                    pgid: 0,
                    leader: match sel {
                        Selector::Pid(p) => p,
                        _ => 0,
                    },
                    cgroup: e.cgroup.clone(),
                    counters: None,
                    ops_unit,
                    attach: Some(sel),
                    paced: false,
                })
            })
            .collect()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // The workloads are stopped here; a signal meanwhile finds them all the same.
        for e in &mut self.entries {
            if let Some(run) = e.running.as_mut() {
                run.stop(Duration::from_millis(100));
            }
            e.running = None;
            detach(e);
        }
        super::live_groups::forget(self.live_key);
    }
}

/// Lets an attached workload go: the knobs schedlab changed on it are put back (threads whose
/// start time still matches). Nothing is signalled.
/// SIGTERM to each process; how many took it.
fn terminate(pids: Vec<u32>) -> usize {
    let term = |pid: u32| {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
    };
    pids.into_iter().filter(|&p| term(p).is_ok()).count()
}

/// SIGTERM to every process a selector matches now, never schedlab itself: `run
/// --kill-attached` at the end of a run, which the user asked for. How many took it.
pub fn kill_matching(sel: &crate::probe::Selector) -> usize {
    let me = std::process::id();
    terminate(crate::probe::attach::matching_now(sel, &|pid| pid == me))
}

fn detach(e: &mut Entry) {
    e.attached = None;
    if e.decl.kind.attached() {
        crate::sys::exit::undo::restore(e.id);
    }
}

fn start(e: &mut Entry, proc_root: &std::path::Path) -> Result<()> {
    if let Some(sel) = e.decl.kind.selector() {
        return attach(e, sel, proc_root);
    }
    let spec = LaunchSpec {
        name: e.decl.name.clone(),
        program: e.decl.kind.program(),
        knobs: e.decl.knobs.clone(),
        capture_output: false,
    };
    match supervisor::spawn(&spec) {
        Ok(run) => {
            e.last_pid = Some(run.pid);
            e.stderr = run.stderr.clone();
            // A workload placed in a cgroup of its own is accounted by it (exact CPU time, its
            // weight in the model), whoever started it: the dashboard, run, a start delay.
            e.cgroup = run.cgroup().map(|g| g.dir().to_path_buf());
            e.stop_at = e
                .decl
                .duration
                .map(|d| run.started + Duration::from_secs_f64(d));
            e.running = Some(run);
            e.life = Life::Running;
            Ok(())
        }
        Err(err) => {
            e.life = Life::Failed(format!("{err:#}"));
            Err(err)
        }
    }
}

/// Starts watching what an `attach` workload selects, once it matches something: nothing is
/// started, and nothing will be signalled.
fn attach(
    e: &mut Entry,
    sel: std::result::Result<Selector, String>,
    proc_root: &std::path::Path,
) -> Result<()> {
    if let Err(why) = attached_knobs_allowed(&e.decl.kind, &e.decl.knobs) {
        e.life = Life::Failed(why.clone());
        anyhow::bail!(why);
    }
    match sel.and_then(|s| s.resolve(proc_root)) {
        Ok(sel) => {
            e.last_pid = match sel {
                Selector::Pid(p) => Some(p),
                _ => None,
            };
            // A cgroup's own usage counts it exactly, dead children included.
            e.cgroup = sel.cgroup().map(std::path::Path::to_path_buf);
            e.stop_at = e
                .decl
                .duration
                .map(|d| Instant::now() + Duration::from_secs_f64(d));
            e.attached = Some(sel);
            e.life = Life::Running;
            Ok(())
        }
        Err(why) => {
            e.life = Life::Failed(why.clone());
            Err(anyhow::anyhow!(why))
        }
    }
}

/// What can change on an attached workload: nice, policy, CPU affinity, and a cgroup of its
/// own (weight, quota) for its processes. Not a session of its own: only a process can start
/// one. Not a cgroup for what is attached by its cgroup: that group is the user's to weigh,
/// and moved out of it, the row would match nothing.
pub(crate) fn attached_knobs_allowed(
    kind: &crate::workload::registry::WorkloadKind,
    k: &crate::knobs::Knobs,
) -> std::result::Result<(), String> {
    use crate::knobs::Placement;
    use crate::workload::registry::WorkloadKind;
    match k.placement {
        Placement::OwnSession => Err(
            "attached (not started by schedlab): it cannot get a session of its own (only a process can start one); placement = \"cgroup\" can"
                .into(),
        ),
        Placement::Cgroup { .. } if matches!(kind, WorkloadKind::Attach { cgroup: Some(_), .. }) => Err(
            "attached by its cgroup: that cgroup is yours to weigh (cpu.weight, cpu.max); schedlab moves only processes it attached by pid, comm or session"
                .into(),
        ),
        _ => Ok(()),
    }
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}
