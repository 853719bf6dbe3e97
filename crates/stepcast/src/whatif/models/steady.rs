//! The steady steps' recorded time ranges, for asking of many events whether one began in a
//! steady step: a binary search, where a scan of the steps per event made a model's cost
//! grow with trace size times step count.

use crate::Window;
use crate::whatif::first_steady;

/// The recorded (start, marker end) of each steady step (the warm-up step, the first, left
/// out when there are three or more), sorted by start.
pub(crate) struct SteadySpans {
    starts: Vec<i64>,
    /// Per step, the latest end of it and every step before it: the spans may overlap (a
    /// marker that ends after the next step began), and the question is whether any holds
    /// the time.
    ends_so_far: Vec<i64>,
}

impl SteadySpans {
    pub(crate) fn new(window: &Window) -> SteadySpans {
        let first = first_steady(window).min(window.steps.len());
        SteadySpans::from_spans(
            window.steps[first..]
                .iter()
                .map(|s| (s.start_ns, s.marker_end_ns))
                .collect(),
        )
    }

    /// From (start, end) spans in any order.
    fn from_spans(mut spans: Vec<(i64, i64)>) -> SteadySpans {
        spans.sort_unstable();
        let mut latest = i64::MIN;
        let ends_so_far = spans
            .iter()
            .map(|&(_, end)| {
                latest = latest.max(end);
                latest
            })
            .collect();
        SteadySpans {
            starts: spans.iter().map(|&(start, _)| start).collect(),
            ends_so_far,
        }
    }

    /// Whether `ns` falls in a steady step: `start <= ns < end` for one of them.
    pub(crate) fn contains(&self, ns: i64) -> bool {
        let after = self.starts.partition_point(|&start| start <= ns);
        after > 0 && ns < self.ends_so_far[after - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the scan it replaces, on overlapping, nested, touching and empty spans.
    #[test]
    fn agrees_with_a_scan_of_the_spans() {
        // Out of order, as `from_spans` may be given them.
        let spans = [(20, 40), (0, 10), (5, 7), (10, 12), (25, 30), (50, 50)];
        let steady = SteadySpans::from_spans(spans.to_vec());
        for ns in -2..60 {
            let scan = spans.iter().any(|&(s, e)| ns >= s && ns < e);
            assert_eq!(steady.contains(ns), scan, "at {ns}");
        }
    }
}
