//! What the step's time is spent on: kernels mapped to ops, layers and phases; breakdowns,
//! statistics, memory. Reads a `Trace`, its `Window` and a replay; returns data.

pub mod breakdown;
pub mod critical;
pub mod hta;
pub mod mapping;
pub mod memory;
pub mod stats;
