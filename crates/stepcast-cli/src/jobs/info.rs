//! `info`: what a trace holds and how its graph was built (and, with `--et`, how the
//! Execution Trace of the same run joins it).

use stepcast_report::json::{ExecutionTraceJson, InfoJson, info_json};

use super::Loaded;

/// What `loaded` holds; with the Execution Trace joined to it, the join's coverage and the data
/// dependencies it states.
pub fn info(loaded: &Loaded) -> InfoJson {
    let mut document = info_json(&loaded.trace, &loaded.window);
    document.trace.file = loaded.file();
    if let Some(joined) = &loaded.execution_trace {
        let attached = &joined.attached;
        let mut section = ExecutionTraceJson::new(&joined.et, &attached.join, &attached.data);
        section.file = Some(joined.path.display().to_string());
        document.execution_trace = Some(section);
    }
    document
}
