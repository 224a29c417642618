//! The one description of every workload kind. Each kind declares here, once, its parameters
//! (key, type, range, default, unit, help), whether it ends by itself, what it asks of the
//! machine (for the size guard), how it becomes a `schedlab` command line, its entries in the
//! dashboard's picker and its loads in contest. Scenario files, the picker's forms, the
//! subcommands' `--help` and checks, the guard and contest all read it, so a limit is stated
//! in one place and refused with one message wherever it is given.

use std::ops::RangeInclusive;

use super::chat::{limits::THREADS_PER_ROOM, protocol};
use super::kind::{IpcKind, Pin, WorkloadKind};
use crate::supervisor::Program;
use crate::sys::guard::Demand;

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
}

/// When a kind's workload ends by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ends {
    Never,
    Always,
    /// After its `runs` runs; `runs = 0` repeats until stopped.
    AfterRuns,
}

/// A value set by a picker entry or a contest load rather than typed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Setting {
    Count(u32),
    /// One per CPU schedlab may use, counted when the load starts.
    OnlineCpus,
    Word(&'static str),
}

/// One line of the dashboard's picker: a kind, with some parameters fixed.
#[derive(Debug)]
pub struct Pick {
    pub label: &'static str,
    pub about: &'static str,
    pub fixed: &'static [(&'static str, Setting)],
}

/// A load contest knows by name: a kind with some parameters set, the rest their defaults.
#[derive(Debug)]
pub struct Load {
    pub name: &'static str,
    pub set: &'static [(&'static str, Setting)],
}

/// One workload kind.
pub struct Kind {
    /// As written in a scenario's `kind = "..."`.
    pub word: &'static str,
    /// Other words accepted for it (the subcommand's name, as people type it).
    pub also: &'static [&'static str],
    /// The `schedlab` subcommand that runs it; None: the command given in `argv`.
    pub subcommand: Option<&'static str>,
    pub params: &'static [Param],
    pub ends: Ends,
    pub picks: &'static [Pick],
    pub loads: &'static [Load],
    build: fn(&Values) -> WorkloadKind,
    values: fn(&WorkloadKind) -> Vec<Value>,
    demand: fn(&Values, u64) -> Demand,
}

impl std::fmt::Debug for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kind").field("word", &self.word).finish()
    }
}

/// Every kind, in the order scenario errors and the picker list them.
pub static KINDS: [&Kind; 9] = [
    &CHAT,
    &HACKBENCH,
    &FORK_LOAD,
    &REF_JOB,
    &CPU_HOG,
    &PINGPONG,
    &MSGBENCH,
    &WAKEUP_PROBE,
    &COMMAND,
];

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

/// The picker's entry of a kind with nothing fixed.
const fn pick(label: &'static str, about: &'static str) -> Pick {
    Pick {
        label,
        about,
        fixed: &[],
    }
}

/// In contest, a finite workload repeats until stopped.
const REPEATED: &[(&str, Setting)] = &[("runs", Setting::Count(0))];

pub static CHAT: Kind = Kind {
    word: "chat",
    params: &[
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
    ],
    also: &[],
    subcommand: Some("chat-bench"),
    ends: Ends::AfterRuns,
    picks: &[pick(
        "chat",
        "chatroom benchmark: 20 users per room over loopback TCP",
    )],
    loads: &[Load {
        name: "chat",
        set: REPEATED,
    }],
    build: |v| WorkloadKind::Chat {
        rooms: v.count("rooms"),
        messages: v.count("messages"),
        runs: v.optional("runs"),
    },
    values: |k| match k {
        WorkloadKind::Chat {
            rooms,
            messages,
            runs,
        } => vec![known(rooms), known(messages), Value::Count(*runs)],
        _ => unreachable!(),
    },
    demand: |v, _| Demand::threads(u64::from(v.count("rooms")) * THREADS_PER_ROOM * 2),
};

pub static HACKBENCH: Kind = Kind {
    word: "hackbench",
    params: &[
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
    ],
    also: &[],
    subcommand: Some("hackbench"),
    ends: Ends::AfterRuns,
    picks: &[pick(
        "hackbench",
        "groups of 20 senders x 20 receivers over sockets or pipes",
    )],
    loads: &[Load {
        name: "hackbench",
        set: REPEATED,
    }],
    build: |v| WorkloadKind::Hackbench {
        groups: v.count("groups"),
        loops: v.count("loops"),
        datasize: v.count("datasize"),
        fds: v.count("fds"),
        pipe: v.switch("pipe"),
        threads: v.switch("threads"),
        runs: v.optional("runs"),
    },
    values: |k| match k {
        WorkloadKind::Hackbench {
            groups,
            loops,
            datasize,
            fds,
            pipe,
            threads,
            runs,
        } => vec![
            known(groups),
            known(loops),
            known(datasize),
            known(fds),
            Value::Switch(*pipe),
            Value::Switch(*threads),
            Value::Count(*runs),
        ],
        _ => unreachable!(),
    },
    demand: |v, _| {
        let n = u64::from(v.count("groups")) * u64::from(v.count("fds")) * 2;
        tasks(n, v.switch("threads"))
    },
};

pub static FORK_LOAD: Kind = Kind {
    word: "fork-load",
    params: &[
        Param::count("forkers", Flag::Named("--forkers"), 1..=PER_CPU_MAX, 0)
            .auto(Some(CPUS), "one per usable CPU, as contest's fork_load")
            .help("parallel fork loops"),
    ],
    also: &[],
    subcommand: Some("fork-load"),
    ends: Ends::Never,
    picks: &[pick(
        "fork_load",
        "contest's fork_load: fork, exec nil, wait, repeat",
    )],
    loads: &[Load {
        name: "fork_load",
        set: &[],
    }],
    build: |v| WorkloadKind::ForkLoad {
        forkers: v.optional("forkers"),
    },
    values: |k| match k {
        WorkloadKind::ForkLoad { forkers } => vec![Value::Count(*forkers)],
        _ => unreachable!(),
    },
    // Each forker and the child it waits for.
    demand: |v, cpus| Demand::processes(2 * v.optional("forkers").map_or(cpus, u64::from)),
};

pub static REF_JOB: Kind = Kind {
    word: "ref-job",
    params: &[
        Param::count("jobs", Flag::Named("-j"), 1..=PER_CPU_MAX, 4)
            .help("parallel worker processes, like make -j"),
        Param::amount("work", "--work", 3600.0, 1.0)
            .help("amount of work per run: 1.0 takes about 10 s with -j4 on 2 CPUs"),
        runs("runs, one report each; 0 = repeat until stopped"),
    ],
    also: &[],
    subcommand: Some("ref-job"),
    ends: Ends::AfterRuns,
    picks: &[pick(
        "reference job",
        "fixed parallel CPU work standing in for make -j4",
    )],
    loads: &[],
    build: |v| WorkloadKind::RefJob {
        jobs: v.count("jobs"),
        work: v.amount("work"),
        runs: v.optional("runs"),
    },
    values: |k| match k {
        WorkloadKind::RefJob { jobs, work, runs } => {
            vec![known(jobs), Value::Amount(*work), Value::Count(*runs)]
        }
        _ => unreachable!(),
    },
    // The workers and the process that waits for them.
    demand: |v, _| Demand::processes(u64::from(v.count("jobs")) + 1),
};

pub static CPU_HOG: Kind = Kind {
    word: "cpu-hog",
    params: &[
        Param::count("threads", Flag::Named("--threads"), 1..=PER_CPU_MAX, 1)
            .help("spinning threads"),
    ],
    also: &[],
    subcommand: Some("cpu-hog"),
    ends: Ends::Never,
    picks: &[pick("CPU hog", "threads that only spin")],
    loads: &[Load {
        name: "cpu_hog",
        set: &[("threads", Setting::OnlineCpus)],
    }],
    build: |v| WorkloadKind::CpuHog {
        threads: v.count("threads"),
    },
    values: |k| match k {
        WorkloadKind::CpuHog { threads } => vec![known(threads)],
        _ => unreachable!(),
    },
    demand: |v, _| Demand::threads(u64::from(v.count("threads"))),
};

pub static PINGPONG: Kind = Kind {
    word: "pingpong",
    params: &[
        Param::choice("ipc", "--kind", &["msg", "sem", "pipe"], "msg")
            .help("msg: SysV message queue; sem: SysV semaphores; pipe: two pipes"),
        Param::choice("pin", "--pin", &["same", "cross", "none"], "same")
            .label("pinning")
            .help("same: both of pair k on CPU k; cross: on CPUs k and k+1; none"),
        Param::count("pairs", Flag::Named("--pairs"), 1..=PER_CPU_MAX, 0)
            .auto(Some(CPUS), "one pair per usable CPU")
            .help("pairs of tasks passing a token"),
        THREADS,
    ],
    also: &["ipc-pingpong"],
    subcommand: Some("ipc-pingpong"),
    ends: Ends::Never,
    picks: &[
        Pick {
            label: "msg ping-pong",
            about: "pairs passing a token over SysV message queues",
            fixed: &[("ipc", Setting::Word("msg"))],
        },
        Pick {
            label: "sem ping-pong",
            about: "pairs passing a token over SysV semaphores",
            fixed: &[("ipc", Setting::Word("sem"))],
        },
        Pick {
            label: "pipe ping-pong",
            about: "pairs passing a token over pipes",
            fixed: &[("ipc", Setting::Word("pipe"))],
        },
    ],
    loads: &[
        Load {
            name: "msg_pingpong",
            set: &[
                ("ipc", Setting::Word("msg")),
                ("pin", Setting::Word("none")),
            ],
        },
        Load {
            name: "sem_pingpong",
            set: &[
                ("ipc", Setting::Word("sem")),
                ("pin", Setting::Word("none")),
            ],
        },
        Load {
            name: "pipe_pingpong",
            set: &[
                ("ipc", Setting::Word("pipe")),
                ("pin", Setting::Word("none")),
            ],
        },
    ],
    build: |v| WorkloadKind::Pingpong {
        ipc: match v.word("ipc") {
            "sem" => IpcKind::Sem,
            "pipe" => IpcKind::Pipe,
            _ => IpcKind::Msg,
        },
        pin: match v.word("pin") {
            "cross" => Pin::Cross,
            "none" => Pin::None,
            _ => Pin::Same,
        },
        pairs: v.optional("pairs"),
        threads: v.switch("threads"),
    },
    values: |k| match k {
        WorkloadKind::Pingpong {
            ipc,
            pairs,
            pin,
            threads,
        } => vec![
            Value::Word(match ipc {
                IpcKind::Msg => "msg",
                IpcKind::Sem => "sem",
                IpcKind::Pipe => "pipe",
            }),
            Value::Word(match pin {
                Pin::Same => "same",
                Pin::Cross => "cross",
                Pin::None => "none",
            }),
            Value::Count(*pairs),
            Value::Switch(*threads),
        ],
        _ => unreachable!(),
    },
    demand: |v, cpus| {
        let n = 2 * v.optional("pairs").map_or(cpus, u64::from);
        tasks(n, v.switch("threads"))
    },
};

pub static MSGBENCH: Kind = Kind {
    word: "msgbench",
    params: &[
        Param::count("batches", Flag::Named("-n"), 1..=u32::MAX, 10)
            .help("batches of msgget, msgsnd, msgctl over every queue")
            .why_max(COUNT_WHY),
        Param::count("queues", Flag::Named("--queues"), 1..=1 << 24, 0)
            .auto(None, "as many as kernel.msgmni leaves free, at most 32768")
            .help("message queues each batch creates")
            .unit("queues")
            .why_max("the kernel's largest kernel.msgmni, with ipcmni_extend"),
    ],
    also: &[],
    subcommand: Some("msgbench"),
    ends: Ends::Always,
    picks: &[pick(
        "msgbench",
        "timed batches of msgget/msgsnd/msgctl over many queues",
    )],
    loads: &[],
    build: |v| WorkloadKind::Msgbench {
        batches: v.count("batches"),
        queues: v.optional("queues"),
    },
    values: |k| match k {
        WorkloadKind::Msgbench { batches, queues } => {
            vec![known(batches), Value::Count(*queues)]
        }
        _ => unreachable!(),
    },
    demand: |_, _| Demand::processes(1),
};

pub static WAKEUP_PROBE: Kind = Kind {
    word: "wakeup-probe",
    params: &[
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
    ],
    also: &[],
    subcommand: Some("wakeup-probe"),
    ends: Ends::Never,
    picks: &[pick(
        "wakeup probe",
        "threads woken by a timer and by a thread, timing how late they run",
    )],
    loads: &[Load {
        name: "wakeup_probe",
        set: &[],
    }],
    build: |v| WorkloadKind::WakeupProbe {
        timers: v.count("timers"),
        pairs: v.count("pairs"),
        period: v.count("period"),
        cpu: v.optional("cpu"),
    },
    values: |k| match k {
        WorkloadKind::WakeupProbe {
            timers,
            pairs,
            period,
            cpu,
        } => vec![
            known(timers),
            known(pairs),
            known(period),
            Value::Count(*cpu),
        ],
        _ => unreachable!(),
    },
    // Its threads and the main thread that reports.
    demand: |v, _| {
        Demand::threads(u64::from(v.count("timers")) + 2 * u64::from(v.count("pairs")) + 1)
    },
};

pub static COMMAND: Kind = Kind {
    word: "command",
    params: &[Param {
        key: "argv",
        label: "command",
        help: "program and arguments; quotes group words",
        unit: "",
        ty: Ty::Words,
        flag: Flag::Positional,
    }],
    also: &[],
    subcommand: None,
    ends: Ends::Always,
    picks: &[pick(
        "any command",
        "any program, e.g. make -j4 (looked up in PATH)",
    )],
    loads: &[],
    build: |v| WorkloadKind::Command {
        argv: v.words("argv").to_vec(),
    },
    values: |k| match k {
        WorkloadKind::Command { argv } => vec![Value::Words(argv.clone())],
        _ => unreachable!(),
    },
    demand: |_, _| Demand::processes(1),
};

/// The value of a count that always has one.
fn known(n: &u32) -> Value {
    Value::Count(Some(*n))
}

fn tasks(n: u64, threads: bool) -> Demand {
    if threads {
        Demand::threads(n)
    } else {
        Demand::processes(n)
    }
}

/// The kind a scenario names with `word` (or one of its other words).
pub fn find(word: &str) -> Option<&'static Kind> {
    KINDS
        .iter()
        .copied()
        .find(|k| k.word == word || k.also.contains(&word))
}

/// The kind of a workload.
pub fn kind_of(k: &WorkloadKind) -> &'static Kind {
    match k {
        WorkloadKind::Chat { .. } => &CHAT,
        WorkloadKind::Hackbench { .. } => &HACKBENCH,
        WorkloadKind::ForkLoad { .. } => &FORK_LOAD,
        WorkloadKind::RefJob { .. } => &REF_JOB,
        WorkloadKind::CpuHog { .. } => &CPU_HOG,
        WorkloadKind::Pingpong { .. } => &PINGPONG,
        WorkloadKind::Msgbench { .. } => &MSGBENCH,
        WorkloadKind::WakeupProbe { .. } => &WAKEUP_PROBE,
        WorkloadKind::Command { .. } => &COMMAND,
    }
}

/// A kind's parameter values, in the order of its `params`.
pub struct Values<'k> {
    kind: &'k Kind,
    values: Vec<Value>,
}

impl Values<'_> {
    fn get(&self, key: &str) -> &Value {
        let i = self
            .kind
            .params
            .iter()
            .position(|p| p.key == key)
            .unwrap_or_else(|| panic!("kind {} has no parameter {key}", self.kind.word));
        &self.values[i]
    }

    /// A count that always has a value ([`Absent::Is`]).
    fn count(&self, key: &str) -> u32 {
        self.optional(key)
            .unwrap_or_else(|| panic!("{key} of {} has no value", self.kind.word))
    }

    fn optional(&self, key: &str) -> Option<u32> {
        match self.get(key) {
            Value::Count(n) => *n,
            v => panic!("{key} is not a count: {v:?}"),
        }
    }

    fn amount(&self, key: &str) -> f64 {
        match self.get(key) {
            Value::Amount(x) => *x,
            v => panic!("{key} is not an amount: {v:?}"),
        }
    }

    fn switch(&self, key: &str) -> bool {
        matches!(self.get(key), Value::Switch(true))
    }

    fn word(&self, key: &str) -> &'static str {
        match self.get(key) {
            Value::Word(w) => w,
            v => panic!("{key} is not a word: {v:?}"),
        }
    }

    fn words(&self, key: &str) -> &[String] {
        match self.get(key) {
            Value::Words(w) => w,
            v => panic!("{key} is not a command: {v:?}"),
        }
    }
}

impl Kind {
    /// Its parameter `key`; panics on a key the kind does not have (a bug here, caught by
    /// the tests that walk every kind).
    pub fn param(&'static self, key: &str) -> &'static Param {
        self.params
            .iter()
            .find(|p| p.key == key)
            .unwrap_or_else(|| panic!("kind {} has no parameter {key}", self.word))
    }

    /// Builds the workload from one value per parameter, in order: every source (scenario
    /// file, picker, contest) ends here once each value passed its parameter's check.
    pub fn build(&self, values: Vec<Value>) -> WorkloadKind {
        assert_eq!(values.len(), self.params.len(), "{}", self.word);
        (self.build)(&Values { kind: self, values })
    }

    /// Builds it from parameters given by name; the others take their defaults.
    pub fn build_with(&self, set: &[(&str, Setting)]) -> WorkloadKind {
        let values = self
            .params
            .iter()
            .map(|p| match set.iter().find(|(k, _)| *k == p.key) {
                Some((_, s)) => p.setting(*s),
                None => p.absent(),
            })
            .collect();
        self.build(values)
    }

    fn values_of<'k>(&'k self, k: &WorkloadKind) -> Values<'k> {
        Values {
            kind: self,
            values: (self.values)(k),
        }
    }

    /// The keys of its parameters, for messages.
    pub fn keys(&self) -> Vec<&'static str> {
        self.params.iter().map(|p| p.key).collect()
    }
}

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
        }
    }

    /// The default written out, as the picker pre-fills it and `--help` shows it.
    pub fn default_text(&self) -> String {
        match &self.ty {
            Ty::Count { absent, .. } => match absent {
                Absent::Is(n) | Absent::Omitted(n) => n.to_string(),
                Absent::Auto { word, .. } => word.unwrap_or("").to_string(),
            },
            Ty::Amount { default, .. } => format!("{default:?}"),
            Ty::Switch => "false".into(),
            Ty::Choice { default, .. } => (*default).into(),
            Ty::Words => String::new(),
        }
    }

    /// The default of a count that has one, for clap's `default_value_t`.
    pub fn default_count(&self) -> u32 {
        match &self.ty {
            Ty::Count {
                absent: Absent::Is(n) | Absent::Omitted(n),
                ..
            } => *n,
            _ => panic!("{} has no numeric default", self.key),
        }
    }

    /// The default of a choice, for clap's `default_value`.
    pub fn default_word(&self) -> &'static str {
        match &self.ty {
            Ty::Choice { default, .. } => default,
            _ => panic!("{} is not a choice", self.key),
        }
    }

    /// The default of an amount, for clap's `default_value_t`.
    pub fn default_amount(&self) -> f64 {
        match &self.ty {
            Ty::Amount { default, .. } => *default,
            _ => panic!("{} is not an amount", self.key),
        }
    }

    pub fn setting(&self, s: Setting) -> Value {
        match s {
            Setting::Count(n) => Value::Count(Some(n)),
            Setting::OnlineCpus => {
                Value::Count(Some(crate::supervisor::online_cpus().max(1) as u32))
            }
            Setting::Word(w) => Value::Word(w),
        }
    }

    /// The range a count or an amount accepts, written for people.
    pub fn range_text(&self) -> Option<String> {
        match &self.ty {
            Ty::Count { range, .. } => Some(format!("{} to {}", range.start(), range.end())),
            Ty::Amount { max, .. } => Some(format!("more than 0, at most {max}")),
            Ty::Choice { words, .. } => Some(words.join(", ")),
            Ty::Switch | Ty::Words => None,
        }
    }

    /// The subcommand's `--help` line: what it is, its range, and what absent means.
    pub fn cli_help(&self) -> String {
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
    pub fn check_word(&self, w: &str) -> Result<&'static str, String> {
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

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

impl WorkloadKind {
    /// Whether it ends by itself, without being stopped.
    pub fn ends_by_itself(&self) -> bool {
        let kind = kind_of(self);
        match kind.ends {
            Ends::Never => false,
            Ends::Always => true,
            Ends::AfterRuns => {
                let runs = kind.values_of(self).optional("runs");
                runs.unwrap_or_else(|| kind.param("runs").default_count()) > 0
            }
        }
    }

    /// Tasks and memory it will have at its largest, for the size guard.
    pub fn demand(&self, cpus: u64) -> Demand {
        let kind = kind_of(self);
        (kind.demand)(&kind.values_of(self), cpus)
    }

    /// The program that runs it: its subcommand with each parameter as its flag says.
    pub fn program(&self) -> Program {
        let kind = kind_of(self);
        let values = kind.values_of(self);
        let Some(sub) = kind.subcommand else {
            return Program::Command(values.words("argv").to_vec());
        };
        let mut args = vec![sub.to_string()];
        let mut named = Vec::new();
        for (p, v) in kind.params.iter().zip(&values.values) {
            let text = match v {
                Value::Count(Some(n)) => Some(n.to_string()),
                Value::Amount(x) => Some(x.to_string()),
                Value::Word(w) => Some((*w).to_string()),
                Value::Count(None) | Value::Switch(_) | Value::Words(_) => None,
            };
            match (p.flag, v, text) {
                (Flag::Positional, _, Some(t)) => args.push(t),
                (Flag::Named(f), Value::Switch(true), _) => named.push(f.to_string()),
                (Flag::Named(f), _, Some(t)) => named.extend([f.to_string(), t]),
                _ => {}
            }
        }
        args.extend(named);
        Program::SelfExe(args)
    }
}

/// The loads contest knows, by name, in the order its help lists them.
pub fn contest_loads() -> impl Iterator<Item = (&'static Kind, &'static Load)> {
    KINDS
        .iter()
        .flat_map(|k| k.loads.iter().map(move |l| (*k, l)))
}

/// A contest load by name.
pub fn contest_load(name: &str) -> Option<WorkloadKind> {
    contest_loads()
        .find(|(_, l)| l.name == name)
        .map(|(k, l)| k.build_with(l.set))
}

/// Every picker line, in order.
pub fn picks() -> impl Iterator<Item = (&'static Kind, &'static Pick)> {
    KINDS
        .iter()
        .flat_map(|k| k.picks.iter().map(move |p| (*k, p)))
}

/// The per-kind parameter table of docs/scenarios.md, and which kinds end by themselves,
/// written from the declarations (a test keeps the page equal to it).
pub fn parameters_markdown() -> String {
    let mut out = String::from(
        "| kind | key | type | default | meaning |\n| --- | --- | --- | --- | --- |\n",
    );
    for kind in KINDS {
        for (i, p) in kind.params.iter().enumerate() {
            let first = if i == 0 {
                format!(" `{}` ", kind.word)
            } else {
                " ".into()
            };
            let ty = match &p.ty {
                Ty::Count { range, .. } => format!("integer, {}..={}", range.start(), range.end()),
                Ty::Amount { max, .. } => format!("number > 0, at most {max}"),
                Ty::Switch => "boolean".into(),
                Ty::Choice { words, .. } => words
                    .iter()
                    .map(|w| format!("`{w}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                Ty::Words => "list of strings, the first not empty".into(),
            };
            let default = match &p.ty {
                Ty::Count {
                    absent: Absent::Auto { word, means },
                    ..
                } => match word {
                    Some(w) => format!("{means} (or `\"{w}\"`)"),
                    None => (*means).into(),
                },
                Ty::Choice { default, .. } => format!("`{default}`"),
                Ty::Words => "required".into(),
                _ => p.default_text(),
            };
            out += &format!("|{first}| `{}` | {ty} | {default} | {} |\n", p.key, p.help);
        }
    }
    let words = |ends: Ends| {
        KINDS
            .iter()
            .filter(|k| k.ends == ends)
            .map(|k| k.word)
            .collect::<Vec<_>>()
            .join(", ")
    };
    out += &format!(
        "\nWhich workloads end by themselves: {} unless `runs = 0`; {}. {} run until stopped \
         (or their `duration`).\n",
        words(Ends::AfterRuns),
        words(Ends::Always),
        words(Ends::Never)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_through_its_values() {
        for kind in KINDS {
            let defaults: Vec<Value> = kind
                .params
                .iter()
                .map(|p| match p.ty {
                    Ty::Words => Value::Words(vec!["true".into()]),
                    _ => p.absent(),
                })
                .collect();
            let built = kind.build(defaults.clone());
            assert!(std::ptr::eq(kind_of(&built), kind), "{}", kind.word);
            assert_eq!((kind.values)(&built), defaults, "{}", kind.word);
            for p in kind.params {
                assert!(std::ptr::eq(kind.param(p.key), p));
            }
        }
    }

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

    #[test]
    fn ending_by_itself_follows_runs() {
        let chat = |runs| WorkloadKind::Chat {
            rooms: 1,
            messages: 1,
            runs,
        };
        assert!(chat(None).ends_by_itself(), "absent runs is one run");
        assert!(chat(Some(2)).ends_by_itself());
        assert!(!chat(Some(0)).ends_by_itself());
        assert!(!WorkloadKind::CpuHog { threads: 1 }.ends_by_itself());
        assert!(WorkloadKind::Command { argv: vec![] }.ends_by_itself());
    }

    #[test]
    fn contest_loads_are_their_kinds_with_a_few_settings() {
        assert_eq!(
            contest_load("chat"),
            Some(WorkloadKind::Chat {
                rooms: 10,
                messages: 100,
                runs: Some(0)
            })
        );
        assert_eq!(
            contest_load("sem_pingpong"),
            Some(WorkloadKind::Pingpong {
                ipc: IpcKind::Sem,
                pairs: None,
                pin: Pin::None,
                threads: false
            })
        );
        assert_eq!(contest_load("bogus"), None);
    }
}
