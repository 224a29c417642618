//! Files kept open and re-read with `pread` at offset 0, the probe's one way of reading the
//! kernel: about ten times cheaper than open/read/close for /proc's small files.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// A file kept open and re-read from offset 0; or, when descriptors run out, a path
/// reopened each time.
pub(crate) enum Reader {
    Open(File),
    Path(PathBuf),
}

/// Why a read failed.
pub(crate) enum ReadErr {
    /// The task or process has exited (ENOENT, ESRCH).
    Gone,
    /// Not allowed (hidepid, permissions) or something else; the reason.
    Failed(String),
}

pub(crate) fn classify(err: io::Error, path: &Path) -> ReadErr {
    match err.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ESRCH) => ReadErr::Gone,
        _ if path.as_os_str().is_empty() => ReadErr::Failed(err.to_string()),
        _ => ReadErr::Failed(format!("{}: {err}", path.display())),
    }
}

impl Reader {
    pub(crate) fn open(path: PathBuf) -> Result<Reader, ReadErr> {
        match File::open(&path) {
            Ok(f) => {
                use std::os::fd::AsRawFd;
                if crate::sys::kernel::fdtable::too_near_limit(f.as_raw_fd()) {
                    // Kept open, it would take a descriptor the next listing needs.
                    return Ok(Reader::Path(path));
                }
                crate::sys::kernel::fdtable::keep_ahead(f.as_raw_fd());
                Ok(Reader::Open(f))
            }
            Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)) => {
                Ok(Reader::Path(path))
            }
            Err(e) => Err(classify(e, &path)),
        }
    }

    /// A file read only now and then (a thread's stat, status or sched): kept open as by
    /// [`Reader::open`] while the limit holds every watched thread's files, and otherwise
    /// opened at each read, leaving the descriptors to the files read at every sweep. Not
    /// opened here then: a thread gone reads as gone at its first read.
    pub(crate) fn open_rare(path: PathBuf) -> Result<Reader, ReadErr> {
        if crate::sys::kernel::fdtable::rare_files_fit() {
            Reader::open(path)
        } else {
            Ok(Reader::Path(path))
        }
    }

    /// Reads the whole file into `buf` (cleared first).
    pub(crate) fn read<'a>(&self, buf: &'a mut Vec<u8>) -> Result<&'a [u8], ReadErr> {
        match self {
            // The caller names the file: paths are not kept per open file.
            Reader::Open(f) => pread_all(f, buf).map_err(|e| classify(e, Path::new(""))),
            Reader::Path(p) => {
                let f = File::open(p).map_err(|e| classify(e, p))?;
                pread_all(&f, buf).map_err(|e| classify(e, p))
            }
        }
    }
}

fn pread_all<'a>(f: &File, buf: &'a mut Vec<u8>) -> io::Result<&'a [u8]> {
    use std::os::fd::AsRawFd;
    buf.clear();
    if buf.capacity() < 4096 {
        buf.reserve(4096);
    }
    loop {
        let len = buf.len();
        let spare = buf.capacity() - len;
        // pread straight into the spare capacity: no zero-filling of a buffer per read (raw
        // libc: nix's pread wants an initialised slice, which would cost that zero-filling).
        // SAFETY: the pointer and length describe the vector's spare capacity, which is
        // allocated and writable; the kernel writes at most `spare` bytes there.
        let n = unsafe {
            libc::pread(
                f.as_raw_fd(),
                buf.as_mut_ptr().add(len).cast(),
                spare,
                len as libc::off_t,
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        // SAFETY: the kernel initialised n bytes past the old length, within capacity.
        unsafe { buf.set_len(len + n as usize) };
        // /proc files are produced whole by one read when the buffer is large enough; only a
        // full buffer needs another round.
        if n == 0 || buf.len() < buf.capacity() {
            break;
        }
        buf.reserve(buf.capacity());
    }
    Ok(&buf[..])
}

/// Reads an open file whole into `buf` (cleared first), from offset 0.
pub(crate) fn read_file(f: &File, buf: &mut Vec<u8>) -> Result<(), ReadErr> {
    pread_all(f, buf).map_err(|e| classify(e, Path::new("")))?;
    Ok(())
}

pub(crate) fn read_path(path: &Path, buf: &mut Vec<u8>) -> Result<(), ReadErr> {
    let f = File::open(path).map_err(|e| classify(e, path))?;
    pread_all(&f, buf).map_err(|e| classify(e, path))?;
    Ok(())
}
