//! A `placement = "cgroup"` workload is accounted the same way headless as in the dashboard:
//! `schedlab run` goes through the engine path that tells the probe where the workload's own
//! cgroup is, so its Frames say `accounting: cgroup`.

mod common;

use std::process::Command;

use schedlab::model::Accounting;
use schedlab::record::recording::Recording;

/// A workload `name` that spins, in a cgroup of its own, far longer than the run lasts: the
/// run stops it, so its last Frame is still a running one accounted by its cgroup (a loop
/// counted in whole seconds of `date` could end after one second, inside a 1.2 s run).
fn in_cgroup(name: &str) -> String {
    format!(
        r#"
name = "cgroup-headless"
interval_ms = 100

[[workload]]
name = "{name}"
kind = "command"
argv = ["sh", "-c", "end=$(($(date +%s) + 30)); while [ $(date +%s) -lt $end ]; do :; done"]
placement = "cgroup"
"#
    )
}

#[test]
fn a_cgroup_placed_workload_is_accounted_by_its_cgroup_headless() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("NOT CHECKED: cgroup placement needs root (CI runs as root)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("s.toml");
    let rec = dir.path().join("rec.jsonl");
    // Unique, so the cgroup left-over check below sees only this test's.
    let name = format!("cg-headless-{}", std::process::id());
    std::fs::write(&sc, in_cgroup(&name)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .arg("run")
        .arg(&sc)
        .args(["--duration", "1.2", "--record"])
        .arg(&rec)
        .output()
        .unwrap();
    common::assert_success(&out);
    let frames = Recording::read(&rec).unwrap().frames();
    assert!(frames.len() >= 5, "{} frames", frames.len());
    for f in &frames {
        let w = f
            .workloads
            .iter()
            .find(|w| w.name == name)
            .unwrap_or_else(|| panic!("no {name} at t={}", f.t));
        assert_eq!(w.accounting, Accounting::Cgroup, "t={}: {w:?}", f.t);
    }
    // The run removed the workload's cgroup when it stopped it.
    let left = Command::new("find")
        .args(["/sys/fs/cgroup", "-maxdepth", "6", "-type", "d", "-name"])
        .arg(format!("*{name}"))
        .stderr(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "cgroups left behind: {}",
        String::from_utf8_lossy(&left.stdout)
    );
}
