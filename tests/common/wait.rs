//! Waiting for a condition with a deadline: the one polling loop the test files share.

use std::time::{Duration, Instant};

/// Calls `check` every `every` until it returns `Ok`, for at most `within`. When time runs
/// out, the last `Err`: what was still not so, for the caller's message.
pub fn until<T, E>(
    within: Duration,
    every: Duration,
    mut check: impl FnMut() -> Result<T, E>,
) -> Result<T, E> {
    let deadline = Instant::now() + within;
    loop {
        match check() {
            Err(_) if Instant::now() < deadline => std::thread::sleep(every),
            done => return done,
        }
    }
}

/// Calls `left` every `every` until it returns nothing, for at most `within`. When time runs
/// out, what was still left, for the caller's message.
pub fn until_none_left<T>(
    within: Duration,
    every: Duration,
    mut left: impl FnMut() -> Vec<T>,
) -> Result<(), Vec<T>> {
    until(within, every, || {
        let now = left();
        if now.is_empty() {
            Ok(())
        } else {
            Err(now)
        }
    })
}
