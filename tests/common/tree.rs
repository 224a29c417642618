//! The repository's own files, for the tests that check what is written in them.

use std::fs;
use std::path::{Path, PathBuf};

/// The repository's root.
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` (relative to the repository) whose extension is `ext`, sorted, as
/// paths relative to the repository.
pub fn files_under(dir: &str, ext: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, ext, out);
            } else if path.extension().is_some_and(|x| x == ext) {
                out.push(path.strip_prefix(repo()).unwrap().to_path_buf());
            }
        }
    }
    let mut out = Vec::new();
    walk(&repo().join(dir), ext, &mut out);
    out
}
