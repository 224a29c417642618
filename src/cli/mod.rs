//! The commands, one file each: `tui` opens the dashboard on the live engine, `replay` on a
//! recording; the others (run, contest, compare, plot, cleanup) print or write their results.

pub mod cleanup;
pub mod compare;
pub mod contest;
pub mod plot;
pub mod replay;
pub mod run;
pub mod tui;
