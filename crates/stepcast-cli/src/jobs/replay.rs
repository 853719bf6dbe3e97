//! `replay TRACE`: the self-replay of every step against the recording.

use anyhow::Context as _;
use stepcast_report::json::{ReplayJson, replay_json};

use super::{Loaded, Progress};

/// The replay of every step; `step` (a `ProfilerStep` number) selects the one to report.
pub fn replay(
    loaded: &Loaded,
    step: Option<u64>,
    progress: &dyn Progress,
) -> anyhow::Result<ReplayJson> {
    if let Some(number) = step {
        loaded.step_index(number)?;
    }
    progress.update("replaying", 0, 1);
    let replay = stepcast::replay::self_replay(&loaded.window)
        .with_context(|| format!("cannot replay {}", loaded.path.display()))?;
    progress.update("replaying", 1, 1);
    let mut document = replay_json(&loaded.trace, &loaded.window, &replay, step);
    document.trace.file = loaded.file();
    Ok(document)
}
