//! Errors as every front end shows them: one line, and whether the request itself was invalid.

use std::fmt;

/// An invalid request found after the front end's own checks (an unknown model, a bad
/// parameter value): the binary exits with status 2 for it, as for clap's usage errors.
#[derive(Debug)]
pub struct Usage(pub anyhow::Error);

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", message(&self.0))
    }
}

impl std::error::Error for Usage {}

/// Marks an error as an invalid request (exit status 2).
pub fn usage(error: impl Into<anyhow::Error>) -> anyhow::Error {
    anyhow::Error::new(Usage(error.into()))
}

/// Whether `error` (or one of its causes) is an invalid request.
pub fn is_usage(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| cause.is::<Usage>())
}

/// The error and its causes on one line, like anyhow's `{:#}`, but leaving out a cause whose
/// text the message already holds (some errors quote their source in their own message).
pub fn message(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let cause = cause.to_string();
        if text.contains(&cause) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::message;

    #[test]
    fn message_leaves_out_causes_already_quoted() {
        let source = std::io::Error::other("disk on fire");
        let error = anyhow::Error::new(source).context("cannot read t.json: disk on fire");
        assert_eq!(message(&error), "cannot read t.json: disk on fire");
        let error = anyhow::anyhow!("inner").context("outer");
        assert_eq!(message(&error), "outer: inner");
    }
}
