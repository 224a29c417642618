//! Output files that are either whole or absent: written to a temporary file beside the
//! target and renamed over it only once complete, so an error or a crash never leaves a
//! partial file under the name the user asked for.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// A file being written; becomes `target` on [`AtomicFile::commit`], vanishes if dropped.
pub(crate) struct AtomicFile {
    target: PathBuf,
    /// None: the target is a device or a pipe, written in place.
    tmp: Option<PathBuf>,
    file: Option<File>,
}

impl AtomicFile {
    /// Creates the temporary file now, so an unwritable path fails before any work is done.
    /// A device or a pipe the user names (`-o /dev/null`, `-o /dev/stdout`, a FIFO) is
    /// written in place: renaming a file over it would replace it, and as root /dev/null
    /// itself would become a regular file.
    pub fn create(target: &Path) -> Result<Self> {
        let cannot = || format!("cannot write {}", target.display());
        let special = std::fs::metadata(target).is_ok_and(|m| !m.is_file() && !m.is_dir());
        let (tmp, file) = if special {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(target)
                .with_context(cannot)?;
            (None, file)
        } else {
            let tmp = temp_path_for(target);
            let file = File::create(&tmp).with_context(cannot)?;
            (Some(tmp), file)
        };
        Ok(AtomicFile {
            target: target.to_owned(),
            tmp,
            file: Some(file),
        })
    }

    /// The temporary path (same directory and extension as the target; the target itself
    /// when written in place), for writers that want a path rather than a File (the PNG
    /// encoder picks its format by extension).
    pub(crate) fn tmp_path(&self) -> &Path {
        self.tmp.as_deref().unwrap_or(&self.target)
    }

    pub fn file(&mut self) -> &mut File {
        self.file.as_mut().expect("open until commit")
    }

    /// Flushes to disk and renames over the target (a device or a pipe: just flushes).
    pub(crate) fn commit(mut self) -> Result<()> {
        let mut file = self.file.take().expect("open until commit");
        let done = match &self.tmp {
            Some(tmp) => file
                .sync_all()
                .and_then(|()| std::fs::rename(tmp, &self.target)),
            None => file.flush(),
        };
        done.with_context(|| format!("cannot write {}", self.target.display()))
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let (Some(_), Some(tmp)) = (&self.file, &self.tmp) {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

#[cfg(test)]
/// Writes `bytes` to `target` whole or not at all.
pub(crate) fn write_atomic(target: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = AtomicFile::create(target)?;
    f.file()
        .write_all(bytes)
        .with_context(|| format!("cannot write {}", target.display()))?;
    f.commit()
}

/// `dir/.name.tmp-PID.ext`: hidden, beside the target, keeping its extension.
fn temp_path_for(target: &Path) -> PathBuf {
    let stem = target
        .file_stem()
        .map_or_else(|| "out".into(), |s| s.to_string_lossy().into_owned());
    let ext = target
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let name = format!(".{stem}.tmp-{}{ext}", std::process::id());
    target.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipe_is_written_in_place_never_replaced() {
        // As /dev/null would be: a FIFO stands in, so a regression cannot break the machine.
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("out.json");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_atomic(&fifo, b"whole").unwrap();
        // Before joining: a renamed-over FIFO would leave the reader waiting for a writer.
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(reader.join().unwrap(), b"whole");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary left"
        );
    }

    #[test]
    fn temp_file_keeps_directory_and_extension() {
        let t = temp_path_for(Path::new("/a/b/plot.png"));
        assert_eq!(t.parent(), Some(Path::new("/a/b")));
        assert_eq!(t.extension().unwrap(), "png");
        assert!(t
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with(".plot.tmp-"));
    }

    #[test]
    fn dropped_without_commit_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("r.json");
        {
            let mut f = AtomicFile::create(&target).unwrap();
            f.file().write_all(b"half").unwrap();
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        write_atomic(&target, b"whole").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"whole");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
