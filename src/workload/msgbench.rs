//! msgbench: timed batches of msgget, msgsnd and msgctl (seed 004).

use anyhow::Result;

/// Arguments of `schedlab msgbench`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn main(_args: Args) -> Result<()> {
    anyhow::bail!("`schedlab msgbench` is not built yet")
}
