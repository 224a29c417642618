//! `schedlab cleanup`: removes SysV objects left by schedlab processes that were killed outright.

use crate::sys::kernel::sysv;

pub fn main() -> anyhow::Result<()> {
    let removed = sysv::sweep_orphans()?;
    crate::outln!("removed {removed} SysV objects left by dead schedlab processes");
    Ok(())
}
