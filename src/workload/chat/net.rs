//! The few socket operations the chat threads do, one syscall each in the normal case. The
//! relay's recv and send stay raw libc on purpose: they are the measured loop, compared with
//! the original chat_s/chat_c, and take the cell's raw pointer the kernel alone touches.

use std::io;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::{AsFd, BorrowedFd, RawFd};
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

/// Receives exactly `len` bytes into `buf`. MSG_WAITALL makes it one recv per message, as the
/// original's one read; the connection closing part-way is an error (a short read), and only a
/// signal interrupting the wait makes us ask again for the rest.
///
/// # Safety
/// `buf` must be valid for `len` bytes of writes. Only the kernel touches it here.
#[inline]
pub(crate) unsafe fn recv_exact(fd: RawFd, buf: *mut u8, len: usize) -> io::Result<()> {
    let mut done = 0;
    while done < len {
        let n = libc::recv(fd, buf.add(done).cast(), len - done, libc::MSG_WAITALL);
        if n > 0 {
            done += n as usize;
        } else if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                if done == 0 {
                    "connection closed by the peer".to_string()
                } else {
                    format!("short read: connection closed after {done} of {len} bytes")
                },
            ));
        } else {
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
    }
    Ok(())
}

/// Sends all `len` bytes of `buf` (one send per message on a blocking socket); never raises
/// SIGPIPE.
///
/// # Safety
/// `buf` must be valid for `len` bytes of reads.
#[inline]
pub(crate) unsafe fn send_all(fd: RawFd, buf: *const u8, len: usize) -> io::Result<()> {
    let mut done = 0;
    while done < len {
        let n = libc::send(fd, buf.add(done).cast(), len - done, libc::MSG_NOSIGNAL);
        if n >= 0 {
            done += n as usize;
        } else {
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
    }
    Ok(())
}

/// Wakes any thread blocked on this socket: its recv returns 0, its send fails.
pub(crate) fn shutdown(stream: &TcpStream) {
    let _ = stream.shutdown(Shutdown::Both);
}

/// Connects with a deadline, so that an unreachable server is an answer within seconds.
pub fn connect(addr: SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
    let stream = TcpStream::connect_timeout(&addr, timeout)?;
    // The originals left Nagle on; so do we: the kernel must see the same segments.
    Ok(stream)
}

/// Waits up to `timeout` for `fd` to become readable (or closed). Returns whether it did.
pub(crate) fn wait_readable(fd: impl AsFd, timeout: Duration) -> io::Result<bool> {
    loop {
        match readable(&[fd.as_fd()], Some(timeout)) {
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            done => return done.map(|ready| ready[0]),
        }
    }
}

/// Waits for any of `fds` to become readable (or closed), at most `wait` (None: as long as
/// it takes); which of them are. A signal interrupting the wait is an `Interrupted` error.
pub(crate) fn readable(fds: &[BorrowedFd], wait: Option<Duration>) -> io::Result<Vec<bool>> {
    let mut polled: Vec<PollFd> = fds
        .iter()
        .map(|fd| PollFd::new(*fd, PollFlags::POLLIN))
        .collect();
    let timeout = wait.map_or(PollTimeout::NONE, |d| {
        PollTimeout::try_from(d).unwrap_or(PollTimeout::MAX)
    });
    match poll(&mut polled, timeout) {
        Ok(_) => Ok(polled
            .iter()
            .map(|p| !matches!(p.revents(), Some(r) if r.is_empty()))
            .collect()),
        Err(e) => Err(io::Error::from(e)),
    }
}
