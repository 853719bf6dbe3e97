//! Placing slices on tracks so that no two slices of one track partially overlap.
//!
//! The Chrome trace event format draws the complete events of one thread as a stack: two
//! slices of a track must either be disjoint or one must contain the other. Viewers handle a
//! partial overlap badly (Perfetto cuts or drops the later slice; the legacy viewer draws it
//! over its neighbour), so the export never writes one. A logical track whose slices would
//! partially overlap is split into levels: each slice goes on the first level where it is
//! disjoint from, or nested in, what is already there.

/// The half-open interval `[start, end)` in nanoseconds. A zero-length slice `[t, t]` is a point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Interval {
    pub start_ns: i64,
    pub end_ns: i64,
}

/// Splits `items` into levels with no partial overlap within a level, each level sorted by
/// start (the longer first on a tie, so a parent precedes its children).
///
/// Slices `a` and `b` with `a.start <= b.start` partially overlap when
/// `b.start < a.end < b.end`; touching slices (`a.end == b.start`) do not. Level 0 takes every
/// slice that fits there, so a track without overlaps stays one level. Greedy and
/// deterministic: O(n log n) for the sort plus O(n × levels).
pub(super) fn place<T>(mut items: Vec<T>, interval: impl Fn(&T) -> Interval) -> Vec<Vec<T>> {
    // A stable sort keeps the caller's order among identical intervals.
    items.sort_by_key(|item| {
        let span = interval(item);
        (span.start_ns, std::cmp::Reverse(span.end_ns))
    });
    // Per level: the ends of the slices still open at the current start, innermost last.
    let mut open: Vec<Vec<i64>> = Vec::new();
    let mut levels: Vec<Vec<T>> = Vec::new();
    for item in items {
        let span = interval(&item);
        let end_ns = span.end_ns.max(span.start_ns);
        let mut level = 0;
        loop {
            if level == open.len() {
                open.push(Vec::new());
                levels.push(Vec::new());
            }
            let stack = &mut open[level];
            // Slices that ended by this start can hold nothing more: later slices start later.
            while stack.last().is_some_and(|&end| end <= span.start_ns) {
                stack.pop();
            }
            if stack.last().is_none_or(|&end| end_ns <= end) {
                stack.push(end_ns);
                levels[level].push(item);
                break;
            }
            level += 1;
        }
    }
    levels
}

#[cfg(test)]
mod tests {
    use super::{Interval, place};

    /// Places `(start, end)` pairs and returns each level's pairs.
    fn check(spans: &[(i64, i64)]) -> Vec<Vec<(i64, i64)>> {
        place(spans.to_vec(), |&(start_ns, end_ns)| Interval {
            start_ns,
            end_ns,
        })
    }

    #[test]
    fn disjoint_and_nested_slices_share_a_level() {
        let levels = check(&[(10, 20), (0, 10), (2, 8), (2, 4), (4, 4), (20, 20)]);
        assert_eq!(
            levels,
            vec![vec![(0, 10), (2, 8), (2, 4), (4, 4), (10, 20), (20, 20)]]
        );
    }

    #[test]
    fn a_partial_overlap_moves_to_the_next_level() {
        let levels = check(&[(0, 10), (5, 15), (12, 14), (16, 20), (6, 7)]);
        assert_eq!(
            levels,
            vec![vec![(0, 10), (6, 7), (12, 14), (16, 20)], vec![(5, 15)]]
        );
    }

    #[test]
    fn a_chain_of_overlaps_alternates_between_two_levels() {
        let levels = check(&[(0, 10), (8, 18), (16, 26), (24, 34)]);
        assert_eq!(
            levels,
            vec![vec![(0, 10), (16, 26)], vec![(8, 18), (24, 34)]]
        );
    }
}
