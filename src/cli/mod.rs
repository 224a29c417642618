//! The commands that are not the dashboard, one file each.

pub mod cleanup;
pub mod compare;
pub mod contest;
pub mod plot;
pub mod replay;
pub mod run;
pub mod tui;
