//! Embeds the git commit schedlab was built from (`git rev-parse --short HEAD`), so results and
//! recordings say which code measured them; "unknown" outside a git checkout (a crate
//! tarball) or without git.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (!s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // .git is a directory in a clone and a file in a worktree.
    let commit = if Path::new(".git").exists() {
        // Rebuild when HEAD moves: HEAD itself (a checkout) and the branch it names (a commit).
        for p in ["HEAD", "packed-refs"] {
            if let Some(path) = git(&["rev-parse", "--git-path", p]) {
                println!("cargo:rerun-if-changed={path}");
            }
        }
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            if let Some(path) = git(&["rev-parse", "--git-path", &branch]) {
                println!("cargo:rerun-if-changed={path}");
            }
        }
        git(&["rev-parse", "--short", "HEAD"])
    } else {
        None
    };
    println!(
        "cargo:rustc-env=SCHEDLAB_GIT_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );
}
