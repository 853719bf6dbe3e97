//! `analyze`: where the step's time goes.

use anyhow::Context as _;
use stepcast::whatif::Peers;
use stepcast::whatif::models::LoaderHost;
use stepcast_report::json::{AnalyzeJson, AnswerJson, advise_json, analyze_json};

use super::{Loaded, Progress};

/// The analysis of the window, with `step` (a `ProfilerStep` number) in detail; by default
/// the steady step closest to the median. Its statistics keep `top` names (`None`: all). It
/// leads with `advise`'s answer on `host`.
pub fn analyze(
    loaded: &Loaded,
    step: Option<u64>,
    top: Option<usize>,
    host: LoaderHost,
    progress: &dyn Progress,
) -> anyhow::Result<AnalyzeJson> {
    let step_index = match step {
        Some(number) => Some(loaded.step_index(number)?),
        None => None,
    };
    progress.update("analyzing", 0, 1);
    let analysis = stepcast::analyze::analyze_top(&loaded.trace, &loaded.window, step_index, top)
        .with_context(|| format!("cannot analyze {}", loaded.path.display()))?;
    progress.update("analyzing", 1, 1);
    let mut document = analyze_json(&loaded.trace, &loaded.window, &analysis, step);
    document.trace.file = loaded.file();
    document.answer = answer(loaded, host, progress);
    Ok(document)
}

/// The answer `advise` gives, which `analyze` leads with too; `None` where advise cannot run
/// on the trace (the analysis stands without it).
pub fn answer(loaded: &Loaded, host: LoaderHost, progress: &dyn Progress) -> Option<AnswerJson> {
    progress.update("ranking the what-ifs (advise)", 0, 1);
    let advice = stepcast::whatif::advise_on(&loaded.context(Peers::Skew), host).ok()?;
    progress.update("ranking the what-ifs (advise)", 1, 1);
    let mut document = advise_json(&loaded.trace, &loaded.window, &advice);
    document.set_file(loaded.file());
    Some(document.answer)
}
