//! hackbench: groups of senders and receivers over socketpairs or pipes (seed 000).

use anyhow::Result;

/// Arguments of `schedlab hackbench`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn main(_args: Args) -> Result<()> {
    anyhow::bail!("`schedlab hackbench` is not built yet")
}

/// Rewrites the seed's single-dash spelling (`-pipe`) into the modern one before parsing.
pub fn rewrite_legacy_args(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    args
}
