//! Shared memory: a mapping that a forked child (anonymous) or an exec'd program (a memfd's)
//! sees as its parent does, unmapped when dropped. The memory is reached only through
//! [`SharedMapping::get`] and [`SharedMapping::slice`], which check bounds and alignment, as
//! types that are valid for any bytes and safe to share between processes ([`Shareable`]):
//! atomics, and `repr(C)` structs of them.

use std::ffi::CStr;
use std::io;
use std::num::NonZeroUsize;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64};

use nix::sys::memfd::{memfd_create, MFdFlags};
use nix::sys::mman::{mmap, mmap_anonymous, munmap, MapFlags, ProtFlags};

/// A type that may live in shared memory and be read through a shared reference.
///
/// # Safety
/// Every bit pattern must be a valid value (a fresh mapping is zeros, another process may
/// have stored anything), and all access through `&Self` must be atomic (no plain field a
/// writer could race with), so that `&Self` is sound from any thread of any process.
pub unsafe trait Shareable: Sync {}

// SAFETY: an atomic integer is valid for any bits and is only ever accessed atomically.
unsafe impl Shareable for AtomicU64 {}
// SAFETY: an atomic integer is valid for any bits and is only ever accessed atomically.
unsafe impl Shareable for AtomicU32 {}
// SAFETY: an atomic integer is valid for any bits and is only ever accessed atomically.
unsafe impl Shareable for AtomicI32 {}
// SAFETY: an array of Shareable values is valid for any bits element by element.
unsafe impl<T: Shareable, const N: usize> Shareable for [T; N] {}

/// A read-write shared mapping, unmapped when dropped.
pub(crate) struct SharedMapping {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: Send: the mapping is owned by this value alone and unmapped once, in Drop; its
// memory is only handed out as `&T` with `T: Shareable`, which any thread may use.
unsafe impl Send for SharedMapping {}
// SAFETY: Sync: a shared SharedMapping hands out only `&T` with `T: Shareable` (Sync, atomic).
unsafe impl Sync for SharedMapping {}

impl SharedMapping {
    /// `len` bytes of zeros shared with the children this process forks afterwards.
    pub(crate) fn anonymous(len: usize) -> io::Result<Self> {
        Self::map(len, None)
    }

    /// The first `len` bytes of `fd` (a memfd, a file), shared with whoever else maps it.
    /// The file must be at least `len` bytes long: a page past its end faults on access.
    pub(crate) fn of_fd(fd: impl AsFd, len: usize) -> io::Result<Self> {
        Self::map(len, Some(fd.as_fd()))
    }

    fn map(len: usize, fd: Option<BorrowedFd>) -> io::Result<Self> {
        let size = NonZeroUsize::new(len).ok_or(io::ErrorKind::InvalidInput)?;
        let prot = ProtFlags::PROT_READ | ProtFlags::PROT_WRITE;
        // SAFETY: a new mapping (no address hint) touches no existing memory.
        let base = unsafe {
            match fd {
                Some(fd) => mmap(None, size, prot, MapFlags::MAP_SHARED, fd, 0),
                None => mmap_anonymous(None, size, prot, MapFlags::MAP_SHARED),
            }
        }?;
        Ok(Self {
            base: base.cast(),
            len,
        })
    }

    /// Where the mapping starts in this process: for telling another process an offset.
    pub fn addr(&self) -> usize {
        self.base.as_ptr() as usize
    }

    /// The `T` at byte `offset`. Panics if it does not lie inside the mapping or is misaligned.
    pub fn get<T: Shareable>(&self, offset: usize) -> &T {
        &self.slice(offset, 1)[0]
    }

    /// `count` values of `T` from byte `offset`. Panics if they do not lie inside the mapping
    /// or are misaligned.
    pub fn slice<T: Shareable>(&self, offset: usize, count: usize) -> &[T] {
        let bytes = std::mem::size_of::<T>().checked_mul(count);
        let end = bytes.and_then(|b| offset.checked_add(b));
        assert!(
            end.is_some_and(|e| e <= self.len),
            "{count} values of {} bytes at {offset} pass the end of a {}-byte mapping",
            std::mem::size_of::<T>(),
            self.len
        );
        assert_eq!(
            (self.addr() + offset) % std::mem::align_of::<T>(),
            0,
            "misaligned shared value at {offset}"
        );
        // SAFETY: the values lie inside the live mapping and are aligned (checked above); T is
        // Shareable, so any bytes are a valid T and shared access is atomic; the slice borrows
        // `self`, so it cannot outlive the unmap.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr().add(offset).cast::<T>(), count) }
    }
}

impl Drop for SharedMapping {
    fn drop(&mut self) {
        // SAFETY: `base` and `len` are the mapping made in `anonymous` or `of_fd`; every
        // reference into it borrows `self`, so none outlives this.
        let _ = unsafe { munmap(self.base.cast(), self.len) };
    }
}

/// A new memfd of `len` zero bytes, closed on exec unless the caller clears the flag.
pub(crate) fn memfd(name: &CStr, len: usize) -> io::Result<OwnedFd> {
    let fd = memfd_create(name, MFdFlags::MFD_CLOEXEC)?;
    nix::unistd::ftruncate(&fd, len as i64)?;
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Relaxed;

    #[test]
    fn a_forked_child_stores_what_the_parent_loads() {
        let map = SharedMapping::anonymous(4096).unwrap();
        let word: &AtomicU64 = map.get(64);
        // SAFETY: the child only stores to the mapping and calls _exit.
        let pid = match unsafe { nix::unistd::fork() }.unwrap() {
            nix::unistd::ForkResult::Child => {
                word.store(42, Relaxed);
                // SAFETY: _exit ends the child at once, running nothing of the parent's (nix
                // has no _exit).
                unsafe { libc::_exit(0) }
            }
            nix::unistd::ForkResult::Parent { child } => child,
        };
        let status = nix::sys::wait::waitpid(pid, None).unwrap();
        assert_eq!(
            status,
            nix::sys::wait::WaitStatus::Exited(status.pid().unwrap(), 0)
        );
        assert_eq!(word.load(Relaxed), 42);
    }

    #[test]
    fn a_memfd_is_seen_through_a_second_mapping() {
        let fd = memfd(c"schedlab-test", 128).unwrap();
        let a = SharedMapping::of_fd(&fd, 128).unwrap();
        let b = SharedMapping::of_fd(&fd, 128).unwrap();
        a.slice::<AtomicU32>(0, 32)[31].store(7, Relaxed);
        assert_eq!(b.get::<AtomicU32>(124).load(Relaxed), 7);
        assert_eq!(b.get::<AtomicU64>(0).load(Relaxed), 0);
    }

    #[test]
    #[should_panic(expected = "pass the end")]
    fn a_value_past_the_end_is_refused() {
        let map = SharedMapping::anonymous(64).unwrap();
        map.get::<AtomicU64>(64);
    }

    #[test]
    #[should_panic(expected = "misaligned")]
    fn a_misaligned_value_is_refused() {
        let map = SharedMapping::anonymous(64).unwrap();
        map.get::<AtomicU64>(4);
    }
}
