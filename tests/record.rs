//! Recordings: written as JSON lines after a header, read back through the same model as a
//! live run, a cut last line tolerated, and things that are not recordings refused.

mod common;

use schedlab::probe::{MachineSample, ProcessSample, Sample, TaskSample, WorkloadSample};
use schedlab::record::recording::{Header, Recording, RecordingWriter, Replay};
use schedlab::scenario::Scenario;

/// Sample k of a fake run: one workload whose one thread runs half of every second and
/// counts 1000 operations a second.
fn sample(k: u64) -> Sample {
    Sample {
        t_ns: 1_000_000_000 * (k + 1),
        machine: MachineSample {
            cpus: 2,
            autogroup: true,
            busy_ns: 600_000_000 * k,
            ..Default::default()
        },
        workloads: vec![WorkloadSample {
            id: 1,
            name: "fork_load".into(),
            ops_unit: "fork".into(),
            pgid: 100,
            leader: 100,
            ops: Some(1000 * k),
            processes: vec![ProcessSample {
                pid: 100,
                ppid: 1,
                start: 5,
                session: 100,
                threads: vec![TaskSample {
                    tid: 100,
                    run_ns: 500_000_000 * k,
                    wait_ns: 100_000_000 * k,
                    slices: 10 * k,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
        status_every_ns: 1_000_000_000,
        ..Default::default()
    }
}

fn write(path: &std::path::Path, repeats: u64, per_repeat: u64, finish: bool) {
    let mut w = RecordingWriter::create(path).unwrap();
    w.header(&Header::new(&Scenario::builtin_default(), 2, true))
        .unwrap();
    for r in 1..=repeats {
        w.start_repeat(r as u32).unwrap();
        for k in 0..per_repeat {
            w.sample(&sample(k)).unwrap();
        }
    }
    if finish {
        w.finish().unwrap();
    }
}

#[test]
fn a_recording_reads_back_and_replays_through_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    write(&path, 2, 5, true);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("{\"schedlab_recording\":1,"));
    assert!(text.ends_with("{\"end\":{\"samples\":10}}\n"));

    let rec = Recording::read(&path).unwrap();
    assert!(rec.complete && !rec.cut_last_line);
    assert_eq!(rec.header.scenario, Scenario::builtin_default());
    assert_eq!(rec.header.cpus, 2);
    assert_eq!(rec.repeats.len(), 2);
    assert_eq!(rec.repeats[1][3], sample(3), "samples round-trip exactly");

    let per = rec.frames_per_repeat();
    assert_eq!(per[0].len(), 4, "five samples, four intervals");
    let w = &per[0][1].workloads[0];
    assert_eq!(w.ops_per_sec, 1000.0);
    assert!((w.cpu_received - 0.5).abs() < 1e-9);

    // One time line across repeats: 4 s, then 4 more.
    let all = rec.frames();
    assert_eq!(all.len(), 8);
    assert!((all[3].t - 4.0).abs() < 1e-9 && (all[7].t - 8.0).abs() < 1e-9);
}

#[test]
fn a_recording_cut_mid_line_replays() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.jsonl");
    write(&path, 1, 6, false);
    // Cut the last sample line in the middle, as a crash during its write would.
    let mut bytes = std::fs::read(&path).unwrap();
    let last_start = bytes[..bytes.len() - 1]
        .iter()
        .rposition(|b| *b == b'\n')
        .unwrap()
        + 1;
    bytes.truncate(last_start + 40);
    std::fs::write(&path, &bytes).unwrap();

    let rec = Recording::read(&path).unwrap();
    assert!(rec.cut_last_line && !rec.complete);
    assert_eq!(rec.sample_count(), 5, "only the cut sample is lost");

    let mut replay = Replay::open(&path).unwrap();
    assert!(!replay.complete());
    assert_eq!(replay.len(), 4);
    assert_eq!(replay.position(), 0);
    assert!(replay.next_frame().is_some());
    assert!((replay.seek(3.2).t - 3.0).abs() < 1e-9);
    assert_eq!(replay.position(), 2);
    assert!((replay.seek_by(-1.0).t - 2.0).abs() < 1e-9);
    let (first, end) = (replay.frames()[0].t, replay.duration());
    assert_eq!(replay.seek(-5.0).t, first);
    assert_eq!(replay.seek(99.0).t, end);
    assert!(replay.next_frame().is_none(), "the end: the caller pauses");
    assert_eq!(replay.history().len(), replay.len());

    // The command prints the frames, and says the run was cut short.
    let text = common::stdout_of(common::schedlab().arg("replay").arg(&path));
    assert!(text.contains("cut short: no end line"), "{text}");
    assert!(text.contains("fork_load"), "{text}");

    let csv = common::stdout_of(
        common::schedlab()
            .args(["replay", "--format", "csv"])
            .arg(&path),
    );
    let rows: Vec<_> = csv.lines().collect();
    assert_eq!(rows.len(), 1 + 4);
    assert!(rows[0].starts_with("t,interval,workload,ops_per_sec"));
    assert!(
        rows[1].starts_with("1,1,fork_load,1000,fork,0.5,"),
        "{}",
        rows[1]
    );
    let json = common::stdout_of(
        common::schedlab()
            .args(["replay", "--format", "json"])
            .arg(&path),
    );
    let frames: Vec<schedlab::model::Frame> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(frames.len(), 4);
}

#[test]
fn what_is_not_a_recording_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[u8], &str); 5] = [
        ("empty", b"", "is not a schedlab recording: it is empty"),
        ("text", b"hello world\n", "its first line is not JSON"),
        (
            "json",
            b"{\"a\":1}\n",
            "its first line is not a recording header",
        ),
        (
            "future",
            b"{\"schedlab_recording\":7}\n",
            "is a version 7 recording",
        ),
        (
            "binary",
            b"\x89PNG\r\n\x1a\n\x00\x00",
            "its first line is not JSON",
        ),
    ];
    for (name, bytes, want) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let e = format!("{:#}", Recording::read(&path).unwrap_err());
        assert!(e.contains(want), "{name}: {e}");
        for cmd in ["replay", "plot"] {
            let mut c = common::schedlab();
            c.arg(cmd).arg(&path);
            if cmd == "plot" {
                c.arg("-o").arg(dir.path().join("x.svg"));
            }
            let out = c.output().unwrap();
            assert_eq!(out.status.code(), Some(1), "{cmd} {name}");
            let err = String::from_utf8(out.stderr).unwrap();
            assert_eq!(err.lines().count(), 1, "{cmd} {name}: {err}");
            assert!(
                err.starts_with(&format!("schedlab {cmd}: error: ")),
                "{err}"
            );
        }
    }
    assert!(!dir.path().join("x.svg").exists());

    // A damaged line in the middle is an error that says where, not a silent skip.
    let path = dir.path().join("mid.jsonl");
    write(&path, 1, 3, true);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text = text.replacen("{\"sample\"", "{\"sampel\"", 1);
    std::fs::write(&path, text).unwrap();
    let e = format!("{:#}", Recording::read(&path).unwrap_err());
    assert!(e.contains("mid.jsonl:3: not a recording line"), "{e}");
}

#[test]
fn plot_draws_a_recording() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("run.jsonl");
    write(&rec, 1, 8, true);
    for ext in ["svg", "png"] {
        let out = dir.path().join(format!("run.{ext}"));
        common::stdout_of(common::schedlab().arg("plot").arg(&rec).arg("-o").arg(&out));
        let bytes = std::fs::read(&out).unwrap();
        assert!(bytes.len() > 1000);
    }
    let svg = std::fs::read_to_string(dir.path().join("run.svg")).unwrap();
    assert!(svg.contains("contest-fork-load: kernel"));
    // Flushed as it goes: a writer that is never finished still leaves every sample.
    let path = dir.path().join("live.jsonl");
    let mut w = RecordingWriter::create(&path).unwrap();
    w.header(&Header::new(&Scenario::builtin_default(), 2, true))
        .unwrap();
    w.sample(&sample(0)).unwrap();
    w.sample(&sample(1)).unwrap();
    let rec = Recording::read(&path).unwrap();
    assert_eq!(rec.sample_count(), 2);
    drop(w);
}

/// Sample k with fork cycles timed: 100 a second, all of about 1 ms, so far.
fn timed_sample(k: u64) -> Sample {
    let mut s = sample(k);
    let bucket = schedlab::sys::shared::histogram::bucket_of(1_000_000) as u16;
    s.workloads[0].latency = vec![schedlab::probe::LatencySample {
        unit: "fork cycle".into(),
        samples: 100 * k,
        sum_ns: 100 * k * 1_000_000,
        rejected: 0,
        buckets: if k == 0 {
            vec![]
        } else {
            vec![(bucket, 100 * k)]
        },
    }];
    s
}

#[test]
fn latency_in_a_recording_replays_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("timed.jsonl");
    let mut w = RecordingWriter::create(&path).unwrap();
    w.header(&Header::new(&Scenario::builtin_default(), 2, true))
        .unwrap();
    w.start_repeat(1).unwrap();
    for k in 0..5 {
        w.sample(&timed_sample(k)).unwrap();
    }
    w.finish().unwrap();

    let frames = &Recording::read(&path).unwrap().frames_per_repeat()[0];
    assert_eq!(frames.len(), 4);
    for f in frames {
        let l = f.workloads[0].latency.as_ref().unwrap();
        assert_eq!((l.unit.as_str(), l.samples), ("fork cycle", 100));
        // The bucket's midpoint: within 1.6% of the 1 ms recorded.
        assert!((l.p99_us - 1_000.0).abs() < 16.0, "{l:?}");
        assert_eq!(l.mean_us, 1_000.0, "the mean is exact");
    }

    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let p = path.to_str().unwrap();
    let csv = run(&["replay", "--format", "csv", p]);
    let rows: Vec<_> = csv.lines().collect();
    assert!(
        rows[0].ends_with(
            ",latency_unit,latency_samples,latency_available,p50_us,p99_us,p999_us,mean_us"
        ),
        "{}",
        rows[0]
    );
    assert!(rows[1].contains(",fork cycle,100,true,"), "{}", rows[1]);
    let text = run(&["replay", "--format", "text", p]);
    assert!(text.lines().nth(1).unwrap().ends_with("p99 µs"), "{text}");

    let png = dir.path().join("timed.png");
    run(&["plot", p, "-o", png.to_str().unwrap()]);
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    assert_eq!(h, 360 * 5 + 60, "the latency panel and its distribution");
}

#[test]
fn the_header_carries_its_machine_and_an_older_header_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    write(&path, 1, 2, true);
    let rec = Recording::read(&path).unwrap();
    let h = &rec.header;
    let host = h.host.as_ref().expect("the machine in full");
    assert_eq!((host.cpus, host.autogroup), (2, true));
    assert_eq!(host.kernel, h.kernel);
    assert_eq!(
        host.hostname.as_deref(),
        Some(nix_hostname().as_str()),
        "uname -n"
    );
    let started = h.started_utc.as_deref().unwrap();
    assert!(
        started.len() == 20 && started.ends_with('Z') && started.as_bytes()[10] == b'T',
        "{started}"
    );
    assert!(h.schedlab_commit.is_some());
    assert!(!h.command_line.as_ref().unwrap().is_empty());

    // A header written before these fields existed reads, without them.
    let text = std::fs::read_to_string(&path).unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    let mut v: serde_json::Value = serde_json::from_str(first).unwrap();
    for k in ["started_utc", "schedlab_commit", "command_line", "host"] {
        v.as_object_mut().unwrap().remove(k);
    }
    std::fs::write(&path, format!("{v}\n{rest}")).unwrap();
    let old = Recording::read(&path).unwrap();
    assert_eq!(
        (old.header.host.as_ref(), old.header.started_utc.as_ref()),
        (None, None)
    );
    assert_eq!(old.header.cpus, 2);
}

fn nix_hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_owned()
}
