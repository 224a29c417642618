//! Two hosts on one machine: the server in one network namespace bound to its veth address,
//! the client in another, connecting across the veth pair. The test creates the namespaces
//! and removes them even when it fails. Needs root and iproute2: without them it fails loudly
//! rather than pass without testing anything.

mod chat_common;
mod common;

use std::time::Duration;

use chat_common::*;
use common::netns::TwoHosts;

#[test]
fn client_and_server_in_two_network_namespaces() {
    let hosts = TwoHosts::create("chat", 200);
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
