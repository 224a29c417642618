//! The engine every frontend is a client of: the Lab, which owns the workloads, the probe and
//! the model.

pub mod lab;
pub mod thread;
