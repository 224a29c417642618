//! The terminal dashboard.

use anyhow::Result;

/// Arguments of `schedlab tui`.
#[derive(clap::Args, Debug, Default)]
pub struct TuiArgs {}

pub fn main(_args: TuiArgs) -> Result<()> {
    anyhow::bail!("`schedlab tui` is not built yet")
}
