//! Two hosts on one machine: the server in one network namespace bound to its veth address,
//! the client in another, connecting across the veth pair. The test creates the namespaces
//! and removes them even when it fails. Needs root and iproute2: without them it fails loudly
//! rather than pass without testing anything.

mod chat_common;
mod common;

use std::process::Command;
use std::time::Duration;

use chat_common::*;

/// Two namespaces joined by a veth pair; deleted on drop (which deletes the pair too).
struct TwoHosts {
    a: String,
    b: String,
    server_ip: String,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run `ip` (install iproute2): {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl TwoHosts {
    fn create() -> Result<TwoHosts, String> {
        let pid = std::process::id();
        // A /30 of 10.200.0.0/16 picked from our pid, so parallel runs do not collide.
        let net = pid % 16384;
        let (x, y) = (net / 64, (net % 64) * 4);
        let hosts = TwoHosts {
            a: format!("schedlab-chat-a-{pid}"),
            b: format!("schedlab-chat-b-{pid}"),
            server_ip: format!("10.200.{x}.{}", y + 1),
        };
        let client_ip = format!("10.200.{x}.{}", y + 2);
        let (va, vb) = (format!("slc{pid}a"), format!("slc{pid}b"));
        ip(&["netns", "add", &hosts.a])?;
        // From here on, Drop removes whatever was made.
        ip(&["netns", "add", &hosts.b])?;
        ip(&[
            "link", "add", &va, "netns", &hosts.a, "type", "veth", "peer", "name", &vb, "netns",
            &hosts.b,
        ])?;
        for (ns, dev, addr) in [
            (&hosts.a, &va, &hosts.server_ip),
            (&hosts.b, &vb, &client_ip),
        ] {
            ip(&["-n", ns, "addr", "add", &format!("{addr}/30"), "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(hosts)
    }
}

impl Drop for TwoHosts {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.a]);
        let _ = ip(&["netns", "del", &self.b]);
    }
}

#[test]
fn client_and_server_in_two_network_namespaces() {
    assert_eq!(
        // SAFETY: geteuid has no preconditions and cannot fail.
        unsafe { libc::geteuid() },
        0,
        "this test needs root to create network namespaces (CI runs as root)"
    );
    let hosts = match TwoHosts::create() {
        Ok(h) => h,
        Err(e) => {
            // Remove what was created before failing.
            let pid = std::process::id();
            let _ = ip(&["netns", "del", &format!("schedlab-chat-a-{pid}")]);
            let _ = ip(&["netns", "del", &format!("schedlab-chat-b-{pid}")]);
            panic!("cannot build the two-host network: {e}");
        }
    };
    let in_a = ["ip", "netns", "exec", hosts.a.as_str()];
    let in_b = ["ip", "netns", "exec", hosts.b.as_str()];
    let server = Server::start_with(&in_a, &hosts.server_ip, &["--runs", "1"]);
    let port = server.port.to_string();
    // The server is not reachable on loopback in the client's namespace: it really crosses.
    let out = run_with(
        &in_b,
        &["chat-client", "127.0.0.1", "1", "1", &port],
        Duration::from_secs(20),
    );
    assert!(!out.status.success());
    let out = run_with(
        &in_b,
        &["chat-client", &hosts.server_ip, "2", "50", &port],
        Duration::from_secs(60),
    );
    let report = text(&out.stdout);
    assert!(out.status.success(), "{}\n{report}", text(&out.stderr));
    assert_eq!(report_value(&report, "Messages sent"), 2_000);
    assert_eq!(report_value(&report, "Messages received"), 38_000);
    let stdout = server.stdout.clone();
    assert!(server.wait(Duration::from_secs(10)).success());
    assert!(stdout
        .lock()
        .unwrap()
        .contains("SRV(1) 2000 messages received, 38000 messages sent"));
    drop(hosts);
}
