//! Progress bars for long stages, drawn on a terminal only (indicatif hides them otherwise:
//! its default target is stderr, drawn only when stderr is a TTY).

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar counting `len` items of `stage`.
pub fn bar(len: u64, stage: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template("{msg} {bar:40} {pos}/{len} ({elapsed})") {
        bar.set_style(style);
    }
    bar.set_message(stage.to_string());
    bar
}

/// A spinner for a stage of unknown length.
pub fn spinner(stage: &str) -> ProgressBar {
    let spinner = ProgressBar::new_spinner();
    spinner.set_message(stage.to_string());
    spinner.enable_steady_tick(Duration::from_millis(200));
    spinner
}
