//! Plots: a valid SVG and PNG of the three panels, and nothing left behind on failure.

mod common;

use schedlab::record::plot::plot;

/// The common Frames plotted into a fresh directory as `name`: (the directory, the file).
fn plotted(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(name);
    plot(&common::frames(), "contest: fork_load", &out).unwrap();
    (dir, out)
}

/// How many files `dir` holds.
fn files_in(dir: &tempfile::TempDir) -> usize {
    std::fs::read_dir(dir.path()).unwrap().count()
}

#[test]
fn writes_a_valid_svg() {
    let (dir, out) = plotted("run.svg");
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
    assert!(svg.trim_end().ends_with("</svg>"));
    for text in [
        "Throughput",
        "Context switches",
        "fair share",
        "ref-job",
        "fork_load",
    ] {
        assert!(svg.contains(text), "missing {text}");
    }
    assert_eq!(files_in(&dir), 1, "no temp file left");
}

#[test]
fn writes_a_valid_png_with_text() {
    let (dir, out) = plotted("run.png");
    let png = std::fs::read(&out).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(&png[12..16], b"IHDR");
    let w = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((w, h), (1200, 1140));
    assert!(png.windows(4).any(|c| c == b"IEND"));
    assert_eq!(files_in(&dir), 1);
}

#[test]
fn bad_outputs_are_refused_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let e = plot(&common::frames(), "t", &dir.path().join("x.jpg")).unwrap_err();
    assert!(format!("{e:#}").contains("name it .svg or .png"));
    let e = plot(
        &common::frames(),
        "t",
        std::path::Path::new("/nonexistent/dir/x.svg"),
    )
    .unwrap_err();
    assert!(
        format!("{e:#}").contains("cannot write /nonexistent/dir/x.svg"),
        "{e:#}"
    );
    let e = plot(&[], "t", &dir.path().join("x.svg")).unwrap_err();
    assert!(format!("{e:#}").contains("nothing to plot"));
    assert_eq!(files_in(&dir), 0);
}

/// The common Frames with the fork loop's fork cycles timed (a gap in the middle), and its
/// distribution over the run: 1,000 cycles of 0.9 to 1.9 ms and a tail to 40 ms.
fn with_latency() -> (
    Vec<schedlab::model::Frame>,
    Vec<schedlab::record::latency::Merged>,
) {
    use schedlab::model::latency::Distribution;
    use schedlab::model::Latency;
    use schedlab::probe::LatencySample;
    let mut frames = common::frames();
    for (i, f) in frames.iter_mut().enumerate() {
        f.workloads[1].latency = Some(Latency {
            unit: "fork cycle".into(),
            samples: if i == 4 { 0 } else { 440 },
            p50_us: 1_100.0 + i as f64,
            p99_us: 2_500.0,
            p999_us: 9_000.0 + 100.0 * i as f64,
            mean_us: 1_200.0,
            available: true,
        });
    }
    let values: Vec<u64> = (0..1_000)
        .map(|i| 900_000 + i * 1_000)
        .chain([20_000_000, 40_000_000])
        .collect();
    let mut counts = std::collections::BTreeMap::new();
    for &v in &values {
        *counts
            .entry(schedlab::sys::shared::histogram::bucket_of(v) as u16)
            .or_insert(0u64) += 1;
    }
    let sample = LatencySample {
        unit: "fork cycle".into(),
        samples: values.len() as u64,
        sum_ns: values.iter().sum(),
        rejected: 0,
        buckets: counts.into_iter().collect(),
    };
    let merged = schedlab::record::latency::Merged {
        workload: "fork \"loop\"".into(),
        unit: "fork cycle".into(),
        dist: Distribution::cumulative(&sample),
    };
    (frames, vec![merged])
}

#[test]
fn latency_adds_a_panel_over_time_and_a_distribution() {
    let (frames, dists) = with_latency();
    let dir = tempfile::tempdir().unwrap();
    let svg_path = dir.path().join("latency.svg");
    schedlab::record::plot::plot_run(&frames, &dists, "fork_load", &svg_path).unwrap();
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    for text in [
        "Latency: p50 (dashed), p99 (solid), p99.9 (dotted)",
        "Latency distribution over the run",
        "fork cycle",
        "µs (log scale)",
        "99.9%",
    ] {
        assert!(svg.contains(text), "missing {text}");
    }
    assert!(svg.trim_end().ends_with("</svg>"));

    let png_path = dir.path().join("latency.png");
    schedlab::record::plot::plot_run(&frames, &dists, "fork_load", &png_path).unwrap();
    let png = std::fs::read(&png_path).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let h = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!(h, 360 * 5 + 60, "five panels");
    assert_eq!(files_in(&dir), 2, "no temp file left");

    // Per-interval figures alone: the panel over time, no distribution.
    let only = dir.path().join("only.png");
    schedlab::record::plot::plot_run(&frames, &[], "fork_load", &only).unwrap();
    let png = std::fs::read(&only).unwrap();
    assert_eq!(
        u32::from_be_bytes(png[20..24].try_into().unwrap()),
        360 * 4 + 60
    );
}
