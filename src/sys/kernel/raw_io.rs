//! read(2) and write(2) through `syscall` rather than glibc's wrappers, for the message loops
//! measured against C peers (hackbench's tasks, the pipe ping-pong). glibc's wrappers take
//! pthread's asynchronous-cancellation path (about 30 more instructions a call) once a process
//! has ever had a second thread, and that mark survives fork. The originals' children never had
//! one; ours inherit it from the lifeline's signal thread. The kernel sees the very same calls.

use std::os::fd::RawFd;

#[inline(always)]
pub(crate) fn read(fd: RawFd, buf: &mut [u8]) -> isize {
    // SAFETY: `buf` is live and writable for buf.len() bytes, exclusively borrowed; read(2)
    // writes at most that many. A closed fd is an error, not undefined behaviour.
    unsafe { libc::syscall(libc::SYS_read, fd, buf.as_mut_ptr(), buf.len()) as isize }
}

#[inline(always)]
pub(crate) fn write(fd: RawFd, buf: &[u8]) -> isize {
    // SAFETY: `buf` is live for buf.len() bytes; write(2) only reads them. A closed fd is an
    // error, not undefined behaviour.
    unsafe { libc::syscall(libc::SYS_write, fd, buf.as_ptr(), buf.len()) as isize }
}
