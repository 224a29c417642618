//! The reference job: a fixed amount of parallel CPU work standing in for make -j4 bzImage.

use anyhow::Result;

/// Arguments of `schedlab ref-job`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn main(_args: Args) -> Result<()> {
    anyhow::bail!("`schedlab ref-job` is not built yet")
}
