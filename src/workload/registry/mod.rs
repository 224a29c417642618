//! The registry: every workload kind, one entry each, and nothing about a kind anywhere
//! else. An entry gives the kind's one name (its word in scenario files, its subcommand, the
//! name its workloads get, its line in the picker and in contest), the names it had before,
//! what one of its operations is, its parameters ([`params`]), whether it ends by itself,
//! what it asks of the machine, how it becomes a `schedlab` command line, and the subcommand
//! that runs it. Scenario files, the picker, `--help`, the size guard and contest all read
//! it: adding a kind is its module, its entry here (and its variant of [`WorkloadKind`]) and
//! its docs.

mod attach;
pub mod params;
#[cfg(test)]
mod toy;

use anyhow::Result;
use clap::{ArgMatches, FromArgMatches};
use serde::{Deserialize, Serialize};

use params::capitalised;
pub use params::{Absent, Flag, Param, Params, Ty, Value, CPUS};

use super::pingpong::{IpcKind, Pin};
use super::{chat, cpuhog, fork_load, hackbench, msgbench, pingpong, refjob, wakeup};
use crate::supervisor::Program;
use crate::sys::kernel::guard::Demand;

/// One workload: its kind and its parameters, as a scenario holds it. Each variant is named
/// as its kind (serde's tag is the kind's word) and its fields as its parameters' keys, which
/// is how the registry builds one from checked values and reads its values back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum WorkloadKind {
    Chat {
        rooms: u32,
        messages: u32,
        runs: Option<u32>,
    },
    Hackbench {
        groups: u32,
        loops: u32,
        datasize: u32,
        fds: u32,
        pipe: bool,
        threads: bool,
        runs: Option<u32>,
    },
    ForkLoad {
        forkers: Option<u32>,
    },
    RefJob {
        jobs: u32,
        work: f64,
        runs: Option<u32>,
    },
    CpuHog {
        threads: u32,
    },
    #[serde(rename = "ipc-pingpong", alias = "pingpong")]
    Pingpong {
        ipc: IpcKind,
        pairs: Option<u32>,
        pin: Pin,
        threads: bool,
    },
    Msgbench {
        batches: u32,
        queues: Option<u32>,
    },
    WakeupProbe {
        timers: u32,
        pairs: u32,
        /// µs between two wakeups of each thread.
        period: u32,
        /// The CPU its woken threads run on (None: unpinned).
        cpu: Option<u32>,
    },
    /// Any command, run as given (argv[0] looked up in PATH).
    Command {
        argv: Vec<String>,
    },
    /// Processes schedlab did not start, watched: exactly one selector is set
    /// (`probe::attach::Selector`).
    Attach {
        pid: Option<u32>,
        comm: Option<String>,
        session: Option<u32>,
        cgroup: Option<String>,
    },
    #[cfg(test)]
    Toy {
        spins: u32,
    },
}

/// When a kind's workload ends by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ends {
    Never,
    Always,
    /// After its `runs` runs; `runs = 0` repeats until stopped.
    AfterRuns,
}

/// A value a contest load sets rather than leaving the parameter's default.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Setting {
    Count(u32),
    /// One per CPU schedlab may use, counted when the load starts.
    UsableCpus,
    Word(&'static str),
}

/// A subcommand: how clap reads its arguments, and what runs with them.
#[derive(Clone, Copy)]
pub struct Cli {
    args: fn(clap::Command) -> clap::Command,
    run: fn(&ArgMatches) -> Result<()>,
}

impl Cli {
    /// The subcommand of a clap `Args` type `A`; `run` parses it (see [`parsed`]) and runs.
    const fn of<A: clap::Args>(run: fn(&ArgMatches) -> Result<()>) -> Cli {
        Cli {
            args: A::augment_args,
            run,
        }
    }
}

/// The arguments clap read, as the subcommand's `Args`.
fn parsed<A: FromArgMatches>(m: &ArgMatches) -> Result<A> {
    Ok(A::from_arg_matches(m)?)
}

/// A subcommand a kind brings besides its own (chat's server and client, alone).
pub struct Tool {
    pub name: &'static str,
    pub about: &'static str,
    pub cli: Cli,
}

/// One workload kind.
pub struct Kind {
    /// Its one name: a scenario's `kind = "..."`, its subcommand, the name its workloads get
    /// when given none, its line in the picker and its load in contest.
    pub word: &'static str,
    /// Names it was known by, still accepted in scenario files and as subcommands.
    pub aliases: &'static [&'static str],
    /// One line: what it is (its line in the picker, its subcommand's `--help`).
    pub about: &'static str,
    /// What one counted operation is: the table's UNIT, the results' `ops_unit`.
    pub unit: &'static str,
    pub params: &'static Params,
    pub ends: Ends,
    /// The loads it offers contest: itself with a few settings, each named as the workload
    /// it starts.
    pub loads: &'static [&'static [(&'static str, Setting)]],
    /// Workloads of it named apart by one parameter's word (ping-pong's IPC:
    /// `msg-pingpong`): the key, then (word, name) pairs.
    pub variants: Option<(&'static str, &'static [(&'static str, &'static str)])>,
    /// Its subcommand; None: the program in `argv` runs instead.
    pub cli: Option<Cli>,
    /// Subcommands it brings besides its own.
    pub tools: &'static [Tool],
    /// Tasks and memory it will have at its largest, given the CPUs schedlab may use.
    demand: fn(&Values, u64) -> Demand,
}

impl std::fmt::Debug for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kind").field("word", &self.word).finish()
    }
}

/// Every kind, in the order scenario errors, the picker and `--help` list them.
pub static KINDS: &[&Kind] = &[
    &CHAT,
    &HACKBENCH,
    &FORK_LOAD,
    &REF_JOB,
    &CPU_HOG,
    &PINGPONG,
    &MSGBENCH,
    &WAKEUP_PROBE,
    &COMMAND,
    &ATTACH,
    #[cfg(test)]
    &toy::KIND,
];

/// The kind of a workload.
pub(crate) fn kind_of(k: &WorkloadKind) -> &'static Kind {
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
        WorkloadKind::Attach { .. } => &ATTACH,
        #[cfg(test)]
        WorkloadKind::Toy { .. } => &toy::KIND,
    }
}

/// In contest, a finite workload repeats until stopped.
const REPEATED: &[(&str, Setting)] = &[("runs", Setting::Count(0))];

/// What an entry leaves out, it has none of: no old names, no contest loads, no variants, no
/// subcommand of its own (the program in `argv` runs), no tools, and one process at its largest.
/// Its word, about line, unit, parameters and end are every entry's own (a test holds that each
/// gives them).
const PLAIN: Kind = Kind {
    word: "",
    aliases: &[],
    about: "",
    unit: "",
    params: &Params::new(&[]),
    ends: Ends::Never,
    loads: &[],
    variants: None,
    cli: None,
    tools: &[],
    demand: |_, _| Demand::processes(1),
};

static CHAT: Kind = Kind {
    word: "chat",
    aliases: &["chat-bench"],
    about: "chatroom benchmark: 20 users per room over loopback TCP",
    unit: "msg",
    params: &params::CHAT,
    ends: Ends::AfterRuns,
    loads: &[REPEATED],
    cli: Some(Cli::of::<chat::BenchArgs>(|m| chat::bench_main(parsed(m)?))),
    tools: &[
        Tool {
            name: "chat-server",
            about: "The chatroom benchmark's server (chat_s): serves runs one after another",
            cli: Cli::of::<chat::ServerArgs>(|m| chat::server_main(parsed(m)?)),
        },
        Tool {
            name: "chat-client",
            about: "The chatroom benchmark's client (chat_c): runs the rooms and prints the \
                    throughput",
            cli: Cli::of::<chat::ClientArgs>(|m| chat::client_main(parsed(m)?)),
        },
    ],
    demand: |v, _| chat::demand(v.count("rooms"), 2),
    ..PLAIN
};

static HACKBENCH: Kind = Kind {
    word: "hackbench",
    about: "groups of 20 senders x 20 receivers over sockets or pipes",
    unit: "msg",
    params: &params::HACKBENCH,
    ends: Ends::AfterRuns,
    loads: &[REPEATED],
    cli: Some(Cli::of::<hackbench::Args>(|m| hackbench::main(parsed(m)?))),
    demand: |v, _| hackbench::demand(v.count("groups"), v.count("fds"), v.switch("threads")),
    ..PLAIN
};

static FORK_LOAD: Kind = Kind {
    word: "fork-load",
    about: "contest's fork_load: fork, exec nil, wait, repeat",
    unit: "fork",
    params: &params::FORK_LOAD,
    ends: Ends::Never,
    loads: &[&[]],
    cli: Some(Cli::of::<fork_load::Args>(|m| fork_load::main(parsed(m)?))),
    demand: |v, cpus| Demand::processes(2 * v.optional("forkers").map_or(cpus, u64::from)),
    ..PLAIN
};

static REF_JOB: Kind = Kind {
    word: "ref-job",
    about: "fixed parallel CPU work standing in for make -j4",
    unit: "unit",
    params: &params::REF_JOB,
    ends: Ends::AfterRuns,
    cli: Some(Cli::of::<refjob::Args>(|m| refjob::main(parsed(m)?))),
    demand: |v, _| Demand::processes(u64::from(v.count("jobs")) + 1),
    ..PLAIN
};

static CPU_HOG: Kind = Kind {
    word: "cpu-hog",
    about: "threads that only spin",
    unit: "loop",
    params: &params::CPU_HOG,
    ends: Ends::Never,
    loads: &[&[("threads", Setting::UsableCpus)]],
    cli: Some(Cli::of::<cpuhog::Args>(|m| cpuhog::main(parsed(m)?))),
    demand: |v, _| Demand::threads(u64::from(v.count("threads"))),
    ..PLAIN
};

static PINGPONG: Kind = Kind {
    word: "ipc-pingpong",
    aliases: &["pingpong"],
    about: "pairs passing a token: SysV messages, semaphores or pipes",
    unit: "rt",
    params: &params::PINGPONG,
    ends: Ends::Never,
    loads: &[
        &[
            ("ipc", Setting::Word("msg")),
            ("pin", Setting::Word("none")),
        ],
        &[
            ("ipc", Setting::Word("sem")),
            ("pin", Setting::Word("none")),
        ],
        &[
            ("ipc", Setting::Word("pipe")),
            ("pin", Setting::Word("none")),
        ],
    ],
    variants: Some((
        "ipc",
        &[
            ("msg", "msg-pingpong"),
            ("sem", "sem-pingpong"),
            ("pipe", "pipe-pingpong"),
        ],
    )),
    cli: Some(Cli::of::<pingpong::Args>(|m| pingpong::main(parsed(m)?))),
    demand: |v, cpus| {
        let pairs = v.optional("pairs").map_or(cpus, u64::from);
        pingpong::demand(pairs, v.switch("threads"))
    },
    ..PLAIN
};

static MSGBENCH: Kind = Kind {
    word: "msgbench",
    about: "timed batches of msgget/msgsnd/msgctl over many queues",
    unit: "op",
    params: &params::MSGBENCH,
    ends: Ends::Always,
    cli: Some(Cli::of::<msgbench::Args>(|m| msgbench::main(parsed(m)?))),
    ..PLAIN
};

static WAKEUP_PROBE: Kind = Kind {
    word: "wakeup-probe",
    about: "threads woken by a timer or a thread: how late they run",
    unit: "wake",
    params: &params::WAKEUP_PROBE,
    ends: Ends::Never,
    loads: &[&[]],
    cli: Some(Cli::of::<wakeup::Args>(|m| wakeup::main(parsed(m)?))),
    demand: |v, _| wakeup::demand(v.count("timers"), v.count("pairs")),
    ..PLAIN
};

static COMMAND: Kind = Kind {
    word: "command",
    about: "any program, e.g. make -j4 (looked up in PATH)",
    unit: "",
    params: &params::COMMAND,
    ends: Ends::Always,
    ..PLAIN
};

static ATTACH: Kind = Kind {
    word: "attach",
    about: "watch processes by pid, name, session or cgroup",
    unit: "",
    params: &params::ATTACH,
    ends: Ends::Never,
    // It starts nothing.
    demand: |_, _| Demand::default(),
    ..PLAIN
};

/// The kind a scenario or a command line names with `word` (or one of its old names).
pub fn find(word: &str) -> Option<&'static Kind> {
    KINDS
        .iter()
        .copied()
        .find(|k| k.word == word || k.aliases.contains(&word))
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
        self.params.param(key)
    }

    /// Builds the workload from one value per parameter, in order: every source (scenario
    /// file, picker, contest) ends here once each value passed its parameter's check.
    pub fn build(&self, values: Vec<Value>) -> WorkloadKind {
        assert_eq!(values.len(), self.params.len(), "{}", self.word);
        let fields: serde_json::Map<String, serde_json::Value> = self
            .params
            .iter()
            .zip(values)
            .map(|(p, v)| (p.key.to_string(), v.into_json()))
            .collect();
        let mut tagged = serde_json::Map::new();
        tagged.insert(self.word.to_string(), fields.into());
        serde_json::from_value(tagged.into())
            .unwrap_or_else(|e| panic!("kind {}'s variant and parameters differ: {e}", self.word))
    }

    /// Builds it from parameters given by name; the others take their defaults.
    pub(crate) fn build_with(&self, set: &[(&str, Setting)]) -> WorkloadKind {
        let values = self
            .params
            .iter()
            .map(|p| match set.iter().find(|(k, _)| *k == p.key) {
                Some((_, s)) => s.value(),
                None => p.absent(),
            })
            .collect();
        self.build(values)
    }

    /// A workload's values, one per parameter, read from its variant's fields.
    fn values_of<'k>(&'k self, k: &WorkloadKind) -> Values<'k> {
        let json = serde_json::to_value(k).expect("a workload is plain data");
        let fields = &json[self.word];
        Values {
            kind: self,
            values: self
                .params
                .iter()
                .map(|p| Value::from_json(p, &fields[p.key]))
                .collect(),
        }
    }

    /// The keys of its parameters, for messages.
    pub fn keys(&self) -> Vec<&'static str> {
        self.params.keys()
    }

    /// Its subcommand and the ones it brings, for the `schedlab` command line.
    fn commands(&self) -> impl Iterator<Item = (&'static str, Cli, clap::Command)> + '_ {
        // The about after the arguments: clap would take the `Args` type's doc comment.
        let own = self.cli.map(|cli| {
            let cmd = (cli.args)(clap::Command::new(self.word))
                .about(capitalised(self.about))
                .long_about(None)
                .visible_aliases(self.aliases);
            (self.word, cli, cmd)
        });
        let tools = self.tools.iter().map(|t| {
            let cmd = (t.cli.args)(clap::Command::new(t.name))
                .about(t.about)
                .long_about(None);
            (t.name, t.cli, cmd)
        });
        own.into_iter().chain(tools)
    }
}

impl Value {
    fn into_json(self) -> serde_json::Value {
        match self {
            Value::Count(n) => n.into(),
            Value::Amount(x) => x.into(),
            Value::Switch(b) => b.into(),
            Value::Word(w) => w.into(),
            Value::Words(w) => w.into(),
            Value::Text(t) => t.into(),
        }
    }

    /// The value of parameter `p` as a variant's field holds it.
    fn from_json(p: &Param, j: &serde_json::Value) -> Value {
        let value = match &p.ty {
            Ty::Count { .. } => Some(Value::Count(j.as_u64().map(|n| n as u32))),
            Ty::Amount { .. } => j.as_f64().map(Value::Amount),
            Ty::Switch => j.as_bool().map(Value::Switch),
            Ty::Choice { words, .. } => words.iter().find(|w| j == **w).map(|w| Value::Word(w)),
            Ty::Words => serde_json::from_value(j.clone()).ok().map(Value::Words),
            Ty::Text => Some(Value::Text(j.as_str().map(str::to_owned))),
        };
        value.unwrap_or_else(|| panic!("{}: {j} is not what its type holds", p.key))
    }
}

impl Setting {
    fn value(self) -> Value {
        match self {
            Setting::Count(n) => Value::Count(Some(n)),
            Setting::UsableCpus => {
                Value::Count(Some(crate::supervisor::usable_cpus().max(1) as u32))
            }
            Setting::Word(w) => Value::Word(w),
        }
    }
}

/// Every kind's subcommands, in the order of [`KINDS`], as clap shows them in `--help`.
pub fn subcommands() -> impl Iterator<Item = clap::Command> {
    KINDS
        .iter()
        .flat_map(|k| k.commands())
        .map(|(_, _, cmd)| cmd)
}

/// Runs the kind's subcommand `name` (as clap names it: not an alias) with what clap read;
/// None when no kind has a subcommand of that name.
pub(crate) fn run_subcommand(name: &str, matches: &ArgMatches) -> Option<Result<()>> {
    let (_, cli, _) = KINDS
        .iter()
        .flat_map(|k| k.commands())
        .find(|(n, _, _)| *n == name)?;
    Some((cli.run)(matches))
}

impl WorkloadKind {
    /// Whether its tasks are paced by timers (the wakeup probe sleeps until its next period):
    /// what it runs is its work, and a wait delays it without making more.
    pub fn paced(&self) -> bool {
        matches!(self, WorkloadKind::WakeupProbe { .. })
    }

    /// Whether it watches processes schedlab did not start (and never signals them).
    pub fn attached(&self) -> bool {
        matches!(self, WorkloadKind::Attach { .. })
    }

    /// Its kind's entry.
    pub fn kind(&self) -> &'static Kind {
        kind_of(self)
    }

    /// What one counted operation is, for the throughput column.
    pub fn ops_unit(&self) -> &'static str {
        kind_of(self).unit
    }

    /// Its name for tables and legends: its kind's, or its variant's (`msg-pingpong`).
    pub fn label(&self) -> &'static str {
        let kind = kind_of(self);
        let Some((key, names)) = kind.variants else {
            return kind.word;
        };
        let word = kind.values_of(self).word(key);
        names
            .iter()
            .find(|(w, _)| *w == word)
            .map_or(kind.word, |(_, name)| name)
    }

    /// Whether it ends by itself, without being stopped.
    pub(crate) fn ends_by_itself(&self) -> bool {
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
        if kind.cli.is_none() {
            if std::ptr::eq(kind, &ATTACH) {
                // Nothing to run: the Lab attaches it instead (engine/lab.rs).
                return Program::Command(Vec::new());
            }
            return Program::Command(values.words("argv").to_vec());
        }
        let mut args = vec![kind.word.to_string()];
        let mut named = Vec::new();
        for (p, v) in kind.params.iter().zip(&values.values) {
            let text = match v {
                Value::Count(Some(n)) => Some(n.to_string()),
                Value::Amount(x) => Some(x.to_string()),
                Value::Word(w) => Some((*w).to_string()),
                Value::Count(None) | Value::Switch(_) | Value::Words(_) | Value::Text(_) => None,
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

/// The loads contest knows, as the workloads they start, in the order its help lists them.
pub(crate) fn contest_loads() -> impl Iterator<Item = WorkloadKind> {
    KINDS
        .iter()
        .flat_map(|k| k.loads.iter().map(move |set| k.build_with(set)))
}

/// A contest load by its name (`fork-load`; `fork_load` as contest wrote it is the same).
pub(crate) fn contest_load(name: &str) -> Option<WorkloadKind> {
    let name = name.replace('_', "-");
    contest_loads().find(|w| w.label() == name)
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
                Ty::Text => "string".into(),
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
                Ty::Text => "none".into(),
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
            assert!(std::ptr::eq(kind_of(&built), *kind), "{}", kind.word);
            assert_eq!(kind.values_of(&built).values, defaults, "{}", kind.word);
            for p in kind.params {
                assert!(std::ptr::eq(kind.param(p.key), p));
            }
        }
    }

    #[test]
    fn every_entry_gives_what_plain_cannot() {
        for kind in KINDS {
            assert!(!kind.word.is_empty(), "{kind:?}");
            assert!(!kind.about.is_empty(), "{}", kind.word);
            assert!(kind.params.iter().next().is_some(), "{}", kind.word);
        }
    }

    #[test]
    fn names_are_one_per_kind_and_old_ones_still_work() {
        for kind in KINDS {
            assert!(std::ptr::eq(find(kind.word).unwrap(), *kind));
            for old in kind.aliases {
                assert!(std::ptr::eq(find(old).unwrap(), *kind), "{old}");
            }
            let names = kind.commands().map(|(n, _, _)| n).collect::<Vec<_>>();
            if kind.cli.is_some() {
                assert_eq!(names[0], kind.word, "its subcommand is its name");
            }
        }
        assert_eq!(find("pingpong").unwrap().word, "ipc-pingpong");
        assert_eq!(
            WorkloadKind::ForkLoad { forkers: None }.label(),
            "fork-load"
        );
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
        let sem = Some(WorkloadKind::Pingpong {
            ipc: IpcKind::Sem,
            pairs: None,
            pin: Pin::None,
            threads: false,
        });
        assert_eq!(contest_load("sem-pingpong"), sem);
        assert_eq!(contest_load("sem_pingpong"), sem, "contest's spelling");
        assert_eq!(contest_load("bogus"), None);
    }

    #[test]
    fn pingpong_maps_to_its_subcommand() {
        let kind = WorkloadKind::Pingpong {
            ipc: IpcKind::Sem,
            pairs: Some(2),
            pin: Pin::Cross,
            threads: false,
        };
        assert_eq!(
            kind.program(),
            Program::SelfExe(
                [
                    "ipc-pingpong",
                    "--kind",
                    "sem",
                    "--pin",
                    "cross",
                    "--pairs",
                    "2"
                ]
                .map(String::from)
                .to_vec()
            )
        );
    }
}
