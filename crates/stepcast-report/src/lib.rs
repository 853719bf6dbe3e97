//! stepcast results as stable JSON documents and as terminal text.
//!
//! This crate is the only owner of output schemas. [`json`] turns a trace, its window and its
//! replay, analysis and what-ifs into serializable documents (`stepcast.info/1`,
//! `stepcast.replay/1`, `stepcast.analyze/1`, ..., specified in `docs/json-schema.md`); [`table`] renders the same documents as text for a terminal. Nothing
//! here prints or touches files: every function returns a value or a `String`.
//!
//! ```no_run
//! use std::path::Path;
//!
//! let trace = stepcast_trace::read_trace(Path::new("trace.json.gz"))?;
//! let window = stepcast::graph::build(&trace, &stepcast::graph::BuildOptions::default());
//! let replay = stepcast::replay::self_replay(&window)?;
//! let document = stepcast_report::json::replay_json(&trace, &window, &replay, None);
//! let text = stepcast_report::table::replay_text(&document);
//! let json = serde_json::to_string_pretty(&document)?;
//! # let _ = (text, json);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

pub mod csv;
pub mod export;
pub mod html;
pub mod json;
pub mod markdown;
pub mod names;
pub mod table;
