//! What a run's threads tell its main thread: a failure (the first one's reason), and how many
//! threads have finished. Touched once per thread or on an error, never per message, except
//! the abort flag, which the server's send threads load once per wake-up.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;

#[derive(Default)]
pub(crate) struct RunFlags {
    abort: AtomicBool,
    failed: AtomicBool,
    reason: Mutex<Option<String>>,
    finished: AtomicUsize,
}

impl RunFlags {
    /// Records a thread's failure; the first reason wins. Errors caused by our own abort
    /// (sockets shut down on purpose) are not failures.
    pub fn fail(&self, why: String) {
        if self.aborted() {
            return;
        }
        let mut reason = self.reason.lock().unwrap_or_else(|e| e.into_inner());
        if reason.is_none() {
            *reason = Some(why);
        }
        self.failed.store(true, SeqCst);
    }

    pub fn failure(&self) -> Option<String> {
        if !self.failed.load(SeqCst) {
            return None;
        }
        self.reason
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn abort(&self) {
        self.abort.store(true, SeqCst);
    }

    #[inline]
    pub(crate) fn aborted(&self) -> bool {
        self.abort.load(SeqCst)
    }

    pub(crate) fn thread_finished(&self) {
        self.finished.fetch_add(1, SeqCst);
    }

    pub fn finished(&self) -> usize {
        self.finished.load(SeqCst)
    }
}

/// Counts a thread as finished when it ends, however it ends.
pub(crate) struct FinishGuard<'a>(pub &'a RunFlags);

impl Drop for FinishGuard<'_> {
    fn drop(&mut self) {
        self.0.thread_finished();
    }
}
