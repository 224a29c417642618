//! Explaining a deviation: variants of a scenario that each change one thing about the
//! workload (`variant`), what their repeated runs say against the scenario as it is
//! (`conclusion`), the kernel's own scheduler events recorded during one more run as it is
//! (`tracer` records, `evidence` counts; `groups` reads where the workloads' group entities
//! stood), and the report that puts them on a page (`report`).
//! The runs themselves are `run`'s, driven by `cli/explain.rs`.

pub mod conclusion;
pub mod evidence;
pub mod groups;
pub mod report;
pub mod tracer;
pub mod variant;
