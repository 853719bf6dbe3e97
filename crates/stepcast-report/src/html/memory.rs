//! Memory over time for the report: each device's allocated bytes through the window, thinned
//! to what a chart can show without losing its peaks.

use serde::Serialize;
use stepcast::analyze::memory::DeviceMemory;

/// Points kept per curve: the smallest and the largest value of each of this many slices of
/// time, so that no peak or trough is lost.
const BUCKETS: usize = 600;

/// One device's allocated bytes over time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryCurve {
    /// Device index; `-1` for host memory.
    pub device: i64,
    /// `(time from the trace origin in ns, allocated bytes)`, in time order.
    pub points: Vec<(i64, i64)>,
    /// The recorded points the curve was thinned from.
    pub recorded_points: usize,
}

impl MemoryCurve {
    /// The curve of `memory`.
    pub fn new(memory: &DeviceMemory) -> MemoryCurve {
        let all: Vec<(i64, i64)> = memory
            .timeline
            .iter()
            .map(|point| (point.time_ns, point.allocated_bytes))
            .collect();
        MemoryCurve {
            device: memory.device,
            points: thin(&all, BUCKETS),
            recorded_points: all.len(),
        }
    }
}

/// `points` (in time order) cut into `buckets` equal slices of time, each kept as its lowest
/// and highest point in time order; all of them when there are few.
fn thin(points: &[(i64, i64)], buckets: usize) -> Vec<(i64, i64)> {
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return Vec::new();
    };
    if points.len() <= 2 * buckets {
        return points.to_vec();
    }
    let span = (last.0 - first.0).max(1) as i128;
    let mut out = Vec::with_capacity(2 * buckets + 1);
    let bucket_of =
        |t: i64| (((t - first.0) as i128 * buckets as i128 / span) as usize).min(buckets - 1);
    for run in points.chunk_by(|a, b| bucket_of(a.0) == bucket_of(b.0)) {
        let low = run.iter().min_by_key(|p| (p.1, p.0)).copied();
        let high = run
            .iter()
            .max_by_key(|p| (p.1, std::cmp::Reverse(p.0)))
            .copied();
        if let (Some(low), Some(high)) = (low, high) {
            if low.0 <= high.0 {
                out.push(low);
                if high != low {
                    out.push(high);
                }
            } else {
                out.push(high);
                out.push(low);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::thin;

    #[test]
    fn thinning_keeps_the_peak() {
        let points: Vec<(i64, i64)> = (0..10_000)
            .map(|t| (t, if t == 4321 { 99 } else { t % 7 }))
            .collect();
        let thinned = thin(&points, 100);
        assert!(thinned.len() <= 200);
        assert!(thinned.contains(&(4321, 99)));
        assert!(thinned.windows(2).all(|w| w[0].0 <= w[1].0));
    }
}
