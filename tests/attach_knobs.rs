//! Knobs on attached workloads, on the real kernel (root): a CPU hog started outside schedlab,
//! in a session of its own and with a nice value of its own, is attached by pid and reniced
//! pinned and given SCHED_BATCH through the Lab; letting it go puts its nice and affinity back, and so does
//! every way the process that changed it can end, SIGKILL included (the undo journal's
//! restorer, src/sys/exit/undo.rs). The hog is never signalled (it traps every catchable
//! signal into a file; SIGSTOP shows as a stopped state), and nothing is left behind: no
//! journal file, no restorer.
//!
//! Run with the machine lock held:
//! `flock -x /tmp/schedlab-machine.lock cargo test --test attach_knobs`.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use schedlab::engine::lab::Lab;
use schedlab::engine::Backend;
use schedlab::knobs::{Knobs, Placement, Policy};
use schedlab::probe::Selector;
use schedlab::scenario::WorkloadDecl;

mod common;

static MACHINE: Mutex<()> = Mutex::new(());

fn machine() -> std::sync::MutexGuard<'static, ()> {
    MACHINE.lock().unwrap_or_else(|p| p.into_inner())
}

/// None when the test can run; else why it skips.
fn skip() -> Option<&'static str> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root: lowering nice back and changing another user's tasks needs it");
    }
    None
}

/// The machine's turn, as root; None, the test saying why it skips, when not root.
fn turn() -> Option<std::sync::MutexGuard<'static, ()>> {
    if let Some(why) = skip() {
        eprintln!("skipped: {why}");
        return None;
    }
    Some(machine())
}

/// The machine's turn and a hog started (tagged `tag`), as root; None when not root.
fn hog_turn(tag: &str) -> Option<(std::sync::MutexGuard<'static, ()>, Hog)> {
    let m = turn()?;
    Some((m, Hog::start(tag)))
}

const TRAPS: &str = "HUP INT QUIT TERM USR1 USR2 ALRM PIPE";
/// The hog's own nice value, set before schedlab sees it: what must come back.
const OWN_NICE: i32 = 3;

/// A CPU hog started outside schedlab: `setsid nice -n 3 sh -c 'traps; while :; do :; done'`,
/// leader of a session of its own. Killed with its process group in Drop.
struct Hog {
    pid: u32,
    child: std::process::Child,
    dir: PathBuf,
}

impl Hog {
    fn start(tag: &str) -> Hog {
        Hog::running(tag, |_| "while :; do :; done".into())
    }

    /// The same with another body (given the hog's scratch directory).
    fn running(tag: &str, body: impl Fn(&std::path::Path) -> String) -> Hog {
        let dir = std::env::temp_dir().join(format!("schedlab-knobs-{}-{tag}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = format!(
            "for s in {TRAPS}; do trap \"echo $s >> {}\" $s; done; {}",
            dir.join("trapped").display(),
            body(&dir)
        );
        let child = Command::new("setsid")
            .args([
                "nice",
                "-n",
                &OWN_NICE.to_string(),
                "/bin/sh",
                "-c",
                &script,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("setsid");
        let hog = Hog {
            pid: child.id(),
            child,
            dir,
        };
        common::wait::until(
            Duration::from_secs(5),
            Duration::from_millis(10),
            || match stat(hog.pid) {
                Some(s) if s.sid == hog.pid && s.comm == "sh" => Ok(()),
                s => Err(s),
            },
        )
        .unwrap_or_else(|s| panic!("{tag}: hog not in a session of its own: {s:?}"));
        hog
    }

    fn nice(&self) -> i32 {
        stat(self.pid).expect("hog alive").nice
    }

    /// Alive, running or runnable (not stopped), and no catchable signal arrived.
    fn never_signalled(&self) {
        let s = stat(self.pid).expect("the hog is gone");
        assert!(
            matches!(s.state, 'R' | 'S'),
            "hog {} in state {}",
            self.pid,
            s.state
        );
        let trapped = std::fs::read_to_string(self.dir.join("trapped")).unwrap_or_default();
        assert!(
            trapped.is_empty(),
            "hog {} got {}",
            self.pid,
            trapped.trim()
        );
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        common::child::kill_group(&mut self.child);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[derive(Debug)]
struct Stat {
    state: char,
    sid: u32,
    nice: i32,
    /// SCHED_OTHER 0, SCHED_BATCH 3, ...
    policy: u32,
    comm: String,
}

fn stat(pid: u32) -> Option<Stat> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = s.find('(')?;
    let close = s.rfind(')')?;
    let f: Vec<&str> = s[close + 2..].split(' ').collect();
    Some(Stat {
        state: f[0].chars().next()?,
        sid: f[3].parse().ok()?,
        nice: f[16].parse().ok()?,
        policy: f[38].parse().ok()?,
        comm: s[open + 1..close].to_string(),
    })
}

/// The CPUs a task may run on, as /proc/PID/status writes them ("0-1").
fn cpus_allowed(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

/// Processes whose command line names the knob restorer and `journal`.
fn restorers_of(journal: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd);
        if cmd.contains("__restore-knobs") && cmd.contains(journal) {
            out.push(pid);
        }
    }
    out
}

fn attach_decl(name: &str, pid: u32, knobs: Knobs) -> WorkloadDecl {
    WorkloadDecl {
        name: name.into(),
        kind: schedlab::workload::registry::WorkloadKind::attach(&Selector::Pid(pid)),
        knobs,
        start_delay: 0.0,
        duration: None,
    }
}

/// A Lab ticking every `every_ms` with `pid` attached as `name`, unchanged, ticked once: the
/// Lab and the workload's id.
fn attached_in_a_lab(every_ms: u64, name: &str, pid: u32) -> (Lab, u32) {
    let mut lab = Lab::new(Duration::from_millis(every_ms)).unwrap();
    let id = lab.add(attach_decl(name, pid, Knobs::default())).unwrap();
    lab.tick();
    (lab, id)
}

/// Renice and pin through the Lab; stop (let go) puts them back; so does a restart's detach,
/// remove and dropping the Lab. The journal and the restorer exist only while something is
/// changed.
#[test]
fn knobs_on_an_attached_hog_are_put_back_when_it_is_let_go() {
    let Some((_m, hog)) = hog_turn("detach") else {
        return;
    };
    let all_cpus = cpus_allowed(hog.pid);
    assert_eq!(hog.nice(), OWN_NICE);

    let (mut lab, id) = attached_in_a_lab(100, "hog", hog.pid);
    assert!(schedlab::sys::exit::undo::journal_file().is_none());
    // Its knobs start from the hog's own nice, changing nothing: `]` then makes it one more.
    assert_eq!(Backend::knobs(&lab, id).map(|k| k.nice), Some(OWN_NICE));
    assert_eq!(hog.nice(), OWN_NICE);

    let knobs = Knobs {
        nice: 12,
        policy: Policy::Batch,
        affinity: Some(vec![0]),
        ..Knobs::default()
    };
    let said = Backend::set_knobs(&mut lab, id, &knobs).unwrap();
    eprintln!("set_knobs: {said}");
    assert_eq!(hog.nice(), 12, "{said}");
    assert_eq!(cpus_allowed(hog.pid), "0");
    assert_eq!(stat(hog.pid).unwrap().policy, libc::SCHED_BATCH as u32);
    let journal = schedlab::sys::exit::undo::journal_file().expect("a journal while changed");
    let text = std::fs::read_to_string(&journal).unwrap();
    assert!(
        text.lines()
            .any(|l| l.split(' ').nth(1) == Some(&hog.pid.to_string())
                && l.split(' ').nth(3) == Some(&OWN_NICE.to_string())),
        "the journal saves the hog's own nice: {text}"
    );
    let restorer = schedlab::sys::exit::undo::restorer_pid().expect("a restorer while changed");
    assert!(stat(restorer).is_some());

    // Placement is not schedlab's to move on what it did not start: one line, nothing changed.
    let moved = Knobs {
        placement: Placement::OwnSession,
        ..knobs.clone()
    };
    let err = Backend::set_knobs(&mut lab, id, &moved).unwrap_err();
    let err = format!("{err:#}");
    assert!(err.contains("placement") && !err.contains('\n'), "{err}");

    Backend::stop(&mut lab, id).unwrap();
    assert_eq!(hog.nice(), OWN_NICE, "stop puts its nice back");
    assert_eq!(cpus_allowed(hog.pid), all_cpus, "and its CPUs");
    assert_eq!(stat(hog.pid).unwrap().policy, 0, "and its policy");
    assert!(!journal.exists(), "no journal once nothing is changed");
    common::wait::until(
        Duration::from_secs(2),
        Duration::from_millis(10),
        || match stat(restorer) {
            None => Ok(()),
            Some(s) => Err(s),
        },
    )
    .expect("the restorer is gone");

    // Attached again, it gets the row's knobs again; removing the row puts them back.
    Backend::restart(&mut lab, id).unwrap();
    assert_eq!(hog.nice(), 12, "a new attach applies the row's knobs");
    Backend::remove(&mut lab, id).unwrap();
    assert_eq!(hog.nice(), OWN_NICE, "remove puts it back");

    // Declared with the row (a scenario's `nice = 15`): dropping the Lab puts it back.
    let id = lab
        .add(attach_decl(
            "hog",
            hog.pid,
            Knobs {
                nice: 15,
                ..Knobs::default()
            },
        ))
        .unwrap();
    lab.tick();
    assert_eq!(hog.nice(), 15);
    let _ = id;
    drop(lab);
    assert_eq!(hog.nice(), OWN_NICE, "dropping the Lab puts it back");
    assert_eq!(cpus_allowed(hog.pid), all_cpus);
    assert!(schedlab::sys::exit::undo::journal_file().is_none());
    hog.never_signalled();
}

/// `schedlab run` with a scenario that attaches the hog with `nice = 9`, `affinity = [0]` and a
/// cgroup of its own with a 50% quota: SIGKILL of run (no hook runs) leaves the hog's nice,
/// CPUs and cgroup put back (its group removed) within 3 s by the
/// restorer, which then exits and removes the journal. SIGTERM, SIGHUP, a panic and a normal
/// end (the exit hooks and `main` put it back themselves), the same.
#[test]
fn a_sigkilled_run_leaves_the_attached_hog_restored_within_3_s() {
    let Some((_m, hog)) = hog_turn("sigkill") else {
        return;
    };
    let all_cpus = cpus_allowed(hog.pid);
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario_file(
        dir.path(),
        "attach-nice.toml",
        &format!(
            "[[workload]]\nname = \"hog\"\nkind = \"attach\"\npid = {}\nnice = 9\naffinity = [0]\n\
             placement = \"cgroup\"\ncpu_quota = 50\n",
            hog.pid
        ),
    );
    let home = cgroups_of(hog.pid);

    for (signal, what) in [
        (Some(nix::sys::signal::SIGKILL), "SIGKILL"),
        (Some(nix::sys::signal::SIGTERM), "SIGTERM"),
        (Some(nix::sys::signal::SIGHUP), "SIGHUP"),
        (None, "a panic"),
        (None, "its end"),
    ] {
        let panics = what == "a panic";
        let duration = if signal.is_some() || panics {
            "60"
        } else {
            "2"
        };
        let mut run = common::schedlab()
            .args(["run".as_ref(), scenario.as_os_str()])
            .args(["--duration", duration])
            // Test-only fault injection (src/sys/exit/lifeline.rs): a panic 1.5 s in.
            .env(
                "SCHEDLAB_INJECT_PANIC",
                if panics { "run:1500" } else { "none:0" },
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = common::child::read_in_background(run.stderr.take().unwrap());
        let journal = std::env::temp_dir()
            .join(format!("schedlab-undo-{}.journal", run.id()))
            .display()
            .to_string();
        common::wait::until(Duration::from_secs(10), Duration::from_millis(10), || {
            if let Ok(Some(status)) = run.try_wait() {
                panic!("run ended early: {status}");
            }
            match hog.nice() {
                9 => Ok(()),
                n => Err(n),
            }
        })
        .unwrap_or_else(|n| panic!("{what}: run never reniced the hog (nice {n})"));
        assert_eq!(cpus_allowed(hog.pid), "0");
        let placed = attached_dirs(&cgroups_of(hog.pid));
        assert!(!placed.is_empty(), "{what}: placed in a group of its own");
        assert!(std::path::Path::new(&journal).exists(), "{journal}");
        let restorers = restorers_of(&journal);
        assert_eq!(restorers.len(), 1, "{what}: one restorer: {restorers:?}");

        // From the signal, or from its end when it ends by itself.
        let mut t0 = Instant::now();
        if let Some(sig) = signal {
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(run.id() as i32), sig).unwrap();
        }
        let status = run.wait().unwrap();
        if signal.is_none() {
            t0 = Instant::now();
        }
        if panics {
            assert_eq!(status.code(), Some(101), "{what}: {status}");
        }
        let back = common::wait::until(
            Duration::from_secs(3),
            Duration::from_millis(5),
            || match (hog.nice(), cpus_allowed(hog.pid), cgroups_of(hog.pid)) {
                (OWN_NICE, c, g) if c == all_cpus && g == home => Ok(t0.elapsed()),
                other => Err(other),
            },
        )
        .unwrap_or_else(|o| panic!("{what}: hog not restored within 3 s: {o:?}"));
        eprintln!(
            "{what} ({status}): hog back to nice {OWN_NICE}, CPUs {all_cpus} and its cgroup {:.1} ms after",
            back.as_secs_f64() * 1e3
        );
        assert!(
            placed.iter().all(|d| !d.exists()),
            "{what}: its group is removed: {placed:?}"
        );
        common::wait::until(Duration::from_secs(3), Duration::from_millis(10), || {
            let left = restorers_of(&journal);
            match (left.is_empty(), std::path::Path::new(&journal).exists()) {
                (true, false) => Ok(()),
                _ => Err(left),
            }
        })
        .unwrap_or_else(|l| panic!("{what}: restorer {l:?} or journal {journal} left behind"));
        let err = stderr.join().unwrap();
        if what == "its end" {
            assert!(status.success(), "{err}");
        }
        hog.never_signalled();
    }
}

/// What the kernel refuses (EPERM: user nobody may not renice root's hog) is one line, the hog
/// is left as it was, and the journal and its restorer are gone with the run.
#[test]
fn a_refused_change_is_one_line_and_changes_nothing() {
    let Some(_m) = turn() else {
        return;
    };
    if Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("skipped: no setpriv(1) to run schedlab as user nobody");
        return;
    }
    let hog = Hog::start("eperm");
    let dir = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let scenario = common::scenario_file(
        dir.path(),
        "attach-eperm.toml",
        &format!(
            "[[workload]]\nname = \"hog\"\nkind = \"attach\"\npid = {}\nnice = -5\n",
            hog.pid
        ),
    );
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(common::BIN)
        .arg("run")
        .arg(&scenario)
        .args(["--duration", "1"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("as nobody: {} {}", out.status, err.trim());
    assert!(!out.status.success());
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("not permitted"), "{err}");
    assert_eq!(hog.nice(), OWN_NICE, "nothing changed");
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("schedlab-undo-")
        })
        .filter(|e| {
            e.metadata().is_ok_and(|m| {
                use std::os::unix::fs::MetadataExt;
                m.uid() == 65534
            })
        })
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "journals left: {left:?}");
    assert!(restorers_of("schedlab-undo-").is_empty());
    hog.never_signalled();
}

/// The child hog's loop, as its command line's third word.
const HOG_LOOP: &str = "while :; do :; done";

/// A child the attached process starts after its nice was changed inherits the change; it is
/// taken into the journal with its parent's old values and put back with it on detach.
#[test]
fn a_child_born_after_the_change_is_put_back_too() {
    let Some(_m) = turn() else {
        return;
    };
    // Waits (sleeping) for a file, then starts a CPU hog as its child.
    let parent = Hog::running("child", |dir| {
        format!(
            "while [ ! -e {go} ]; do sleep 0.05; done; /bin/sh -c '{HOG_LOOP}' & wait",
            go = dir.join("go").display()
        )
    });
    let (mut lab, id) = attached_in_a_lab(100, "parent", parent.pid);
    let knobs = Knobs {
        nice: 12,
        ..Knobs::default()
    };
    Backend::set_knobs(&mut lab, id, &knobs).unwrap();
    assert_eq!(parent.nice(), 12);
    std::fs::write(parent.dir.join("go"), b"").unwrap();
    let child = common::wait::until(Duration::from_secs(5), Duration::from_millis(20), || {
        lab.tick();
        let kids: Vec<u32> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&p| {
                std::fs::read_to_string(format!("/proc/{p}/stat"))
                    .ok()
                    .and_then(|s| {
                        let f: Vec<String> = s[s.rfind(')')? + 2..]
                            .split(' ')
                            .map(String::from)
                            .collect();
                        Some(f[1] == parent.pid.to_string() && f[0] == "R")
                    })
                    .unwrap_or(false)
            })
            // The hog itself, not the loop's last `sleep 0.05` caught running before it
            // exits (a CI run lost its "child" 240 ms after finding it, as that one would be): only
            // the hog's command line is exactly its own loop.
            .filter(|&p| {
                std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| c.split(|&b| b == 0).nth(2) == Some(HOG_LOOP.as_bytes()))
            })
            .collect();
        match kids.as_slice() {
            [k] => Ok(*k),
            other => Err(other.to_vec()),
        }
    })
    .unwrap_or_else(|k| panic!("no running child of the parent: {k:?}"));
    // Two more samples: the probe holds it, the Lab takes it into the journal.
    for _ in 0..2 {
        std::thread::sleep(Duration::from_millis(120));
        lab.tick();
    }
    assert_eq!(
        stat(child).unwrap().nice,
        12,
        "the child inherited the change"
    );
    let journal = schedlab::sys::exit::undo::journal_file().unwrap();
    let text = std::fs::read_to_string(&journal).unwrap();
    assert!(
        text.lines()
            .any(|l| l.split(' ').nth(1) == Some(&child.to_string())
                && l.split(' ').nth(3) == Some(&OWN_NICE.to_string())),
        "the child is saved with its parent's old nice: {text}"
    );
    Backend::stop(&mut lab, id).unwrap();
    assert_eq!(parent.nice(), OWN_NICE);
    assert_eq!(
        stat(child).unwrap().nice,
        OWN_NICE,
        "the child is put back too"
    );
    assert!(!journal.exists());
    drop(lab);
    parent.never_signalled();
}

/// The groups /proc/PID/cgroup lists for a process, as one text.
fn cgroups_of(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default()
}

/// The directories of the attached groups a cgroup text names.
fn attached_dirs(cgroups: &str) -> Vec<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    cgroups
        .lines()
        .filter_map(|l| l.splitn(3, ':').nth(2))
        .filter(|p| p.contains("schedlab-attached-"))
        .flat_map(|p| {
            // Under every cgroup mount: the one that has it is its hierarchy's.
            mountinfo
                .lines()
                .filter(|m| m.contains(" - cgroup"))
                .filter_map(|m| m.split(' ').nth(4))
                .map(|point| PathBuf::from(format!("{point}{p}")))
                .filter(|d| d.is_dir())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Placed in a cgroup of its own with a 30% quota through the Lab, a hog attached by pid moves
/// there (its old groups journalled first), is due its quota, reads throttled, and receives
/// about 30% of a CPU; a new weight applies to the same group; letting it go puts it back in
/// the groups it came from and removes the group.
#[test]
fn a_hog_placed_in_a_cgroup_is_due_its_quota_and_goes_back_where_it_was() {
    let Some((_m, hog)) = hog_turn("cgroup") else {
        return;
    };
    let before = cgroups_of(hog.pid);
    let (mut lab, id) = attached_in_a_lab(500, "hog", hog.pid);
    let knobs = Knobs {
        nice: OWN_NICE,
        placement: Placement::Cgroup { weight: 50 },
        cpu_quota: Some(30),
        ..Knobs::default()
    };
    let said = match Backend::set_knobs(&mut lab, id, &knobs) {
        Ok(s) => s,
        Err(e) if format!("{e:#}").contains("cgroup placement needs") => {
            eprintln!("skipped: no writable cgroup hierarchy: {e:#}");
            return;
        }
        Err(e) => panic!("{e:#}"),
    };
    eprintln!("set_knobs: {said}");
    let inside = cgroups_of(hog.pid);
    let dirs = attached_dirs(&inside);
    assert!(
        !dirs.is_empty(),
        "the hog moved into a group of its own: {inside}"
    );
    let journal = schedlab::sys::exit::undo::journal_file().expect("a journal while placed");
    let text = std::fs::read_to_string(&journal).unwrap();
    assert!(
        text.lines().any(|l| l.starts_with("group "))
            && text
                .lines()
                .any(|l| l.starts_with(&format!("moved {id} {} ", hog.pid))),
        "the group and where the hog came from are journalled: {text}"
    );

    // Settled over a 4 s window: due its quota, throttled, and given about that.
    lab.set_verdict_window(2.0);
    let mut last = None;
    for _ in 0..8 {
        std::thread::sleep(Duration::from_millis(500));
        last = lab.tick().workloads.into_iter().find(|w| w.id == id);
    }
    let w = last.expect("its row");
    eprintln!(
        "placed: got {:.3} CPU, due {:.3}: {}; throttled {:.0}%",
        w.cpu_received,
        w.cpu_fair,
        w.due.text(),
        w.throttled_pct
    );
    match &w.due {
        schedlab::model::Due::Quota { cpus, group } => {
            assert!((cpus - 0.30).abs() < 0.01, "{cpus}");
            assert!(group.contains("schedlab-attached-"), "{group}");
        }
        other => panic!("due by its quota, not {other:?}"),
    }
    assert!((w.cpu_received - 0.30).abs() < 0.05, "{w:?}");
    assert!(w.throttled_pct > 20.0, "{w:?}");

    // A new weight, no quota: the same group.
    let reweighed = Knobs {
        placement: Placement::Cgroup { weight: 200 },
        cpu_quota: None,
        ..knobs.clone()
    };
    Backend::set_knobs(&mut lab, id, &reweighed).unwrap();
    assert_eq!(cgroups_of(hog.pid), inside, "it stays in its group");
    let weight = dirs
        .iter()
        .find_map(|d| {
            std::fs::read_to_string(d.join("cpu.weight"))
                .or_else(|_| std::fs::read_to_string(d.join("cpu.shares")))
                .ok()
        })
        .unwrap();
    assert!(["200", "2048"].contains(&weight.trim()), "{weight}");

    Backend::stop(&mut lab, id).unwrap();
    assert_eq!(
        cgroups_of(hog.pid),
        before,
        "let go, it is back where it was"
    );
    assert!(
        dirs.iter().all(|d| !d.exists()),
        "the group is removed: {dirs:?}"
    );
    assert!(!journal.exists(), "no journal once nothing is changed");
    drop(lab);
    hog.never_signalled();
}
