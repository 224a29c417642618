//! The load generators. Each is a plain function that runs the workload and counts its
//! operations into a [`crate::sys::shared::counters::CounterRegion`]; the same code serves the standalone
//! command (printing the original's report) and the dashboard, which starts it as a child
//! process of this binary.

pub mod chat;
pub mod children;
pub(crate) mod cpuhog;
pub mod fork_load;
pub mod hackbench;
pub mod msgbench;
pub mod pingpong;
pub mod placement;
pub(crate) mod refjob;
pub mod registry;
pub mod stamp;
pub mod wakeup;
