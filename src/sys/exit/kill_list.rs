//! What this process started and must take down on every exit path: a list that the code
//! starting a child (a forked task, a workload's process group) adds to and removes from, and
//! that an exit hook (the lifeline's, on a signal or a panic) empties to kill what it held.
//! Killing is the caller's: a pid, a process group and a group with cgroups end differently.

use std::sync::{Mutex, MutexGuard};

/// A list of what to kill, safe to share between the threads that start children and the
/// exit hooks that end them.
pub(crate) struct KillList<T> {
    entries: Mutex<Vec<T>>,
}

impl<T> KillList<T> {
    pub const fn new() -> Self {
        Self {
            entries: Mutex::new(Vec::new()),
        }
    }

    /// A panic while the list was held leaves it as it was: still the list to kill.
    fn lock(&self) -> MutexGuard<'_, Vec<T>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn add(&self, entry: T) {
        self.lock().push(entry);
    }

    #[cfg(test)]
    /// Forgets what ended by itself (reaped, stopped by its owner).
    pub fn remove(&self, entry: &T)
    where
        T: PartialEq,
    {
        self.lock().retain(|e| e != entry);
    }

    pub fn clear(&self) {
        self.lock().clear();
    }

    #[cfg(test)]
    /// Replaces the list with what is live now.
    pub fn replace(&self, entries: Vec<T>) {
        *self.lock() = entries;
    }

    #[cfg(test)]
    /// A copy of the list, which stays as it is.
    pub fn snapshot(&self) -> Vec<T>
    where
        T: Clone,
    {
        self.lock().clone()
    }

    /// Takes every entry out, so each is killed once even if two exit paths race.
    pub fn take(&self) -> Vec<T> {
        std::mem::take(&mut *self.lock())
    }

    #[cfg(test)]
    /// As [`take`](Self::take), for an exit hook that may run on the very thread that holds
    /// the list (a panic inside `add`): None then, where a lock would wait for ever.
    pub(crate) fn take_for_exit(&self) -> Option<Vec<T>> {
        match self.entries.try_lock() {
            Ok(mut list) => Some(std::mem::take(&mut *list)),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(std::mem::take(&mut *p.into_inner())),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }
}

impl<T> Default for KillList<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_taken_once_and_removed_ones_stay_out() {
        let list = KillList::new();
        for pid in [10, 11, 12] {
            list.add(pid);
        }
        list.remove(&11);
        assert_eq!(list.snapshot(), [10, 12]);
        assert_eq!(list.take(), [10, 12]);
        assert!(list.take().is_empty(), "a second exit path finds nothing");
        list.replace(vec![7]);
        assert_eq!(list.take_for_exit(), Some(vec![7]));
    }

    #[test]
    fn an_exit_hook_does_not_wait_for_the_thread_holding_the_list() {
        let list = KillList::new();
        list.add(1);
        let held = list.lock();
        assert_eq!(list.take_for_exit(), None);
        drop(held);
        assert_eq!(list.take_for_exit(), Some(vec![1]));
    }
}
