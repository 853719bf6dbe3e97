//! `info`: what a trace holds and how its graph was built (and, with `--et`, how the
//! Execution Trace of the same run joins it).

use std::path::Path;

use stepcast_report::json::{ExecutionTraceJson, InfoJson, info_json};

use super::Loaded;

pub fn info(loaded: &Loaded) -> InfoJson {
    let mut document = info_json(&loaded.trace, &loaded.window);
    document.trace.file = loaded.file();
    document
}

/// [`info`] with the Execution Trace at `et` joined to the trace. The ET's read error names
/// its file.
pub fn info_with_et(loaded: &Loaded, et: &Path) -> anyhow::Result<InfoJson> {
    let mut document = info(loaded);
    let execution_trace = stepcast_trace::read_execution_trace(et)?;
    let joined = stepcast::et::join(&loaded.trace, &execution_trace);
    let data = stepcast::et::data_links(&loaded.trace, &execution_trace, &joined);
    let mut section = ExecutionTraceJson::new(&execution_trace, &joined, &data);
    section.file = Some(et.display().to_string());
    document.execution_trace = Some(section);
    Ok(document)
}
