//! Two hosts on one machine: two network namespaces joined by a veth pair, removed on drop
//! (which removes the pair too), and a thread moved into one of them. Needs root and iproute2.

use std::process::Command;

/// Two namespaces joined by a veth pair, a /30 between them.
pub struct TwoHosts {
    pub a: String,
    pub b: String,
    pub server_ip: String,
    pub client_ip: String,
}

/// Runs `ip ARGS`; its stderr on failure.
pub fn ip(args: &[&str]) -> Result<(), String> {
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
    /// Namespaces `schedlab-TAG-{a,b}-PID` on 10.NET.x.y/30, picked from our pid so that
    /// parallel runs do not collide. Panics, having removed what it made, when it cannot.
    pub fn create(tag: &str, net: u8) -> TwoHosts {
        assert_eq!(
            // SAFETY: geteuid has no preconditions and cannot fail.
            unsafe { libc::geteuid() },
            0,
            "this test needs root to create network namespaces (CI runs as root)"
        );
        let pid = std::process::id();
        let n = pid % 16384;
        let (x, y) = (n / 64, (n % 64) * 4);
        let hosts = TwoHosts {
            a: format!("schedlab-{tag}-a-{pid}"),
            b: format!("schedlab-{tag}-b-{pid}"),
            server_ip: format!("10.{net}.{x}.{}", y + 1),
            client_ip: format!("10.{net}.{x}.{}", y + 2),
        };
        // From here on, Drop removes whatever was made.
        if let Err(e) = hosts.build(&format!("s{}{pid}", &tag[..1])) {
            drop(hosts);
            panic!("cannot build the two-host network: {e}");
        }
        hosts
    }

    fn build(&self, veth: &str) -> Result<(), String> {
        let (va, vb) = (format!("{veth}a"), format!("{veth}b"));
        ip(&["netns", "add", &self.a])?;
        ip(&["netns", "add", &self.b])?;
        ip(&[
            "link", "add", &va, "netns", &self.a, "type", "veth", "peer", "name", &vb, "netns",
            &self.b,
        ])?;
        for (ns, dev, addr) in [
            (&self.a, &va, &self.server_ip),
            (&self.b, &vb, &self.client_ip),
        ] {
            ip(&["-n", ns, "addr", "add", &format!("{addr}/30"), "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(())
    }
}

impl Drop for TwoHosts {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.a]);
        let _ = ip(&["netns", "del", &self.b]);
    }
}

/// Moves the calling thread into the network namespace `name` (sockets it makes from now on
/// live there; other threads stay where they are).
pub fn enter(name: &str) {
    let f = std::fs::File::open(format!("/run/netns/{name}")).expect("the namespace exists");
    nix::sched::setns(f, nix::sched::CloneFlags::CLONE_NEWNET).expect("setns");
}
