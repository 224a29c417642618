//! Adding a workload without leaving the screen: a list of every kind schedlab can launch,
//! then a form with its parameters and knobs, which becomes a `WorkloadDecl`. The knob part
//! of the form is also the editor for a running workload's knobs.

use crate::scenario::WorkloadDecl;
use crate::supervisor::knobs::{format_cpu_list, parse_cpu_list, policy_name};
use crate::supervisor::{Knobs, Placement, Policy};
use crate::workload::kind::{IpcKind, Pin, WorkloadKind};

use super::form::{Field, Form};

/// One line of the picker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Template {
    Chat,
    Hackbench,
    ForkLoad,
    RefJob,
    CpuHog,
    Pingpong(IpcKind),
    Msgbench,
    Command,
}

pub const TEMPLATES: [Template; 10] = [
    Template::Chat,
    Template::Hackbench,
    Template::ForkLoad,
    Template::RefJob,
    Template::CpuHog,
    Template::Pingpong(IpcKind::Msg),
    Template::Pingpong(IpcKind::Sem),
    Template::Pingpong(IpcKind::Pipe),
    Template::Msgbench,
    Template::Command,
];

impl Template {
    pub fn label(self) -> &'static str {
        match self {
            Template::Chat => "chat",
            Template::Hackbench => "hackbench",
            Template::ForkLoad => "fork_load",
            Template::RefJob => "reference job",
            Template::CpuHog => "CPU hog",
            Template::Pingpong(IpcKind::Msg) => "msg ping-pong",
            Template::Pingpong(IpcKind::Sem) => "sem ping-pong",
            Template::Pingpong(IpcKind::Pipe) => "pipe ping-pong",
            Template::Msgbench => "msgbench",
            Template::Command => "any command",
        }
    }

    pub fn about(self) -> &'static str {
        match self {
            Template::Chat => "chatroom benchmark: 20 users per room over loopback TCP",
            Template::Hackbench => "groups of 20 senders x 20 receivers over sockets or pipes",
            Template::ForkLoad => "contest's fork_load: fork, exec nil, wait, repeat",
            Template::RefJob => "fixed parallel CPU work standing in for make -j4",
            Template::CpuHog => "threads that only spin",
            Template::Pingpong(IpcKind::Msg) => "pairs passing a token over SysV message queues",
            Template::Pingpong(IpcKind::Sem) => "pairs passing a token over SysV semaphores",
            Template::Pingpong(IpcKind::Pipe) => "pairs passing a token over pipes",
            Template::Msgbench => "timed batches of msgget/msgsnd/msgctl over many queues",
            Template::Command => "any program, e.g. make -j4 (looked up in PATH)",
        }
    }

    /// Finite runs can loop: restart when they finish.
    pub fn finite(self) -> bool {
        matches!(
            self,
            Template::Chat
                | Template::Hackbench
                | Template::RefJob
                | Template::Msgbench
                | Template::Command
        )
    }

    /// The picker's form for this kind: its parameters with sensible defaults, then the knobs.
    pub fn form(self, cpus: usize) -> Form {
        let cpus_s = cpus.to_string();
        let mut fields = vec![Field::text(
            "name",
            "name",
            "",
            "empty: the kind's name (made unique)",
        )];
        match self {
            Template::Chat => fields.extend([
                Field::text(
                    "rooms",
                    "rooms",
                    "10",
                    "20 users per room: 10 rooms = 400 client threads",
                ),
                Field::text("messages", "messages", "100", "messages each user sends"),
                Field::text("runs", "runs", "1", "0 = repeat until stopped"),
            ]),
            Template::Hackbench => fields.extend([
                Field::text(
                    "groups",
                    "groups",
                    "4",
                    "each group: 20 senders and 20 receivers",
                ),
                Field::text(
                    "loops",
                    "loops",
                    "100",
                    "messages each sender sends to each receiver",
                ),
                Field::text("datasize", "data size", "100", "bytes per message"),
                Field::text("fds", "fds", "20", "senders (and receivers) per group"),
                Field::toggle("pipe", "pipes", false, "pipes instead of UNIX sockets"),
                Field::toggle("threads", "threads", false, "threads instead of processes"),
                Field::text("runs", "runs", "1", "0 = repeat until stopped"),
            ]),
            Template::ForkLoad => fields.push(Field::text(
                "forkers",
                "forkers",
                "1",
                "parallel fork loops (contest's default is the CPU count)",
            )),
            Template::RefJob => fields.extend([
                Field::text("jobs", "jobs", "4", "parallel workers, like make -j"),
                Field::text(
                    "work",
                    "work",
                    "1.0",
                    "CPU-seconds of work per worker and run",
                ),
                Field::text("runs", "runs", "0", "0 = repeat until stopped"),
            ]),
            Template::CpuHog => {
                fields.push(Field::text("threads", "threads", "1", "spinning threads"))
            }
            Template::Pingpong(_) => fields.extend([
                Field::text("pairs", "pairs", cpus_s, "empty: one pair per CPU"),
                Field::choice(
                    "pin",
                    "pinning",
                    &["same", "cross", "none"],
                    "same",
                    "same: both of a pair on one CPU; cross: on two",
                ),
                Field::toggle("threads", "threads", false, "threads instead of processes"),
            ]),
            Template::Msgbench => fields.extend([
                Field::text("batches", "batches", "10", "batches of operations"),
                Field::text(
                    "queues",
                    "queues",
                    "",
                    "empty: as many as kernel.msgmni allows",
                ),
            ]),
            Template::Command => fields.push(Field::text(
                "argv",
                "command",
                "",
                "program and arguments; quotes group words",
            )),
        }
        fields.extend(knob_fields(&Knobs::default()));
        if self.finite() {
            fields.push(Field::toggle(
                "loop",
                "loop",
                false,
                "start it again each time it finishes",
            ));
        }
        Form::new(format!("new {}", self.label()), fields)
    }

    /// The workload this form describes, or why not.
    pub fn decl(self, form: &Form, taken: &[String]) -> Result<WorkloadDecl, String> {
        let runs = |f: &Form| -> Result<Option<u32>, String> {
            Ok(match f.number::<u32>("runs", 0..=1_000_000)? {
                0 => None,
                n => Some(n),
            })
        };
        let kind = match self {
            Template::Chat => WorkloadKind::Chat {
                rooms: form.number("rooms", 1..=1000)?,
                messages: form.number("messages", 1..=10_000_000)?,
                runs: runs(form)?,
            },
            Template::Hackbench => WorkloadKind::Hackbench {
                groups: form.number("groups", 1..=1000)?,
                loops: form.number("loops", 1..=100_000_000)?,
                datasize: form.number("datasize", 1..=65_536)?,
                fds: form.number("fds", 1..=1000)?,
                pipe: form.toggle("pipe"),
                threads: form.toggle("threads"),
                runs: Some(form.number::<u32>("runs", 0..=1_000_000)?),
            },
            Template::ForkLoad => WorkloadKind::ForkLoad {
                forkers: Some(form.number("forkers", 1..=1024)?),
            },
            Template::RefJob => WorkloadKind::RefJob {
                jobs: form.number("jobs", 1..=1024)?,
                work: form
                    .text("work")
                    .parse::<f64>()
                    .ok()
                    .filter(|w| *w > 0.0 && *w <= 3600.0)
                    .ok_or_else(|| {
                        format!(
                            "work: `{}` is not a number of seconds from 0 to 3600",
                            form.text("work")
                        )
                    })?,
                runs: Some(form.number::<u32>("runs", 0..=1_000_000)?),
            },
            Template::CpuHog => WorkloadKind::CpuHog {
                threads: form.number("threads", 1..=4096)?,
            },
            Template::Pingpong(ipc) => WorkloadKind::Pingpong {
                ipc,
                pairs: form.optional_number("pairs", 1..=4096)?,
                pin: match form.choice("pin") {
                    "cross" => Pin::Cross,
                    "none" => Pin::None,
                    _ => Pin::Same,
                },
                threads: form.toggle("threads"),
            },
            Template::Msgbench => WorkloadKind::Msgbench {
                batches: form.number("batches", 1..=1_000_000)?,
                queues: form.optional_number("queues", 1..=1_000_000)?,
            },
            Template::Command => {
                let argv = split_words(form.text("argv"))?;
                if argv.is_empty() {
                    return Err("command: type the program to run".into());
                }
                WorkloadKind::Command { argv }
            }
        };
        let knobs = knobs_from(form)?;
        let wanted = form.text("name");
        let base = if wanted.is_empty() {
            match &kind {
                WorkloadKind::Command { argv } => {
                    argv[0].rsplit('/').next().unwrap_or("command").to_string()
                }
                k => k.label().to_string(),
            }
        } else {
            wanted.to_string()
        };
        if !wanted.is_empty() && taken.iter().any(|t| t == wanted) {
            return Err(format!("name: `{wanted}` is already taken"));
        }
        Ok(WorkloadDecl {
            name: unique_name(&base, taken),
            kind,
            knobs,
            start_delay: 0.0,
            duration: None,
        })
    }
}

/// The knob fields, filled from `k`.
pub fn knob_fields(k: &Knobs) -> Vec<Field> {
    let (placement, weight) = match k.placement {
        Placement::Shared => ("shared session", 100),
        Placement::OwnSession => ("own session", 100),
        Placement::Cgroup { weight } => ("own cgroup", weight),
    };
    vec![
        Field::text(
            "nice",
            "nice",
            k.nice.to_string(),
            "-20 (favoured) .. 19 (nicest); weight ×1.25 per step",
        ),
        Field::choice(
            "policy",
            "policy",
            &["other", "batch", "idle", "fifo", "rr"],
            policy_name(k.policy),
            "fifo and rr are real-time: they need root or CAP_SYS_NICE",
        ),
        Field::text(
            "rtprio",
            "rt priority",
            k.rt_priority.max(1).to_string(),
            "1..99, for fifo and rr",
        ),
        Field::text(
            "affinity",
            "CPUs",
            k.affinity
                .as_deref()
                .map(format_cpu_list)
                .unwrap_or_default(),
            "empty: every CPU; else e.g. 0 or 0,1 or 0-3",
        ),
        Field::choice(
            "placement",
            "placement",
            &["shared session", "own session", "own cgroup"],
            placement,
            "shared: one autogroup with the others; own session: its own autogroup",
        ),
        Field::text(
            "weight",
            "cgroup weight",
            weight.to_string(),
            "1..10000 (100 = default), for own cgroup",
        ),
        Field::text(
            "quota",
            "cpu quota %",
            k.cpu_quota.map(|q| q.to_string()).unwrap_or_default(),
            "empty: no limit; else % of one CPU (20 = a fifth), for own cgroup",
        ),
    ]
}

/// Knobs from the knob fields of `form`.
pub fn knobs_from(form: &Form) -> Result<Knobs, String> {
    let policy = match form.choice("policy") {
        "batch" => Policy::Batch,
        "idle" => Policy::Idle,
        "fifo" => Policy::Fifo,
        "rr" => Policy::Rr,
        _ => Policy::Other,
    };
    let rt_priority = if policy.is_realtime() {
        form.number::<u8>("rtprio", 1..=99)?
    } else {
        0
    };
    let affinity = match form.text("affinity") {
        "" => None,
        text => Some(parse_cpu_list(text).map_err(|e| format!("CPUs: {e}"))?),
    };
    let placement = match form.choice("placement") {
        "own session" => Placement::OwnSession,
        "own cgroup" => Placement::Cgroup {
            weight: form.number("weight", 1..=10_000)?,
        },
        _ => Placement::Shared,
    };
    let cpu_quota = match form.text("quota") {
        "" => None,
        _ if !matches!(placement, Placement::Cgroup { .. }) => {
            return Err("cpu quota %: applies only to an own cgroup".into())
        }
        _ => Some(form.number("quota", 1..=crate::supervisor::MAX_CPU_QUOTA)?),
    };
    Ok(Knobs {
        nice: form.number("nice", -20..=19)?,
        policy,
        rt_priority,
        affinity,
        placement,
        cpu_quota,
    })
}

/// `base`, or `base-2`, `base-3`... whichever is not taken.
pub fn unique_name(base: &str, taken: &[String]) -> String {
    if !taken.iter().any(|t| t == base) {
        return base.to_string();
    }
    (2..)
        .map(|n| format!("{base}-{n}"))
        .find(|c| !taken.iter().any(|t| t == c))
        .unwrap()
}

/// Splits a command line into words: blanks separate, single and double quotes group,
/// a backslash escapes the next character. No expansion of any kind.
pub fn split_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') | (None, '\\') => {
                cur.extend(chars.next());
                in_word = true;
            }
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err("command: a quote is not closed".into());
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_builds_with_its_defaults() {
        for t in TEMPLATES {
            let mut form = t.form(2);
            if t == Template::Command {
                form.fields[1].value = super::super::form::Value::Text("make -j4".into());
            }
            let decl = t.decl(&form, &[]).unwrap_or_else(|e| panic!("{t:?}: {e}"));
            assert!(!decl.name.is_empty());
            assert_eq!(decl.knobs, Knobs::default());
        }
    }

    #[test]
    fn names_are_unique() {
        let taken = vec!["chat".to_string(), "chat-2".to_string()];
        assert_eq!(unique_name("chat", &taken), "chat-3");
        assert_eq!(unique_name("hackbench", &taken), "hackbench");
    }

    #[test]
    fn words_split_like_a_shell_without_expansion() {
        assert_eq!(
            split_words(r#"sh -c 'echo $HOME "x"' a\ b"#).unwrap(),
            vec!["sh", "-c", r#"echo $HOME "x""#, "a b"]
        );
        assert!(split_words("echo 'x").is_err());
        assert_eq!(split_words("  ").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn knobs_round_trip_through_the_form() {
        let k = Knobs {
            nice: 5,
            policy: Policy::Rr,
            rt_priority: 10,
            affinity: Some(vec![0, 1]),
            placement: Placement::Cgroup { weight: 300 },
            cpu_quota: None,
        };
        let form = Form::new("k", knob_fields(&k));
        assert_eq!(knobs_from(&form).unwrap(), k);
        let quota = Knobs {
            cpu_quota: Some(20),
            ..k
        };
        let form = Form::new("k", knob_fields(&quota));
        assert_eq!(knobs_from(&form).unwrap(), quota);
    }
}
