//! Explaining a deviation: variants of a scenario that each change one thing about the
//! workload (`variant`), what their repeated runs say against the scenario as it is
//! (`conclusion`), and the report that puts both on a page (`report`). The runs themselves are
//! `run`'s, driven by `cli/explain.rs`.

pub mod conclusion;
pub mod report;
pub mod variant;
