//! A plain CPU hog: threads that spin.

use anyhow::Result;

/// Arguments of `schedlab cpu-hog`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn main(_args: Args) -> Result<()> {
    anyhow::bail!("`schedlab cpu-hog` is not built yet")
}
