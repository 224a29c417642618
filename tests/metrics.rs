//! The OpenMetrics endpoint, over real HTTP on loopback.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

use schedlab::record::metrics::MetricsServer;

fn get(addr: std::net::SocketAddr, path: &str, accept: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nAccept: {accept}\r\n\r\n"
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let (head, body) = resp.split_once("\r\n\r\n").unwrap();
    (head.to_owned(), body.to_owned())
}

/// Checks the exposition grammar line by line and returns, per family, its samples' labels.
fn parse(body: &str) -> BTreeMap<String, Vec<String>> {
    let mut families: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut typed = std::collections::HashSet::new();
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert_eq!(kind, "gauge");
            assert!(typed.insert(name.to_owned()), "family {name} typed twice");
            families.entry(name.to_owned()).or_default();
            continue;
        }
        if line.starts_with("# HELP ") || line == "# EOF" {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("name{labels} value");
        value
            .parse::<f64>()
            .unwrap_or_else(|_| panic!("bad value in {line}"));
        let (name, labels) = series.split_once('{').expect("labels");
        assert!(labels.ends_with('}'), "{line}");
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{line}"
        );
        assert!(typed.contains(name), "sample before its TYPE: {line}");
        families
            .get_mut(name)
            .unwrap()
            .push(labels.trim_end_matches('}').to_owned());
    }
    families
}

#[test]
fn scrape_returns_one_series_per_workload() {
    let server = MetricsServer::start("127.0.0.1:0", "contest").unwrap();
    let addr = server.local_addr();
    assert!(addr.ip().is_loopback());

    // Before the first frame: valid text, no samples.
    let (head, body) = get(addr, "/metrics", "text/plain");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(parse(&body).values().all(|v| v.is_empty()));

    let frames = common::frames();
    server.publish(frames.last().unwrap());
    let (head, body) = get(
        addr,
        "/metrics",
        "application/openmetrics-text; version=1.0.0",
    );
    assert!(
        head.contains("Content-Type: application/openmetrics-text"),
        "{head}"
    );
    assert!(body.ends_with("# EOF\n"));
    let families = parse(&body);
    let per_workload: Vec<_> = families
        .iter()
        .filter(|(n, _)| n.starts_with("schedlab_workload_"))
        .collect();
    assert!(per_workload.len() >= 6);
    for (name, labels) in per_workload {
        assert_eq!(labels.len(), 2, "{name}: one series per workload");
        assert!(labels[0].contains("workload=\"ref-job\""), "{name}");
        assert!(labels[1].contains(r#"workload="fork \"loop\"""#), "{name}");
    }
    assert!(body.contains("schedlab_workload_ops_per_second{scenario=\"contest\",workload=\"ref-job\",unit=\"unit\"} 410\n"));
    assert!(body.contains(
        "schedlab_workload_fairness_ratio{scenario=\"contest\",workload=\"fork \\\"loop\\\"\"} 2\n"
    ));
    assert_eq!(families["schedlab_jain_index"].len(), 1);

    let (head, _) = get(addr, "/nope", "*/*");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
}

#[test]
fn address_in_use_is_one_clear_error() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let err = MetricsServer::start(&addr, "x").err().expect("must fail");
    let msg = format!("{err:#}");
    assert!(
        msg.contains(&format!("cannot serve metrics on {addr}")),
        "{msg}"
    );
    assert!(msg.to_lowercase().contains("in use"), "{msg}");
    assert!(MetricsServer::start("not an address", "x").is_err());
}
