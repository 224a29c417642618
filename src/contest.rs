//! contest: time a reference job alone and under each load (seed 003).

use anyhow::Result;

/// Arguments of `schedlab contest`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn main(_args: Args) -> Result<()> {
    anyhow::bail!("`schedlab contest` is not built yet")
}
