//! stepcast's core: the dependency graph of a profiled window, its replay, and what the
//! replay tells. No I/O and no file paths: input is a [`stepcast_trace::Trace`], output is data.

pub mod analyze;
pub mod comm;
pub mod compare;
pub mod et;
pub mod graph;
pub mod optimize;
pub mod ranks;
pub mod replay;
pub mod simulate;
pub mod whatif;
mod window;

pub use window::{BuildReport, INFERRED_STEPS_NOTE, Step, Window};
