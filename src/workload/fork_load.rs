//! contest's fork_load: fork, exec a nil program, wait, repeat (seed 003).

use anyhow::Result;

/// Arguments of `schedlab fork-load`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn main(_args: Args) -> Result<()> {
    anyhow::bail!("`schedlab fork-load` is not built yet")
}
