//! Leaving nothing behind, whatever ends the process: the lifeline (signals, panics, a lost
//! parent), the lists of what this process started and must take down (`kill_list`), whole
//! process groups at exit (`groups`), stdout and stderr that never panic (`output`), and the
//! knobs changed on attached processes put back (`undo`).

pub mod groups;
pub(crate) mod kill_list;
pub mod lifeline;
pub mod output;
pub mod undo;
