//! What the machine lets one process hold: open files, threads, memory maps, memory.
//!
//! A chat run needs one descriptor per connection and two threads per connection on each
//! side. Rather than fail half-way through creating 16,000 threads, each side checks up front,
//! raises its open-file limit as far as it may, and names the limit that stops it.

use std::io;
use std::thread::JoinHandle;

use nix::sys::resource::{getrlimit, setrlimit, Resource};
use nix::unistd::geteuid;

use super::protocol::USERS_PER_ROOM;
use crate::sys::kernel::guard::free_tasks;
use crate::sys::kernel::proc::{
    max_map_count, mem_available, own_map_count, own_open_files, sysctl_u64,
};

/// Stack of every chat thread: the originals used 16 KiB; Rust's formatting on an error path
/// wants a little more. Small stacks are what let thousands of threads fit.
pub(crate) const STACK_SIZE: usize = 64 * 1024;
/// Descriptors a process needs besides its connections (stdio, listener, control, ledger,
/// counters, pending control connections on the server).
const SPARE_FILES: u64 = 128;
/// Memory one thread may come to cost: its stack, its kernel stack and some slack.
const BYTES_PER_THREAD: u64 = STACK_SIZE as u64 + 32 * 1024;
/// Memory maps one thread costs: its stack and its guard page.
const MAPS_PER_THREAD: u64 = 2;

/// Threads per room on one side: a send and a receive thread per user.
pub(crate) const THREADS_PER_ROOM: u64 = 2 * USERS_PER_ROOM as u64;

/// The most rooms this process can hold as either side, and the limit that decides it.
pub(crate) fn max_rooms() -> (u32, String) {
    let mut best = (
        i32::MAX as u64,
        "the protocol's 32-bit room count".to_string(),
    );
    let mut consider = |rooms: u64, why: String| {
        if rooms < best.0 {
            best = (rooms, why);
        }
    };
    if let Some((_, hard)) = nofile() {
        let usable = nofile_ceiling(hard).saturating_sub(open_files() + SPARE_FILES);
        consider(
            usable / USERS_PER_ROOM as u64,
            format!(
                "the open-file limit ({} files; raise it with ulimit -n / ulimit -Hn)",
                nofile_ceiling(hard)
            ),
        );
    }
    if let Some((free, why)) = free_tasks() {
        consider(free / THREADS_PER_ROOM, why);
    }
    if let (Some(max), Some(used)) = (max_map_count(), own_map_count()) {
        let free = max.saturating_sub(used + 256);
        consider(
            free / (MAPS_PER_THREAD * THREADS_PER_ROOM),
            format!("vm.max_map_count ({max} maps, {MAPS_PER_THREAD} per thread)"),
        );
    }
    if let Some(avail) = mem_available() {
        consider(
            avail / (BYTES_PER_THREAD * THREADS_PER_ROOM),
            format!(
                "available memory ({} MiB, about {} KiB per thread)",
                avail >> 20,
                BYTES_PER_THREAD >> 10
            ),
        );
    }
    (best.0.min(i32::MAX as u64) as u32, best.1)
}

/// Checks that `rooms` fit and raises the open-file limit to what they need.
pub(crate) fn reserve_for(rooms: u32) -> Result<(), String> {
    let (max, why) = max_rooms();
    if rooms > max {
        return Err(format!(
            "{rooms} rooms need {} connections and {} threads, but this machine holds at most {max} rooms: {why}",
            rooms as u64 * USERS_PER_ROOM as u64,
            rooms as u64 * THREADS_PER_ROOM
        ));
    }
    raise_nofile(rooms as u64 * USERS_PER_ROOM as u64 + open_files() + SPARE_FILES)
}

/// Raises the soft open-file limit to `needed` (never lowers it); as root also the hard one.
fn raise_nofile(needed: u64) -> Result<(), String> {
    let Some((soft, hard)) = nofile() else {
        return Ok(());
    };
    if soft >= needed {
        return Ok(());
    }
    setrlimit(Resource::RLIMIT_NOFILE, needed, hard.max(needed)).map_err(|e| {
        format!(
            "need {needed} open files but the limit is {soft} (hard {hard}) and cannot be \
             raised: {}",
            io::Error::from(e)
        )
    })
}

/// (soft, hard) RLIMIT_NOFILE.
fn nofile() -> Option<(u64, u64)> {
    getrlimit(Resource::RLIMIT_NOFILE).ok()
}

/// How far the open-file limit can go: the hard limit, or fs.nr_open when we may raise it.
fn nofile_ceiling(hard: u64) -> u64 {
    if geteuid().is_root() {
        sysctl_u64("fs.nr_open").unwrap_or(hard).max(hard)
    } else {
        hard
    }
}

fn open_files() -> u64 {
    own_open_files().unwrap_or(16)
}

/// Starts a chat thread with a small stack; a refusal names the limits that may be the cause.
pub fn spawn<T: Send + 'static>(
    name: &str,
    body: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<T>, String> {
    std::thread::Builder::new()
        .name(name.to_string())
        .stack_size(STACK_SIZE)
        .spawn(body)
        .map_err(|err| {
            format!(
                "cannot start thread {name}: {err} (limits: ulimit -u, kernel.threads-max, \
                 kernel.pid_max, a pids cgroup, vm.max_map_count, memory)"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_holds_a_few_rooms_but_not_two_billion() {
        let (max, why) = max_rooms();
        assert!(max >= 2, "only {max} rooms: {why}");
        assert!(reserve_for(2).is_ok());
        let err = reserve_for(i32::MAX as u32).unwrap_err();
        assert!(err.contains("at most"), "{err}");
    }
}
