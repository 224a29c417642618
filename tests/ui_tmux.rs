//! The real dashboard, driven in tmux as a person would: start `schedlab`, look at the
//! screen, add a workload with keys, quit; then the same ended by SIGTERM and by SIGKILL.
//! After each: the shell prompt is back, the terminal is in line mode with echo, and no
//! process the dashboard started is left.
//!
//! Every process of a run carries a unique environment tag, so "nothing left" is checked
//! exactly, on a machine where other schedlab runs may be going on. The tmux server has its
//! own socket and is killed at the end, pass or fail.

mod common;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_schedlab");
const PROMPT: &str = "e2e$ ";

struct Tmux {
    socket: String,
    tag: String,
}

impl Tmux {
    /// A tmux server of our own with an 80x24 window running a plain bash.
    fn start(name: &str) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            eprintln!("SKIPPED {name}: tmux is not installed; this end-to-end test needs it");
            return None;
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let t = Tmux {
            socket: format!("schedlab-e2e-{}-{name}-{nanos}", std::process::id()),
            tag: format!("{}-{name}-{nanos}", std::process::id()),
        };
        let shell = format!("env -i PATH=/usr/bin:/bin TERM=xterm-256color HOME=/tmp HISTFILE=/dev/null PS1='{PROMPT}' bash --norc --noprofile");
        let ok = Command::new("tmux")
            .args([
                "-L",
                &t.socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "80",
                "-y",
                "24",
                "-s",
                "e2e",
                &shell,
            ])
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux new-session failed");
        t.wait_for("the shell prompt", Duration::from_secs(10), |s| {
            s.contains(PROMPT.trim_end())
        });
        Some(t)
    }

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            let ok = Command::new("tmux")
                .args(["-L", &self.socket, "send-keys", "-t", "e2e", k])
                .status()
                .unwrap()
                .success();
            assert!(ok, "send-keys {k}");
            std::thread::sleep(Duration::from_millis(60));
        }
    }

    /// A directory for the labs this test serves, and the tag they carry: this test's, kept
    /// apart from its dashboard's.
    fn served_place(&self) -> (tempfile::TempDir, String) {
        (tempfile::tempdir().unwrap(), format!("{}-served", self.tag))
    }

    /// Runs `schedlab tui ARGS` at the prompt, tagged as this test's.
    fn run_tui(&self, args: &str) {
        self.type_text(&format!("SCHEDLAB_E2E_TAG={} {BIN} tui {args}", self.tag));
        self.keys(&["Enter"]);
    }

    fn type_text(&self, text: &str) {
        let ok = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "e2e", "-l", text])
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-t", "e2e"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn wait_for(&self, what: &str, timeout: Duration, ok: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}; the screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Starts the dashboard in the shell, tagged.
    fn start_dashboard(&self) {
        self.start_dashboard_with("");
    }

    fn start_dashboard_with(&self, env: &str) {
        self.type_text(&format!("{env} SCHEDLAB_E2E_TAG={} {BIN}", self.tag));
        self.keys(&["Enter"]);
        self.wait_for("the dashboard", Duration::from_secs(20), |s| {
            s.contains("Throughput") && s.contains("CPU %") && s.contains("Switches/s")
        });
    }

    /// Processes carrying our tag: the dashboard, its workloads, their children.
    fn tagged(&self) -> Vec<(u32, String)> {
        tagged_with(&self.tag)
    }

    /// The dashboard itself: the tagged process run with no arguments (not its terminal
    /// guardian, its parent with the same command line and its own name, `ttyguard`).
    fn dashboard_pid(&self) -> u32 {
        self.tagged()
            .into_iter()
            .find(|(pid, cmd)| cmd.trim() == BIN && common::comm(*pid) == "schedlab")
            .map(|(pid, _)| pid)
            .expect("no dashboard process")
    }

    /// The dashboard started with this command line (not its terminal guardian).
    fn dashboard_pid_of(&self, cmdline: &str) -> u32 {
        self.tagged()
            .into_iter()
            .find(|(pid, cmd)| cmd.trim() == cmdline && common::comm(*pid) == "schedlab")
            .map(|(pid, _)| pid)
            .expect("no dashboard process")
    }

    /// Quits with `keys`; then as [`Tmux::assert_clean_exit`], `how` naming the quit.
    fn quit_cleanly(&self, keys: &[&str], how: &str) {
        self.keys(keys);
        self.assert_clean_exit(how);
    }

    /// After the dashboard ended: prompt back, terminal sane, nothing left.
    fn assert_clean_exit(&self, how: &str) {
        self.wait_for(
            &format!("the prompt after {how}"),
            Duration::from_secs(15),
            |s| last_line(s).starts_with(PROMPT.trim_end()),
        );
        // The prompt is printed when the dashboard's process is gone; its workloads get
        // a moment to go too (SIGKILL: they learn of it from their lifeline pipe).
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut left = self.tagged();
        while !left.is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
            left = self.tagged();
        }
        assert!(left.is_empty(), "after {how}, still running: {left:?}");
        self.type_text("stty -a");
        self.keys(&["Enter"]);
        let s = self.wait_for("stty's answer", Duration::from_secs(10), |s| {
            s.contains("icanon") && last_line(s).starts_with(PROMPT.trim_end())
        });
        let words: Vec<&str> = s.split_whitespace().collect();
        for mode in ["icanon", "echo", "isig", "icrnl"] {
            assert!(
                words.contains(&mode),
                "after {how}, the terminal lacks {mode}:\n{s}"
            );
            assert!(
                !words.contains(&format!("-{mode}").as_str()),
                "after {how}: -{mode}:\n{s}"
            );
        }
        // Main screen, no mouse reporting, cursor shown: as tmux itself sees the pane.
        let flags = self.display("#{alternate_on} #{mouse_any_flag} #{mouse_button_flag} #{mouse_standard_flag} #{mouse_sgr_flag} #{cursor_flag}");
        assert_eq!(
            flags.trim(),
            "0 0 0 0 0 1",
            "after {how}: alternate screen, mouse x4, cursor"
        );
    }

    fn display(&self, format: &str) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "display", "-p", "-t", "e2e", format])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // Pass or fail: nothing of ours survives the test.
        for (pid, _) in self.tagged() {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
        common::remove_tmux_socket(&self.socket);
    }
}

/// Processes carrying the environment tag `SCHEDLAB_E2E_TAG=tag`.
fn tagged_with(tag: &str) -> Vec<(u32, String)> {
    let needle = format!("SCHEDLAB_E2E_TAG={tag}");
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if env.split(|b| *b == 0).any(|v| v == needle.as_bytes()) {
            let state = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            if state
                .rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
            {
                continue; // a zombie holds nothing and is its parent's to reap
            }
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            found.push((pid, String::from_utf8_lossy(&cmd).replace('\0', " ")));
        }
    }
    found
}

fn last_line(s: &str) -> &str {
    s.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("")
}

/// A table row's fields, by the workload's name.
fn row<'a>(screen: &'a str, name: &str) -> Option<Vec<&'a str>> {
    screen.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 6 && f[0] == "■" && f[1] == name).then_some(f)
    })
}

/// Whether this build has a working subcommand (the load generators land over time).
fn has_subcommand(args: &[&str]) -> bool {
    Command::new(BIN)
        .args(args)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[test]
fn quit_with_q_after_adding_a_chat_workload() {
    let Some(t) = Tmux::start("q") else { return };
    t.start_dashboard();
    let loads_built = has_subcommand(&["fork-load", "--forkers", "1", "--help"])
        && has_subcommand(&["ref-job", "-j", "4", "--work", "1", "--runs", "0", "--help"]);
    if loads_built {
        // Both default workloads, running, with CPU received and tasks.
        let s = t.wait_for(
            "both default workloads with figures",
            Duration::from_secs(20),
            |s| {
                ["ref-job", "fork_load"].iter().all(|n| {
                    row(s, n).is_some_and(|f| {
                        f[2] == "running"
                            && f[3].parse::<u32>().unwrap_or(0) > 0
                            && f[5].parse::<f64>().unwrap_or(0.0) > 0.0
                    })
                })
            },
        );
        eprintln!("{s}");
        // Where their tasks ran, from the real kernel: both CPUs' lines, fork_load's
        // migrations; then fork_load's fork cycles in the latency panel; then the charts.
        t.keys(&["c"]);
        let s = t.wait_for("the per-CPU view", Duration::from_secs(10), |s| {
            s.contains("cpu0") && s.contains("moves between CPUs a second: ■")
        });
        eprintln!("{s}");
        t.keys(&["L"]);
        let s = t.wait_for("fork_load's latency", Duration::from_secs(10), |s| {
            s.contains("Latency") && s.contains("■fork_load fork cycle: p50 ")
        });
        eprintln!("{s}");
        t.keys(&["L"]);
        t.wait_for("the charts", Duration::from_secs(10), |s| {
            s.contains("Throughput")
        });
    } else {
        let s = t.screen();
        assert!(
            row(&s, "ref-job").is_some() && row(&s, "fork_load").is_some(),
            "{s}"
        );
        eprintln!(
            "NOT CHECKED: non-zero figures of the default workloads: `schedlab fork-load` and \
             `schedlab ref-job` are not in this build yet (their rows are on screen):\n{s}"
        );
    }

    // The picker's first entry is chat: one run of ten rooms of 100 messages.
    t.keys(&["a", "1", "Enter"]);
    let s = t.wait_for("the chat workload", Duration::from_secs(10), |s| {
        row(s, "chat").is_some()
    });
    if has_subcommand(&["chat-bench", "10", "100", "--help"]) {
        // Seen with messages flowing, or already done (exit 0) if its run was short.
        t.wait_for(
            "chat running with messages, or done",
            Duration::from_secs(30),
            |s| {
                row(s, "chat").is_some_and(|f| {
                    (f[2] == "running" && f[4] != "0" && f[4] != "-") || f[2] == "done"
                })
            },
        );
    } else {
        eprintln!(
            "NOT CHECKED: chat's figures: `schedlab chat-bench` is not in this build yet:\n{s}"
        );
    }

    t.quit_cleanly(&["q"], "q");
}

/// The nice value of a tagged process whose command line holds `what`.
fn nice_of(t: &Tmux, what: &str) -> Option<i32> {
    let (pid, _) = t.tagged().into_iter().find(|(_, cmd)| cmd.contains(what))?;
    nice_of_pid(pid)
}

/// The nice value of process `pid`, from its stat.
fn nice_of_pid(pid: u32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 19, the 17th after the command's closing parenthesis.
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(16)?
        .parse()
        .ok()
}

/// A workload added from the picker is the one the next key changes: `]` renices the new
/// cpu-hog, not the ref-job that was selected before.
#[test]
fn a_workload_added_from_the_picker_is_the_one_reniced() {
    let Some(t) = Tmux::start("add") else { return };
    t.start_dashboard();
    t.keys(&["a", "5", "Enter"]);
    t.wait_for("the cpu-hog workload", Duration::from_secs(10), |s| {
        row(s, "cpu-hog").is_some()
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while nice_of(&t, "cpu-hog --threads").is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    t.keys(&["]"]);
    t.wait_for(
        "the new knobs in its details",
        Duration::from_secs(10),
        |s| s.contains("■ cpu-hog │ schedlab cpu-hog --threads 1 │ nice 1"),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while nice_of(&t, "cpu-hog --threads") != Some(1) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(nice_of(&t, "cpu-hog --threads"), Some(1), "{}", t.screen());
    assert_eq!(nice_of(&t, "ref-job -j"), Some(0), "{}", t.screen());
    t.quit_cleanly(&["q"], "q");
}

#[test]
fn sigterm_restores_the_terminal_and_stops_every_workload() {
    signal_the_dashboard("term", Signal::SIGTERM);
}

#[test]
fn sighup_restores_the_terminal_and_stops_every_workload() {
    signal_the_dashboard("hup", Signal::SIGHUP);
}

/// Starts the dashboard, sends it `sig` and checks the exit leaves a sane terminal and nothing
/// running.
fn signal_the_dashboard(tag: &str, sig: Signal) {
    let Some(t) = Tmux::start(tag) else { return };
    t.start_dashboard();
    let pid = t.dashboard_pid();
    let _ = kill(Pid::from_raw(pid as i32), sig);
    t.assert_clean_exit(sig.as_str());
}

/// A panic (forced by a failpoint that only debug builds have) gives the terminal back,
/// stops every workload and says what happened.
#[test]
fn a_panic_restores_the_terminal_and_stops_every_workload() {
    if !cfg!(debug_assertions) {
        eprintln!("SKIPPED a_panic_...: the failpoint exists only in debug builds");
        return;
    }
    let Some(t) = Tmux::start("panic") else {
        return;
    };
    t.start_dashboard_with("SCHEDLAB_FAILPOINT_UI_PANIC=1");
    t.assert_clean_exit("a panic");
    let s = t.screen();
    assert!(
        s.contains("failpoint SCHEDLAB_FAILPOINT_UI_PANIC"),
        "no panic message:\n{s}"
    );
}

#[test]
fn sigkill_leaves_no_workload_and_a_sane_terminal() {
    let Some(t) = Tmux::start("kill") else { return };
    // A guardian slow to restore (debug builds) must still come before the shell's prompt:
    // one forked by the dashboard raced the prompt, and CI once lost it to the alternate screen.
    t.start_dashboard_with(if cfg!(debug_assertions) {
        "SCHEDLAB_FAILPOINT_SLOW_TTYGUARD=1"
    } else {
        ""
    });
    // A workload of its own, so there is something to outlive the dashboard if lifelines fail.
    t.keys(&["a", "0", "Tab"]);
    t.type_text("sleep 300");
    t.keys(&["Enter"]);
    t.wait_for("the sleep workload", Duration::from_secs(10), |s| {
        row(s, "sleep").is_some_and(|f| f[2] == "running")
    });
    let pid = t.dashboard_pid();
    let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
    t.assert_clean_exit("SIGKILL");
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists() || {
            let st = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            st.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        }
    );
}

/// Ctrl-C typed at the dashboard (issue #8's exit-path table): the terminal comes back sane
/// and every workload stops, as with `q`.
#[test]
fn ctrl_c_restores_the_terminal_and_stops_every_workload() {
    let Some(t) = Tmux::start("ctrlc") else {
        return;
    };
    t.start_dashboard();
    t.quit_cleanly(&["C-c"], "Ctrl-C");
}

/// A workload killed from outside while the dashboard runs: the dashboard carries on, and
/// `q` still ends everything cleanly.
#[test]
fn a_crashed_workload_leaves_the_dashboard_usable_and_nothing_behind() {
    let Some(t) = Tmux::start("crash") else {
        return;
    };
    t.start_dashboard();
    let dash = t.dashboard_pid();
    let deadline = Instant::now() + Duration::from_secs(10);
    let victim = loop {
        let w = t
            .tagged()
            .into_iter()
            .map(|(pid, _)| pid)
            .find(|&pid| pid != dash && common::comm(pid) != "ttyguard");
        if let Some(w) = w {
            break w;
        }
        assert!(Instant::now() < deadline, "no workload started");
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = kill(Pid::from_raw(victim as i32), Signal::SIGKILL);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        std::path::Path::new(&format!("/proc/{dash}")).exists(),
        "the dashboard died with its workload"
    );
    t.quit_cleanly(&["q"], "q after a workload crashed");
}

/// `schedlab tui --attach pid:P` as a person would: the process schedlab did not start is a
/// row, `]` renices it, and SIGKILL of the dashboard puts its nice back within 3 s (the
/// restorer waiting on its pipe: src/sys/exit/undo.rs), never signalling it.
#[test]
fn sigkill_of_a_dashboard_that_reniced_an_attached_process_puts_its_nice_back() {
    let Some(t) = Tmux::start("attach") else {
        return;
    };
    // Outside schedlab and untagged: in a session of its own, started by this test.
    let mut outside = Command::new("setsid")
        .args(["sh", "-c", "while :; do sleep 0.05; done"])
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = outside.id();
    let name = format!("pid:{pid}");
    t.run_tui(&format!("--attach {name}"));
    t.wait_for("the attached row", Duration::from_secs(20), |s| {
        row(s, &name).is_some()
    });
    // The rows: ref-job, fork_load, then the attached one.
    t.keys(&["Down", "Down"]);
    t.wait_for("its details", Duration::from_secs(10), |s| {
        s.contains(&format!("■ {name}"))
    });
    t.keys(&["]"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while nice_of_pid(pid) != Some(1) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(nice_of_pid(pid), Some(1), "{}", t.screen());
    let dashboard = t.dashboard_pid_of(&format!("{BIN} tui --attach {name}"));
    let _ = kill(Pid::from_raw(dashboard as i32), Signal::SIGKILL);
    let killed = Instant::now();
    while nice_of_pid(pid) != Some(0) && killed.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let back = killed.elapsed();
    assert_eq!(
        nice_of_pid(pid),
        Some(0),
        "nice not put back 3 s after SIGKILL"
    );
    eprintln!(
        "nice put back {:.0} ms after SIGKILL",
        back.as_secs_f64() * 1e3
    );
    t.assert_clean_exit("SIGKILL");
    // Still there, and never stopped or killed by schedlab: running, asleep, or in the
    // uninterruptible wait a shell's fork of `sleep` passes through (a CI-like run caught it
    // in `D`), not stopped (`T`) nor a zombie.
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let state = state.rsplit(')').next().unwrap().split_whitespace().next();
    assert!(matches!(state, Some("S" | "R" | "D")), "{state:?}");
    let _ = nix::sys::signal::killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
    let _ = outside.wait();
}

/// `E` on the fork loop's row: as root, the kernel's events for 3 s in a box, with the command
/// that runs the counterfactual variants; the tracefs instance is gone once the box shows.
/// Without root, one line says why not.
#[test]
fn e_shows_the_kernels_events_for_the_selected_row() {
    let Some(t) = Tmux::start("evidence") else {
        return;
    };
    t.start_dashboard();
    t.wait_for("the fork loop's row", Duration::from_secs(10), |s| {
        row(s, "fork_load").is_some()
    });
    t.keys(&["j", "E"]);
    // SAFETY: geteuid takes nothing and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        t.wait_for("why not", Duration::from_secs(10), |s| {
            s.contains("cannot be recorded here")
        });
    } else {
        let s = t.wait_for("the events' box", Duration::from_secs(15), |s| {
            s.contains("the kernel's events") && s.contains("schedlab explain contest-fork-load")
        });
        assert!(s.contains("fork_load: preempted"), "{s}");
        let left = std::fs::read_dir("/sys/kernel/tracing/instances")
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with("schedlab-"))
                    .count()
            })
            .unwrap_or(0);
        assert_eq!(left, 0, "a tracefs instance left");
        t.keys(&["Escape"]);
    }
    t.quit_cleanly(&["q"], "q");
}

#[test]
fn a_served_lab_is_watched_from_another_dashboard_read_only() {
    let Some(t) = Tmux::start("connect") else {
        return;
    };
    // The served lab: a process of its own, tagged apart, as another machine's would be.
    let (dir, served_tag) = t.served_place();
    let (mut serve, addr) = serve_lab(dir.path(), &served_tag, "served-hogs", "far_hog");
    t.run_tui(&format!("--connect {addr}"));
    let at = format!("@{addr}");
    t.wait_for("the served lab's row", Duration::from_secs(20), |s| {
        row(s, "far_hog").is_some() && s.contains(&at)
    });
    // A key that would stop the workload is refused in words; the lab goes on.
    t.keys(&["s"]);
    t.wait_for("the refusal", Duration::from_secs(10), |s| {
        s.contains("read-only: it was served")
    });
    t.quit_cleanly(&["q"], "q");
    // Quitting the watching dashboard stopped nothing of the served lab.
    assert!(
        serve.0.try_wait().unwrap().is_none(),
        "the served lab ended with its client"
    );
    assert!(
        tagged_with(&served_tag).len() >= 2,
        "{:?}",
        tagged_with(&served_tag)
    );
    kill(Pid::from_raw(serve.0.id() as i32), Signal::SIGTERM).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while serve.0.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        serve.0.try_wait().unwrap().is_some(),
        "serve outlived SIGTERM"
    );
    let left =
        common::wait::until_none_left(Duration::from_secs(10), Duration::from_millis(100), || {
            tagged_with(&served_tag)
        });
    assert_eq!(left, Ok(()), "the served lab's workloads outlived it");
}

/// A child process SIGTERMed and reaped when dropped.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = kill(Pid::from_raw(self.0.id() as i32), Signal::SIGTERM);
            let _ = self.0.wait();
        }
    }
}

/// A lab served by `schedlab serve` on loopback, with one CPU hog named `hog`, tagged `tag`:
/// the process (killed when dropped) and its address.
fn serve_lab(dir: &Path, tag: &str, name: &str, hog: &str) -> (KillOnDrop, String) {
    let scenario = common::scenario_file(
        dir,
        &format!("{name}.toml"),
        &format!(
            "name = \"{name}\"\n[[workload]]\nname = \"{hog}\"\nkind = \"cpu-hog\"\nthreads = 1\n"
        ),
    );
    let child = Command::new(BIN)
        .args(["serve", scenario.to_str().unwrap(), "--addr", "127.0.0.1:0"])
        .env("SCHEDLAB_E2E_TAG", tag)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Pass or fail, the served lab goes (its workloads with it: SIGTERM runs its exit hook).
    let mut serve = KillOnDrop(child);
    let first = common::child::first_line(serve.0.stdout.take().unwrap());
    let addr = first
        .trim()
        .strip_prefix("serving on ")
        .expect("the address line")
        .to_owned();
    (serve, addr)
}

#[test]
fn two_served_labs_side_by_side() {
    let Some(t) = Tmux::start("pair") else {
        return;
    };
    let (dir, tag) = t.served_place();
    let (_a, a) = serve_lab(dir.path(), &tag, "base", "hog_one");
    let (_b, b) = serve_lab(dir.path(), &tag, "patched", "hog_two");
    t.run_tui(&format!("--connect {a} --connect {b}"));
    // A row's words after its name: A's got, due, ratio (and verdict), B's...
    let figures = |s: &str, name: &str| -> Vec<String> {
        s.lines()
            .find_map(|l| l.split_once(&format!("■ {name}")))
            .map(|(_, rest)| rest.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default()
    };
    let s = t.wait_for("both labs' rows", Duration::from_secs(20), |s| {
        s.contains("A: base on")
            && s.contains("B: patched on")
            && figures(s, "hog_one")
                .first()
                .is_some_and(|w| w.parse::<f64>().is_ok())
            && figures(s, "hog_two").first().is_some_and(|w| w == "-")
    });
    // Each row has its own lab's figures and a dash where the other lab has no such workload.
    let one = figures(&s, "hog_one");
    assert!(one.iter().any(|w| w == "-"), "{s}");
    t.quit_cleanly(&["q"], "q");
    // Both labs go on without their watcher.
    assert!(tagged_with(&tag).len() >= 4, "{:?}", tagged_with(&tag));
}
