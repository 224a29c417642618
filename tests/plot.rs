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
