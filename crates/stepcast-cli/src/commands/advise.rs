//! `stepcast advise TRACE`: every built-in optimization and useful combinations, ranked by
//! predicted gain.

use anyhow::Context as _;
use stepcast::analyze::mapping::map;
use stepcast::whatif::{Context, advise};
use stepcast_report::{json, table};

use crate::args::AdviseArgs;

/// Runs `advise` and returns its output (text, or JSON with `--json`).
pub fn run(args: &AdviseArgs) -> anyhow::Result<String> {
    let (trace, window) = super::load(&args.trace)?;
    let mapping = map(&trace, &window);
    let context = Context {
        trace: &trace,
        window: &window,
        mapping: &mapping,
    };
    let advice =
        advise(&context).with_context(|| format!("cannot advise on {}", args.trace.display()))?;
    let mut document = json::advise_json(&trace, &window, &advice);
    document.trace.file = Some(args.trace.display().to_string());
    if args.output.json {
        super::to_json(&document)
    } else {
        Ok(table::advise_text(&document))
    }
}
