//! Progress for long work (large traces, `advise`, job folders, the report): the library's
//! [`Progress`] hooks (`stepcast_cli::jobs`, the same ones the Python package reports
//! through) drawn as a spinner, or a bar for work counted in several items, on stderr when
//! stderr is a terminal; nothing at all on a pipe or a file, so that scripted output never
//! holds control characters.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use stepcast_cli::jobs::Progress;

/// A progress indicator; inert when stderr is not a terminal.
pub struct Terminal {
    bar: Option<ProgressBar>,
    /// Whether the indicator is drawn as a bar now (else a spinner).
    counted: Mutex<bool>,
}

impl Terminal {
    /// An indicator on stderr if it is a terminal a person watches, else one that draws nothing.
    pub fn new() -> Terminal {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(spinner_style());
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        });
        Terminal {
            bar,
            counted: Mutex::new(false),
        }
    }
}

impl Progress for Terminal {
    /// A stage of more than two items (rank traces, the models `compare` checks) is a bar of
    /// them; any other stage a spinner with its name.
    fn update(&self, stage: &str, done: usize, total: usize) {
        let Some(bar) = &self.bar else {
            return;
        };
        let counted = total > 2;
        if let Ok(mut drawn) = self.counted.lock()
            && *drawn != counted
        {
            bar.set_style(if counted {
                bar_style()
            } else {
                spinner_style()
            });
            *drawn = counted;
        }
        if counted {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        }
        bar.set_message(stage.to_string());
    }
}

impl Drop for Terminal {
    /// The indicator leaves no line behind: the answer follows on stdout.
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({elapsed})")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
}
