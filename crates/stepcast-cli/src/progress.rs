//! Progress for long work (large traces, `advise`, job folders, the report): a spinner or a
//! bar on stderr when stderr is a terminal, nothing at all on a pipe or a file, so that
//! scripted output never holds control characters.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress indicator; inert when stderr is not a terminal.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A spinner with a message (`reading t.json`), for work of unknown length.
    pub fn spinner(message: impl Into<String>) -> Progress {
        let bar = terminal().then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(100));
            bar.set_message(message.into());
            bar
        });
        Progress { bar }
    }

    /// A bar of `total` items (rank traces).
    pub fn bar(total: u64, message: impl Into<String>) -> Progress {
        let bar = terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({elapsed})")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.set_message(message.into());
            bar
        });
        Progress { bar }
    }

    /// Says what is being done now.
    pub fn message(&self, message: impl Into<String>) {
        if let Some(bar) = &self.bar {
            bar.set_message(message.into());
        }
    }

    /// One more item done.
    pub fn advance(&self) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }
}

impl Drop for Progress {
    /// The indicator leaves no line behind: the answer follows on stdout.
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Whether stderr is a terminal a person watches.
fn terminal() -> bool {
    std::io::stderr().is_terminal()
}
