//! Child processes of a test: their pipes read to the end, the port a server names on its first
//! line, a program run through another command, and a session leader killed with its group.

use std::io::{BufRead, BufReader, Read};
use std::process::Command;
use std::thread::JoinHandle;

/// All that is left on a child's pipe, read to its end.
pub fn read_to_end(mut pipe: impl Read) -> String {
    let mut text = String::new();
    pipe.read_to_string(&mut text)
        .expect("a child's pipe read to its end, as UTF-8");
    text
}

/// Reads a child's pipe to its end on a thread of its own, so that the child never blocks on
/// a full pipe while the test waits for something else; join it for the text.
pub fn read_in_background(mut pipe: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// The first line a child writes on `pipe` (what follows is left unread).
pub fn first_line(pipe: impl Read) -> String {
    let mut line = String::new();
    BufReader::new(pipe)
        .read_line(&mut line)
        .expect("a line from the child");
    line
}

/// The port at the end of a server's "listening on ADDRESS:PORT" line.
pub fn port_in(line: &str) -> u16 {
    line.trim()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in the server's first line: {line:?}"))
}

/// `program` run through `prefix` (such as `ip netns exec NS`); plainly when it is empty.
pub fn through(prefix: &[&str], program: &str) -> Command {
    match prefix.split_first() {
        None => Command::new(program),
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(program);
            c
        }
    }
}

/// Kills a session leader started by a test with its whole process group (SIGKILL), and reaps
/// it: nothing it started outlives the test.
pub fn kill_group(leader: &mut std::process::Child) {
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(leader.id() as i32),
        nix::sys::signal::SIGKILL,
    );
    let _ = leader.wait();
}
