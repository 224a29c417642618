//! What each kind's parameters accept: key, type, range, default, unit, help, and how each is
//! written on the command line, declared once per kind. The registry's entries read them,
//! and so do the kinds' own command lines (which the registry runs, so they find their
//! parameters here, below it), so a limit or a default is stated once and refused with one
//! message wherever it is given: a scenario file, the picker's form, a subcommand.

use std::ops::{Deref, RangeInclusive};

use crate::workload::chat::protocol;

/// Most tasks of one kind a count may ask for where the count is "one per CPU" at heart
/// (forkers, workers, hog threads, ping-pong pairs): CPU numbers go up to 4095 in affinity
/// masks too.
const PER_CPU_MAX: u32 = 4096;
/// The word that asks for one per usable CPU (fork-load's forkers, ping-pong's pairs).
pub const CPUS: &str = "cpus";
/// Most pairs of tasks any run can have: the kernel's largest pid_max (PID_MAX_LIMIT, 2^22)
/// halved. The size guard then says what this machine holds.
const MAX_TASK_PAIRS: u32 = 1 << 21;
const PID_LIMIT_WHY: &str =
    "each is at least two tasks, and no kernel holds more than 4194304 (PID_MAX_LIMIT)";
/// Runs of a finite workload, 0 meaning "repeat until stopped".
const RUNS: RangeInclusive<u32> = 0..=u32::MAX;
/// Why a count that only repeats something stops at u32::MAX.
const COUNT_WHY: &str = "a 32-bit count";

/// One parameter of a kind.
#[derive(Debug)]
pub struct Param {
    /// Its name in scenario files and in every message about it.
    pub key: &'static str,
    /// Its label in the picker's form.
    pub label: &'static str,
    /// One line: what it is (the picker's hint, the start of its `--help`).
    pub help: &'static str,
    /// What it counts or measures ("bytes", "s"); empty when obvious.
    pub unit: &'static str,
    pub ty: Ty,
    /// How it appears on the subcommand's command line.
    pub flag: Flag,
}

/// What a parameter holds.
#[derive(Debug)]
pub enum Ty {
    /// A whole number in `range`. `why_max` says what the upper limit is when it is not
    /// obvious (a protocol's or the kernel's).
    Count {
        range: RangeInclusive<u32>,
        absent: Absent,
        why_max: Option<&'static str>,
    },
    /// A number more than 0 and at most `max`.
    Amount { max: f64, default: f64 },
    /// On or off; off when absent.
    Switch,
    /// One of `words`.
    Choice {
        words: &'static [&'static str],
        default: &'static str,
    },
    /// A program and its arguments; required.
    Words,
    /// Free text (a process name, a path); None when absent.
    Text,
}

/// What an absent count means.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Absent {
    /// This value.
    Is(u32),
    /// Left to the subcommand, whose default is this same value (the kind holds None).
    Omitted(u32),
    /// Decided when the run starts (the kind holds None): `means` says how; `word`, when
    /// there is one, asks for it explicitly (`cpus`).
    Auto {
        word: Option<&'static str>,
        means: &'static str,
    },
}

/// How a parameter is written on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    /// In order, before the named ones.
    Positional,
    /// `--flag VALUE`, or `--flag` alone for a switch.
    Named(&'static str),
}

/// A checked parameter value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// None: absent, with [`Absent::Omitted`] or [`Absent::Auto`].
    Count(Option<u32>),
    Amount(f64),
    Switch(bool),
    Word(&'static str),
    Words(Vec<String>),
    Text(Option<String>),
}

/// A value a command line gave that its parameter does not take (out of range, a word no
/// choice has, not a number): the command ends as clap ends on any mistake in its
/// arguments, with status 2. A scenario file and the picker give the same words.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ArgumentError(pub String);

/// `message` as a refused argument, for `map_err` and `return Err(...)`.
pub fn refused(message: impl Into<String>) -> anyhow::Error {
    ArgumentError(message.into()).into()
}

/// A kind's parameters, in the order its values are kept.
#[derive(Debug)]
pub struct Params(&'static [Param]);

impl Deref for Params {
    type Target = [Param];
    fn deref(&self) -> &[Param] {
        self.0
    }
}

impl<'a> IntoIterator for &'a Params {
    type Item = &'a Param;
    type IntoIter = std::slice::Iter<'a, Param>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl Params {
    pub const fn new(list: &'static [Param]) -> Params {
        Params(list)
    }

    /// Its parameter `key`; panics on a key it does not have (a bug, caught by the tests
    /// that walk every kind).
    pub fn param(&'static self, key: &str) -> &'static Param {
        self.0
            .iter()
            .find(|p| p.key == key)
            .unwrap_or_else(|| panic!("no parameter {key}"))
    }

    /// The keys, for messages.
    pub fn keys(&self) -> Vec<&'static str> {
        self.0.iter().map(|p| p.key).collect()
    }
}

impl Param {
    /// A count in `range`, `default` when absent (until [`Param::auto`] or
    /// [`Param::absent_is`] says otherwise), with no help yet.
    const fn count(
        key: &'static str,
        flag: Flag,
        range: RangeInclusive<u32>,
        default: u32,
    ) -> Param {
        Param {
            key,
            label: key,
            help: "",
            unit: "",
            ty: Ty::Count {
                range,
                absent: Absent::Is(default),
                why_max: None,
            },
            flag,
        }
    }

    /// Free text, absent unless given.
    const fn text(key: &'static str, help: &'static str) -> Param {
        Param {
            key,
            label: key,
            help,
            unit: "",
            ty: Ty::Text,
            flag: Flag::Named(key),
        }
    }

    /// A switch `flag`, off when absent.
    const fn switch(key: &'static str, flag: &'static str, help: &'static str) -> Param {
        Param {
            key,
            label: key,
            help,
            unit: "",
            ty: Ty::Switch,
            flag: Flag::Named(flag),
        }
    }

    /// One of `words`, `default` when absent.
    const fn choice(
        key: &'static str,
        flag: &'static str,
        words: &'static [&'static str],
        default: &'static str,
    ) -> Param {
        Param {
            ty: Ty::Choice { words, default },
            ..Param::switch(key, flag, "")
        }
    }

    /// A number more than 0 and at most `max`, `default` when absent.
    const fn amount(key: &'static str, flag: &'static str, max: f64, default: f64) -> Param {
        Param {
            ty: Ty::Amount { max, default },
            ..Param::switch(key, flag, "")
        }
    }

    const fn help(self, help: &'static str) -> Param {
        Param { help, ..self }
    }

    const fn label(self, label: &'static str) -> Param {
        Param { label, ..self }
    }

    const fn unit(self, unit: &'static str) -> Param {
        Param { unit, ..self }
    }

    /// A count decided when the run starts when absent: `means` says how; `word`, when there is
    /// one, asks for it explicitly.
    const fn auto(self, word: Option<&'static str>, means: &'static str) -> Param {
        self.absent_is(Absent::Auto { word, means })
    }

    const fn absent_is(self, absent: Absent) -> Param {
        match self.ty {
            Ty::Count { range, why_max, .. } => Param {
                ty: Ty::Count {
                    range,
                    absent,
                    why_max,
                },
                ..self
            },
            _ => panic!("only a count is absent in more than one way"),
        }
    }

    /// What its upper limit is.
    const fn why_max(self, why: &'static str) -> Param {
        match self.ty {
            Ty::Count { range, absent, .. } => Param {
                ty: Ty::Count {
                    range,
                    absent,
                    why_max: Some(why),
                },
                ..self
            },
            _ => panic!("only a count has an upper limit to explain"),
        }
    }
}

const fn runs(help: &'static str) -> Param {
    Param::count("runs", Flag::Named("--runs"), RUNS, 1)
        .absent_is(Absent::Omitted(1))
        .help(help)
        .why_max(COUNT_WHY)
}

/// Threads of one process, or processes (hackbench's and ping-pong's `--threads`).
const THREADS: Param = Param::switch(
    "threads",
    "--threads",
    "threads of one process instead of forked processes",
);

pub(crate) static CHAT: Params = Params(&[
    Param::count(
        "rooms",
        Flag::Positional,
        1..=i32::MAX as u32,
        protocol::DEFAULT_ROOMS,
    )
    .help("chat rooms of 20 users each: 10 rooms = 400 client threads")
    .unit("rooms")
    .why_max("the protocol sends the room count as a signed 32-bit number"),
    Param::count(
        "messages",
        Flag::Positional,
        1..=protocol::MAX_MESSAGES,
        protocol::DEFAULT_MESSAGES,
    )
    .help("messages each user sends per run")
    .unit("messages")
    .why_max(
        "the server hands each message to its send thread through a SysV \
         semaphore, and that is the most one holds",
    ),
    runs("runs of the benchmark; 0 = repeat until stopped"),
]);

pub(crate) static HACKBENCH: Params = Params(&[
    Param::count("groups", Flag::Named("-g"), 1..=MAX_TASK_PAIRS, 10)
        .help("groups of senders and receivers")
        .why_max(PID_LIMIT_WHY),
    Param::count("loops", Flag::Named("-l"), 1..=i32::MAX as u32, 100)
        .help("messages each sender writes to each receiver of its group")
        .why_max("the original's loop count is a C int"),
    Param::count("datasize", Flag::Named("-s"), 1..=1 << 20, 100)
        .label("data size")
        .help("bytes per message")
        .unit("bytes")
        .why_max("the kernel's default fs.pipe-max-size; one pipe buffer at most"),
    Param::count("fds", Flag::Named("-f"), 1..=MAX_TASK_PAIRS, 20)
        .help("senders (and receivers) per group")
        .why_max(PID_LIMIT_WHY),
    Param::switch("pipe", "--pipe", "pipes instead of UNIX socket pairs"),
    THREADS,
    runs("runs, one `Time:` line each; 0 = repeat until stopped"),
]);

pub(crate) static FORK_LOAD: Params =
    Params(&[
        Param::count("forkers", Flag::Named("--forkers"), 1..=PER_CPU_MAX, 0)
            .auto(Some(CPUS), "one per usable CPU, as contest's fork_load")
            .help("parallel fork loops"),
    ]);

pub(crate) static REF_JOB: Params = Params(&[
    Param::count("jobs", Flag::Named("-j"), 1..=PER_CPU_MAX, 4)
        .help("parallel worker processes, like make -j"),
    Param::amount("work", "--work", 3600.0, 1.0)
        .help("amount of work per run: 1.0 takes about 10 s with -j4 on 2 CPUs"),
    runs("runs, one report each; 0 = repeat until stopped"),
]);

pub(crate) static CPU_HOG: Params =
    Params(&[
        Param::count("threads", Flag::Named("--threads"), 1..=PER_CPU_MAX, 1)
            .help("spinning threads"),
    ]);

pub(crate) static PINGPONG: Params = Params(&[
    Param::choice("ipc", "--kind", &["msg", "sem", "pipe"], "msg")
        .label("IPC")
        .help("msg: SysV message queue; sem: SysV semaphores; pipe: two pipes"),
    Param::choice("pin", "--pin", &["same", "cross", "none"], "same")
        .label("pinning")
        .help("same: both of pair k on CPU k; cross: on CPUs k and k+1; none"),
    Param::count("pairs", Flag::Named("--pairs"), 1..=PER_CPU_MAX, 0)
        .auto(Some(CPUS), "one pair per usable CPU")
        .help("pairs of tasks passing a token"),
    THREADS,
]);

pub(crate) static MSGBENCH: Params = Params(&[
    Param::count("batches", Flag::Named("-n"), 1..=u32::MAX, 1000)
        .help("batches of msgget, msgsnd, msgctl over every queue (1000: the 2008 runs)")
        .why_max(COUNT_WHY),
    Param::count("queues", Flag::Named("--queues"), 1..=1 << 24, 0)
        .auto(None, "as many as kernel.msgmni leaves free, at most 32768")
        .help("message queues each batch creates")
        .unit("queues")
        .why_max("the kernel's largest kernel.msgmni, with ipcmni_extend"),
]);

pub(crate) static WAKEUP_PROBE: Params = Params(&[
    Param::count("timers", Flag::Named("--timers"), 0..=PER_CPU_MAX, 1)
        .help("threads woken by a timer every period, each timing how late it ran"),
    Param::count("pairs", Flag::Named("--pairs"), 0..=PER_CPU_MAX, 1).help(
        "pairs of a waker and a thread it wakes every period, which times how long it took to run",
    ),
    Param::count("period", Flag::Named("--period"), 20..=1_000_000, 1000)
        .help("time between two wakeups of each thread, in µs")
        .why_max("a probe thread looks at its stop flag once a period"),
    Param::count("cpu", Flag::Named("--cpu"), 0..=PER_CPU_MAX - 1, 0)
        .auto(Some("none"), "not pinned")
        .label("CPU")
        .help("the CPU the woken threads run on (the wakers run on the others)")
        .why_max("the highest CPU number an affinity mask holds"),
]);

/// What `attach` watches: exactly one of these (the scenario and the Lab check it).
pub static ATTACH: Params = Params::new(&[
    Param::count("pid", Flag::Named("--pid"), 1..=4_194_304, 0)
        .auto(None, "not by pid")
        .help("a process, its threads and its future children"),
    Param::text("comm", "every process of this name (as `ps -o comm` shows it) and their children"),
    Param::count("session", Flag::Named("--session"), 1..=4_194_304, 0)
        .auto(None, "not by session")
        .help("every process of this session id, and their children"),
    Param::text("cgroup", "every process in this cgroup (a path under /sys/fs/cgroup, or as /proc/PID/cgroup writes it) and its children groups"),
]);

pub static COMMAND: Params = Params(&[Param {
    key: "argv",
    label: "command",
    help: "program and arguments; quotes group words",
    unit: "",
    ty: Ty::Words,
    flag: Flag::Positional,
}]);

impl Param {
    /// The value when a scenario or a contest load leaves it out; None for a required one.
    pub fn absent(&self) -> Value {
        match &self.ty {
            Ty::Count { absent, .. } => Value::Count(match absent {
                Absent::Is(n) => Some(*n),
                Absent::Omitted(_) | Absent::Auto { .. } => None,
            }),
            Ty::Amount { default, .. } => Value::Amount(*default),
            Ty::Switch => Value::Switch(false),
            Ty::Choice { default, .. } => Value::Word(default),
            Ty::Words => Value::Words(Vec::new()),
            Ty::Text => Value::Text(None),
        }
    }

    /// The default written out, as the picker pre-fills it and `--help` shows it.
    pub(crate) fn default_text(&self) -> String {
        match &self.ty {
            Ty::Count { absent, .. } => match absent {
                Absent::Is(n) | Absent::Omitted(n) => n.to_string(),
                Absent::Auto { word, .. } => word.unwrap_or("").to_string(),
            },
            Ty::Amount { default, .. } => format!("{default:?}"),
            Ty::Switch => "false".into(),
            Ty::Choice { default, .. } => (*default).into(),
            Ty::Words | Ty::Text => String::new(),
        }
    }

    /// The default of a count that has one, for clap's `default_value_t`.
    pub(crate) fn default_count(&self) -> u32 {
        match &self.ty {
            Ty::Count {
                absent: Absent::Is(n) | Absent::Omitted(n),
                ..
            } => *n,
            _ => panic!("{} has no numeric default", self.key),
        }
    }

    /// The default of a choice or the word of an automatic count, for clap's
    /// `default_value`.
    pub(crate) fn default_word(&self) -> &'static str {
        match &self.ty {
            Ty::Choice { default, .. } => default,
            Ty::Count {
                absent: Absent::Auto { word: Some(w), .. },
                ..
            } => w,
            _ => panic!("{} has no default word", self.key),
        }
    }

    /// The default of an amount, for clap's `default_value_t`.
    pub(crate) fn default_amount(&self) -> f64 {
        match &self.ty {
            Ty::Amount { default, .. } => *default,
            _ => panic!("{} is not an amount", self.key),
        }
    }

    /// The range a count or an amount accepts, written for people.
    pub(crate) fn range_text(&self) -> Option<String> {
        match &self.ty {
            Ty::Count { range, .. } => Some(format!("{} to {}", range.start(), range.end())),
            Ty::Amount { max, .. } => Some(format!("more than 0, at most {max}")),
            Ty::Choice { words, .. } => Some(words.join(", ")),
            Ty::Switch | Ty::Words | Ty::Text => None,
        }
    }

    /// The subcommand's `--help` line: what it is, its range, and what absent means.
    pub(crate) fn cli_help(&self) -> String {
        // A choice's help starts with one of its words, as typed.
        let mut text = match self.ty {
            Ty::Choice { .. } => self.help.to_string(),
            _ => capitalised(self.help),
        };
        if let (Some(r), false) = (self.range_text(), matches!(self.ty, Ty::Choice { .. })) {
            text += &format!(" ({r}");
            if !self.unit.is_empty() && matches!(self.ty, Ty::Count { .. }) {
                text += &format!(" {}", self.unit);
            }
            text.push(')');
        }
        if let Ty::Count {
            absent: Absent::Auto { word, means },
            ..
        } = &self.ty
        {
            text += &match word {
                Some(w) => format!("; `{w}`: {means}"),
                None => format!("; absent: {means}"),
            };
        }
        text
    }

    /// A whole number checked against the range: the one message every source gives.
    pub fn check_count(&self, x: i64) -> Result<u32, String> {
        let Ty::Count { range, why_max, .. } = &self.ty else {
            panic!("{} is not a count", self.key);
        };
        let (lo, hi) = (i64::from(*range.start()), i64::from(*range.end()));
        if x < lo {
            return Err(format!("{} must be at least {lo}, found {x}", self.key));
        }
        if x > hi {
            let why = why_max.map(|w| format!(" ({w})")).unwrap_or_default();
            return Err(format!(
                "{} must be between {lo} and {hi}, found {x}{why}",
                self.key
            ));
        }
        Ok(x as u32)
    }

    /// A number checked against the range.
    pub fn check_amount(&self, x: f64) -> Result<f64, String> {
        let Ty::Amount { max, .. } = &self.ty else {
            panic!("{} is not an amount", self.key);
        };
        if x.is_nan() || x <= 0.0 {
            return Err(format!("{} must be more than 0, found {x}", self.key));
        }
        if x > *max {
            return Err(format!(
                "{} must be more than 0 and at most {max}, found {x}",
                self.key
            ));
        }
        Ok(x)
    }

    /// One of the words of a choice.
    pub(crate) fn check_word(&self, w: &str) -> Result<&'static str, String> {
        let Ty::Choice { words, .. } = &self.ty else {
            panic!("{} is not a choice", self.key);
        };
        words.iter().find(|c| **c == w).copied().ok_or_else(|| {
            format!(
                "unknown {} `{w}`, expected one of: {}",
                self.key,
                words.join(", ")
            )
        })
    }

    /// A count as typed (a form field, a command-line word): a whole number in range, or the
    /// word asking for the automatic value.
    pub fn parse_count(&self, text: &str) -> Result<Option<u32>, String> {
        let Ty::Count { absent, .. } = &self.ty else {
            panic!("{} is not a count", self.key);
        };
        let text = text.trim();
        if let Absent::Auto { word: Some(w), .. } = absent {
            if text == *w {
                return Ok(None);
            }
        }
        match text.parse::<i64>() {
            Ok(x) => self.check_count(x).map(Some),
            Err(_) => Err(match absent {
                Absent::Auto { word: Some(w), .. } => {
                    format!("{}: `{text}` is neither a whole number nor `{w}`", self.key)
                }
                _ => format!("{}: `{text}` is not a whole number", self.key),
            }),
        }
    }
}

/// `s` with its first letter a capital, as clap's help lines start.
pub(super) fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_message_per_limit() {
        let rooms = CHAT.param("rooms");
        assert_eq!(
            rooms.check_count(0).unwrap_err(),
            "rooms must be at least 1, found 0"
        );
        assert!(rooms
            .check_count(4_294_967_295)
            .unwrap_err()
            .starts_with("rooms must be between 1 and 2147483647, found 4294967295 ("));
        assert_eq!(rooms.parse_count(" 30 "), Ok(Some(30)));
        assert_eq!(FORK_LOAD.param("forkers").parse_count("cpus"), Ok(None));
        let work = REF_JOB.param("work");
        assert_eq!(
            work.check_amount(0.0).unwrap_err(),
            "work must be more than 0, found 0"
        );
        assert!(work.check_amount(3600.5).is_err());
    }
}
