//! `advise`: every built-in optimization and useful combinations, ranked by predicted gain.

use anyhow::Context as _;
use stepcast::whatif::Peers;
use stepcast::whatif::models::LoaderHost;
use stepcast_report::json::{AdviseJson, advise_json};

use super::{Loaded, Progress};

/// `advise TRACE`, on the recorded run's `host` as the user described it.
pub fn advise(
    loaded: &Loaded,
    peers: Peers,
    host: LoaderHost,
    progress: &dyn Progress,
) -> anyhow::Result<AdviseJson> {
    progress.update("advising", 0, 1);
    let advice = stepcast::whatif::advise_on(&loaded.context(peers), host)
        .with_context(|| format!("cannot advise on {}", loaded.path.display()))?;
    progress.update("advising", 1, 1);
    let mut document = advise_json(&loaded.trace, &loaded.window, &advice);
    document.set_file(loaded.file());
    Ok(document)
}
