//! Message, semaphore and pipe ping-pong between pairs of tasks (seed 004).

use anyhow::Result;

/// Arguments of `schedlab ipc-pingpong`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn main(_args: Args) -> Result<()> {
    anyhow::bail!("`schedlab ipc-pingpong` is not built yet")
}
