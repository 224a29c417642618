//! Scenario files: every preset parses, and every kind of bad input is one clear message that
//! points at file:line:column.

use schedlab::knobs::Placement;
use schedlab::scenario::{Scenario, ScenarioError, PRESETS};
use schedlab::workload::pingpong::{IpcKind, Pin};
use schedlab::workload::registry::WorkloadKind;

fn err(src: &str) -> ScenarioError {
    Scenario::from_toml(src, "bad.toml").expect_err("must not parse")
}

/// The scenario text is refused at (line, column); the error, for what else to check.
fn refused_at(toml: &str, at: (usize, usize)) -> ScenarioError {
    let e = err(toml);
    assert_eq!((e.line, e.column), at, "{e}");
    e
}

/// The scenario text is refused at (line, column) with a message that says `says`.
fn assert_refused(toml: &str, at: (usize, usize), says: &str) {
    let e = refused_at(toml, at);
    assert!(e.message.contains(says), "{e}");
}

#[test]
fn every_preset_file_parses_and_is_listed() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert_eq!(
        files.len(),
        PRESETS.len(),
        "every preset file is in PRESETS"
    );
    for path in files {
        let s = Scenario::load(&path).unwrap_or_else(|e| panic!("{e:#}"));
        let stem = path.file_stem().unwrap().to_str().unwrap();
        assert_eq!(s.name, stem, "a preset's name is its file name");
        assert!(!s.workloads.is_empty());
        assert!(PRESETS.iter().any(|(n, _)| *n == stem));
    }
}

#[test]
fn presets_say_what_the_issue_asks_for() {
    let get = |n: &str| {
        let src = PRESETS.iter().find(|(k, _)| *k == n).unwrap().1;
        Scenario::from_toml(src, n).unwrap()
    };
    let chat = get("chat-30x1000");
    assert_eq!(
        chat.workloads[0].kind,
        WorkloadKind::Chat {
            rooms: 30,
            messages: 1000,
            runs: Some(1)
        }
    );
    assert_eq!(chat.duration, None, "a chat run ends by itself");
    let own = get("fork-load-own-session");
    assert_eq!(own.workloads[1].knobs.placement, Placement::OwnSession);
    let pp = get("sysv-pingpong-per-cpu");
    assert_eq!(
        pp.workloads[0].kind,
        WorkloadKind::Pingpong {
            ipc: IpcKind::Msg,
            pairs: None,
            pin: Pin::Same,
            threads: false
        }
    );
    let mix = get("mix");
    assert!(mix.workloads.len() >= 3);
    assert_eq!(mix.workloads[1].knobs.nice, 5);
    assert_eq!(mix.workloads[3].start_delay, 5.0);
    assert_eq!(mix.workloads[3].duration, Some(10.0));
}

#[test]
fn defaults_fill_every_optional_parameter() {
    let s = Scenario::from_toml(
        "[[workload]]\nkind = \"hackbench\"\n[[workload]]\nkind = \"hackbench\"\n",
        "dir/min.toml",
    )
    .unwrap();
    assert_eq!(s.name, "min");
    assert_eq!(s.interval_ms, 500);
    assert_eq!(s.duration, None);
    assert_eq!(s.workloads[0].name, "hackbench");
    assert_eq!(
        s.workloads[1].name, "hackbench-2",
        "unnamed repeats are numbered"
    );
    assert_eq!(
        s.workloads[0].kind,
        WorkloadKind::Hackbench {
            groups: 10,
            loops: 100,
            datasize: 100,
            fds: 20,
            pipe: false,
            threads: false,
            runs: None
        }
    );
    assert_eq!(s.workloads[0].start_delay, 0.0);
}

#[test]
fn knobs_parse() {
    let s = Scenario::from_toml(
        r#"
[[workload]]
kind = "cpu-hog"
threads = 3
nice = -5
policy = "fifo"
rt_priority = 10
affinity = [0, 1]
placement = "cgroup"
cgroup_weight = 200
"#,
        "k.toml",
    )
    .unwrap();
    let k = &s.workloads[0].knobs;
    assert_eq!(s.workloads[0].kind, WorkloadKind::CpuHog { threads: 3 });
    assert_eq!(k.nice, -5);
    assert_eq!(k.rt_priority, 10);
    assert_eq!(k.affinity, Some(vec![0, 1]));
    assert_eq!(k.placement, Placement::Cgroup { weight: 200 });
}

#[test]
fn unknown_key_points_at_it() {
    assert_refused(
        "[[workload]]\nkind = \"fork-load\"\nforker = 2\n",
        (3, 1),
        "unknown key `forker` (did you mean `forkers`?)",
    );
    let e = refused_at("nmae = \"x\"\n[[workload]]\nkind = \"fork-load\"\n", (1, 1));
    assert!(e.to_string().starts_with("bad.toml:1:1: "), "{e}");
}

#[test]
fn parameter_of_another_kind_is_refused() {
    assert_refused(
        "[[workload]]\nkind = \"fork-load\"\njobs = 2\n",
        (3, 8),
        "`jobs` does not apply to kind fork-load (it takes: forkers)",
    );
}

#[test]
fn wrong_type_points_at_the_value() {
    assert_refused(
        "[[workload]]\nkind = \"chat\"\nrooms = \"thirty\"\n",
        (3, 9),
        "integer",
    );
    let e = err("[[workload]]\nkind = \"hackbench\"\nthreads = 4\n");
    assert!(e.message.contains("true or false"), "{e}");
}

#[test]
fn negative_duration_is_refused() {
    assert_refused(
        "duration = -5\n[[workload]]\nkind = \"fork-load\"\n",
        (1, 12),
        "positive number of seconds",
    );
    refused_at(
        "[[workload]]\nkind = \"fork-load\"\nstart_delay = -1.5\n",
        (3, 15),
    );
}

#[test]
fn unknown_kind_lists_the_known_ones() {
    assert_refused(
        "[[workload]]\nkind = \"forkload\"\n",
        (2, 8),
        "unknown workload kind `forkload`, expected one of: chat, hackbench",
    );
}

#[test]
fn out_of_range_values_are_refused() {
    let e = err("interval_ms = 50\n[[workload]]\nkind = \"fork-load\"\n");
    assert!(
        e.message
            .contains("interval_ms must be 100..=10000, found 50"),
        "{e}"
    );
    let e = err("[[workload]]\nkind = \"fork-load\"\nnice = 20\n");
    assert!(e.message.contains("nice must be -20..=19"), "{e}");
    let e = err("[[workload]]\nkind = \"chat\"\nrooms = 0\n");
    assert!(e.message.contains("rooms must be at least 1"), "{e}");
    let e = refused_at("[[workload]]\nkind = \"chat\"\nmessages = 40000\n", (3, 12));
    assert!(
        e.message.contains("messages must be between 1 and 32767"),
        "{e}"
    );
    assert!(e.message.contains("semaphore"), "{e}");
    let e = err("[[workload]]\nkind = \"cpu-hog\"\nrt_priority = 5\n");
    assert!(e.message.contains("only with policy"), "{e}");
    refused_at(
        "[[workload]]\nkind = \"cpu-hog\"\naffinity = [0, -1]\n",
        (3, 16),
    );
}

#[test]
fn structural_mistakes_are_clear() {
    assert!(err("name = \"x\"\n")
        .message
        .contains("at least one [[workload]]"));
    let e = err("[[workload]]\nname = \"a\"\nkind = \"cpu-hog\"\n[[workload]]\nname = \"a\"\nkind = \"cpu-hog\"\n");
    assert_eq!(e.line, 5, "{e}");
    assert!(e.message.contains("used twice"), "{e}");
    let e = err("[[workload]]\nkind = \"command\"\n");
    assert!(e.message.contains("argv"), "{e}");
    let e = err("[[workload]\nkind = 1");
    assert_eq!(e.line, 1, "{e}");
}

#[test]
fn loading_a_missing_file_names_it() {
    let e = Scenario::load(std::path::Path::new("/nonexistent/s.toml")).unwrap_err();
    assert!(format!("{e:#}").contains("cannot read scenario /nonexistent/s.toml"));
}

#[test]
fn presets_open_by_name_wherever_a_scenario_is_taken() {
    for (name, _) in PRESETS {
        let (s, origin) = Scenario::open(name).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert_eq!(s.name, *name);
        assert_eq!(origin, Some(format!("assets/scenarios/{name}.toml")));
        let (s, _) = Scenario::open(&format!("{name}.toml")).unwrap();
        assert_eq!(s.name, *name);
    }
    let e = Scenario::open("no-such-preset").unwrap_err().to_string();
    assert!(e.contains("presets: contest-fork-load"), "{e}");
}

/// `schedlab tui chat-30x1000` finds the preset as `run` does: without a terminal it gets as
/// far as asking for one, where a missing scenario would have been refused first.
#[test]
fn tui_opens_a_preset_by_name() {
    let tui = |arg: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .args(["tui", arg])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = tui("chat-30x1000");
    assert!(err.contains("the dashboard needs a terminal"), "{err}");
    let err = tui("no-such-preset");
    assert!(err.contains("no preset of that name"), "{err}");
}
