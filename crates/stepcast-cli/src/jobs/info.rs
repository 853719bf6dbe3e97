//! `info`: what a trace holds and how its graph was built.

use stepcast_report::json::{InfoJson, info_json};

use super::Loaded;

pub fn info(loaded: &Loaded) -> InfoJson {
    let mut document = info_json(&loaded.trace, &loaded.window);
    document.trace.file = loaded.file();
    document
}
