//! Recordings: the raw Samples of a run as JSON lines, so a replay runs the same model code
//! as the live run did.
//!
//! ```text
//! {"schedlab_recording":1,"schedlab_version":"0.1.0","kernel":"6.18.0",...}   header
//! {"repeat":1}                                                                  a repeat starts
//! {"sample":{...}}                                                              one per tick
//! {"end":{"samples":120}}                                                       a clean finish
//! ```
//!
//! Each line is written with one `write` and flushed to the kernel at once, so a crash loses at
//! most the sample being written; the reader drops a cut last line and says the recording has
//! no end line. A recording is written in place (not renamed at the end) precisely so that a
//! crash leaves what was recorded; the end line is what says it is whole.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::model::{Frame, Model};
use crate::probe::Sample;
use crate::record::machine::{self, Host};
use crate::scenario::Scenario;

/// The format version in the header line.
pub(crate) const RECORDING_VERSION: u32 = 1;

/// The first line of a recording: where and what was recorded.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Format version; also what marks the file as a schedlab recording.
    pub schedlab_recording: u32,
    pub schedlab_version: String,
    /// `uname -r`.
    pub kernel: String,
    pub cpus: usize,
    pub autogroup: bool,
    /// Wall-clock start, milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
    pub scenario: Scenario,
    /// The same start, UTC, RFC 3339. This field and the three after it came later, within
    /// version 1: an older recording has none of them, and an older reader ignores them.
    pub started_utc: Option<String>,
    /// The git commit schedlab was built from ("unknown" outside a checkout).
    pub schedlab_commit: Option<String>,
    /// The command line that recorded it.
    pub command_line: Option<Vec<String>>,
    /// The machine in full, as a results file carries it (host name, CPU model, governor,
    /// scheduler settings, ...).
    pub host: Option<Host>,
}

impl Header {
    /// A header for this machine and this process, now.
    pub fn new(scenario: &Scenario, cpus: usize, autogroup: bool) -> Self {
        Self::of(scenario, Host::here(cpus, autogroup))
    }

    /// A header for the machine `host`, written by this process now.
    pub fn of(scenario: &Scenario, host: Host) -> Self {
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Header {
            schedlab_recording: RECORDING_VERSION,
            schedlab_version: env!("CARGO_PKG_VERSION").into(),
            kernel: host.kernel.clone(),
            cpus: host.cpus,
            autogroup: host.autogroup,
            started_unix_ms: started.as_millis() as u64,
            scenario: scenario.clone(),
            started_utc: Some(machine::rfc3339_utc(started.as_secs())),
            schedlab_commit: Some(machine::GIT_COMMIT.into()),
            command_line: Some(machine::command_line()),
            host: Some(host),
        }
    }
}

/// Every line after the header.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Line {
    Repeat(u32),
    Sample(Box<Sample>),
    End { samples: u64 },
}

/// What the writer serialises: the same shape as [`Line`], borrowing the Sample.
#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum LineRef<'a> {
    Repeat(u32),
    Sample(&'a Sample),
    End { samples: u64 },
}

/// Writes a recording as the run goes.
pub struct RecordingWriter {
    path: PathBuf,
    file: File,
    samples: u64,
}

impl RecordingWriter {
    /// Creates (or truncates) `path` now, so an unwritable path fails before the run starts;
    /// the header follows once the machine has been sampled.
    pub fn create(path: &Path) -> Result<Self> {
        let file =
            File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(RecordingWriter {
            path: path.to_owned(),
            file,
            samples: 0,
        })
    }

    /// Writes the header line; call once, first.
    pub fn header(&mut self, header: &Header) -> Result<()> {
        self.line(header)
    }

    fn line<T: Serialize>(&mut self, v: &T) -> Result<()> {
        let mut buf = serde_json::to_vec(v)?;
        buf.push(b'\n');
        // One write per line, no user-space buffer: a crash loses at most this line.
        self.file
            .write_all(&buf)
            .with_context(|| format!("cannot write {}", self.path.display()))
    }

    /// Marks the start of repeat `n` (1-based); the model restarts there on replay.
    pub fn start_repeat(&mut self, n: u32) -> Result<()> {
        self.line(&LineRef::Repeat(n))
    }

    pub fn sample(&mut self, s: &Sample) -> Result<()> {
        self.line(&LineRef::Sample(s))?;
        self.samples += 1;
        Ok(())
    }

    /// Writes the end line: the recording is whole.
    pub fn finish(mut self) -> Result<()> {
        let samples = self.samples;
        self.line(&LineRef::End { samples })?;
        self.file
            .sync_all()
            .with_context(|| format!("cannot write {}", self.path.display()))
    }

    /// Removes the file: the run failed before recording anything worth keeping.
    pub(crate) fn abandon(self) {
        let _ = std::fs::remove_file(&self.path);
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }
}

/// A recording read back.
#[derive(Clone, Debug)]
pub struct Recording {
    pub header: Header,
    /// The Samples of each repeat, in order.
    pub repeats: Vec<Vec<Sample>>,
    /// It has its end line: the run finished cleanly.
    pub complete: bool,
    /// Its last line was cut (a crash mid-write) and was dropped.
    pub cut_last_line: bool,
}

impl Recording {
    pub fn read(path: &Path) -> Result<Self> {
        let file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
        Self::from_reader(BufReader::new(file), &path.display().to_string())
    }

    pub fn from_reader(reader: impl BufRead, origin: &str) -> Result<Self> {
        let not_one = || format!("{origin} is not a schedlab recording");
        let mut lines = reader.split(b'\n').enumerate().peekable();
        let header: Header = match lines.next() {
            Some((_, Ok(first))) => {
                #[derive(Deserialize)]
                struct Probe {
                    schedlab_recording: Option<u32>,
                }
                let probe: Probe = serde_json::from_slice(&first)
                    .with_context(|| format!("{}: its first line is not JSON", not_one()))?;
                match probe.schedlab_recording {
                    Some(RECORDING_VERSION) => {}
                    Some(v) => bail!(
                        "{origin} is a version {v} recording; this schedlab reads version {RECORDING_VERSION}"
                    ),
                    None => bail!("{}: its first line is not a recording header", not_one()),
                }
                serde_json::from_slice(&first)
                    .with_context(|| format!("{origin}: the recording header is damaged"))?
            }
            Some((_, Err(e))) => return Err(e).with_context(|| format!("cannot read {origin}")),
            None => bail!("{}: it is empty", not_one()),
        };
        let mut rec = Recording {
            header,
            repeats: Vec::new(),
            complete: false,
            cut_last_line: false,
        };
        while let Some((i, line)) = lines.next() {
            let line = line.with_context(|| format!("cannot read {origin}"))?;
            if line.is_empty() && lines.peek().is_none() {
                break;
            }
            let is_last = lines.peek().is_none();
            let parsed: Line = match serde_json::from_slice(&line) {
                Ok(l) => l,
                // A crash mid-write cuts the last line: drop it, keep the rest.
                Err(_) if is_last => {
                    rec.cut_last_line = true;
                    break;
                }
                Err(e) => bail!("{origin}:{}: not a recording line: {e}", i + 1),
            };
            if rec.complete {
                bail!("{origin}:{}: data after the end line", i + 1);
            }
            match parsed {
                Line::Repeat(n) => {
                    if n as usize != rec.repeats.len() + 1 {
                        bail!("{origin}:{}: repeat {n} out of order", i + 1);
                    }
                    rec.repeats.push(Vec::new())
                }
                Line::Sample(s) => {
                    if rec.repeats.is_empty() {
                        rec.repeats.push(Vec::new());
                    }
                    rec.repeats.last_mut().unwrap().push(*s);
                }
                Line::End { samples } => {
                    if samples as usize != rec.sample_count() {
                        bail!(
                            "{origin}:{}: the end line counts {samples} samples, the file holds {}",
                            i + 1,
                            rec.sample_count()
                        );
                    }
                    rec.complete = true
                }
            }
        }
        Ok(rec)
    }

    pub fn sample_count(&self) -> usize {
        self.repeats.iter().map(Vec::len).sum()
    }

    /// Every Frame of each repeat, exactly as the live run derived them: the first Frame of a
    /// repeat (no interval yet) included, with the verdict window the run used.
    pub fn replayed(&self) -> Vec<Vec<Frame>> {
        let window = self.header.scenario.verdict_window;
        self.repeats
            .iter()
            .map(|samples| {
                let mut model = window.map_or_else(Model::new, Model::with_window);
                let first = samples.first().map(|s| model.first(s));
                first
                    .into_iter()
                    .chain(samples.windows(2).map(|w| model.step(&w[0], &w[1])))
                    .collect()
            })
            .collect()
    }

    /// The Frames of each repeat's intervals (five samples, four intervals).
    pub fn frames_per_repeat(&self) -> Vec<Vec<Frame>> {
        self.replayed()
            .into_iter()
            .map(|frames| frames.into_iter().skip(1).collect())
            .collect()
    }

    /// All Frames on one time line: each repeat continues where the previous one ended.
    pub fn frames(&self) -> Vec<Frame> {
        let mut out: Vec<Frame> = Vec::new();
        for frames in self.frames_per_repeat() {
            let offset = out.last().map_or(0.0, |f| f.t);
            let start = frames.first().map_or(0.0, |f| f.t - f.interval);
            out.extend(frames.into_iter().map(|mut f| {
                f.t = f.t - start + offset;
                f
            }));
        }
        out
    }
}

/// A recording as a source of Frames for the dashboard: pause, step and seek.
pub struct Replay {
    header: Header,
    frames: Vec<Frame>,
    complete: bool,
    pos: usize,
}

impl Replay {
    pub fn open(path: &Path) -> Result<Self> {
        let rec = Recording::read(path)?;
        let frames = rec.frames();
        if frames.is_empty() {
            bail!(
                "{} holds {} sample{}: a replay needs at least two",
                path.display(),
                rec.sample_count(),
                if rec.sample_count() == 1 { "" } else { "s" }
            );
        }
        Ok(Replay {
            header: rec.header,
            frames,
            complete: rec.complete,
            pos: 0,
        })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// False when the run was cut short (no end line).
    pub fn complete(&self) -> bool {
        self.complete
    }

    pub fn len(&self) -> usize {
        self.frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    pub fn frames(&self) -> &[Frame] {
        &self.frames
    }

    /// Index of the current Frame.
    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn current(&self) -> &Frame {
        &self.frames[self.pos]
    }

    /// Advances one Frame (None at the end: the caller pauses).
    pub fn next_frame(&mut self) -> Option<&Frame> {
        if self.pos + 1 < self.frames.len() {
            self.pos += 1;
            Some(&self.frames[self.pos])
        } else {
            None
        }
    }

    pub(crate) fn prev_frame(&mut self) -> Option<&Frame> {
        if self.pos > 0 {
            self.pos -= 1;
            Some(&self.frames[self.pos])
        } else {
            None
        }
    }

    /// Jumps to the last Frame at or before `t` seconds (the first when `t` is earlier).
    pub fn seek(&mut self, t: f64) -> &Frame {
        self.pos = self.frames.partition_point(|f| f.t <= t).saturating_sub(1);
        &self.frames[self.pos]
    }

    /// Moves by `seconds` (negative: back).
    pub fn seek_by(&mut self, seconds: f64) -> &Frame {
        let t = self.current().t + seconds;
        self.seek(t)
    }

    /// Seconds covered: the last Frame's time.
    pub fn duration(&self) -> f64 {
        self.frames.last().map_or(0.0, |f| f.t)
    }

    /// Frames up to and including the current one (for the dashboard's history charts).
    pub fn history(&self) -> &[Frame] {
        &self.frames[..=self.pos]
    }
}
