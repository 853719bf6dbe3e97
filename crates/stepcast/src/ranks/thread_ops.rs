//! A host thread's ops as a rank keeps them for the straggler attribution: columns, and the
//! running maximum of their ends kept once per block of ops rather than per op. A rank of a
//! CPU-heavy job holds twice as many host ops as tasks, and at 32 bytes an op (24 for the op,
//! 8 for its running maximum) they were a third of a reduced job's memory; as columns with a
//! maximum per [`BLOCK`] ops they take 20.5.

use stepcast_trace::NameId;

use super::HostOp;

/// Ops per kept running maximum: a query scans at most this many ops past a binary search.
const BLOCK: usize = 16;

/// One thread's host ops, by start.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct ThreadOps {
    name: Vec<NameId>,
    start_ns: Vec<i64>,
    dur_ns: Vec<i64>,
    /// Per block of [`BLOCK`] ops: the largest end of every op up to the block's last.
    block_max_end_ns: Vec<i64>,
}

impl ThreadOps {
    /// No ops.
    pub const EMPTY: ThreadOps = ThreadOps {
        name: Vec::new(),
        start_ns: Vec::new(),
        dur_ns: Vec::new(),
        block_max_end_ns: Vec::new(),
    };

    /// The ops of one thread, given by start.
    pub fn new(ops: impl IntoIterator<Item = HostOp>) -> ThreadOps {
        let mut out = ThreadOps::EMPTY;
        let mut max_end = i64::MIN;
        for op in ops {
            out.name.push(op.name);
            out.start_ns.push(op.start_ns);
            out.dur_ns.push(op.dur_ns);
            max_end = max_end.max(op.end_ns());
            if out.name.len().is_multiple_of(BLOCK) {
                out.block_max_end_ns.push(max_end);
            }
        }
        if !out.name.len().is_multiple_of(BLOCK) {
            out.block_max_end_ns.push(max_end);
        }
        out.name.shrink_to_fit();
        out.start_ns.shrink_to_fit();
        out.dur_ns.shrink_to_fit();
        out
    }

    pub fn len(&self) -> usize {
        self.name.len()
    }

    fn op(&self, i: usize) -> HostOp {
        HostOp {
            name: self.name[i],
            start_ns: self.start_ns[i],
            dur_ns: self.dur_ns[i],
        }
    }

    fn ops(&self, range: std::ops::Range<usize>) -> impl Iterator<Item = HostOp> + '_ {
        range.map(|i| self.op(i))
    }

    /// The ops that overlap `from_ns..to_ns` or touch it: those starting by `to_ns`, from the
    /// first whose running end maximum reaches `from_ns` (every earlier one ended before it).
    pub fn near(&self, from_ns: i64, to_ns: i64) -> impl Iterator<Item = HostOp> + '_ {
        let block = self.block_max_end_ns.partition_point(|&end| end < from_ns);
        let mut first = self.len();
        if block < self.block_max_end_ns.len() {
            let mut max_end = block
                .checked_sub(1)
                .map_or(i64::MIN, |b| self.block_max_end_ns[b]);
            for i in block * BLOCK..self.len().min((block + 1) * BLOCK) {
                max_end = max_end.max(self.start_ns[i] + self.dur_ns[i]);
                if max_end >= from_ns {
                    first = i;
                    break;
                }
            }
        }
        let last = self.start_ns.partition_point(|&start| start <= to_ns);
        self.ops(first..last.max(first))
    }

    /// The ops starting within `from_ns..=to_ns`.
    pub fn starting(&self, from_ns: i64, to_ns: i64) -> impl Iterator<Item = HostOp> + '_ {
        let first = self.start_ns.partition_point(|&start| start < from_ns);
        let last = self.start_ns.partition_point(|&start| start <= to_ns);
        self.ops(first..last.max(first))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition `near` shortcuts: a scan of every op with its running end maximum.
    fn near_by_scan(ops: &[HostOp], from_ns: i64, to_ns: i64) -> Vec<HostOp> {
        let mut max_end = i64::MIN;
        let first = ops
            .iter()
            .position(|op| {
                max_end = max_end.max(op.end_ns());
                max_end >= from_ns
            })
            .unwrap_or(ops.len());
        let last = ops.partition_point(|op| op.start_ns <= to_ns);
        ops[first..last.max(first)].to_vec()
    }

    #[test]
    fn near_finds_what_a_scan_of_every_op_finds() {
        // Nested and overlapping ops of varied lengths, a long one early (its end holds the
        // running maximum across many blocks), deterministic.
        let mut ops = Vec::new();
        let mut seed = 7u64;
        for i in 0..200i64 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let dur_ns = if i == 3 {
                5_000
            } else {
                (seed >> 33) as i64 % 300
            };
            ops.push(HostOp {
                name: NameId(i as u32),
                start_ns: i * 20,
                dur_ns,
            });
        }
        let thread = ThreadOps::new(ops.iter().copied());
        for from_ns in (-50..4_500).step_by(37) {
            for span in [0, 10, 100, 1_000] {
                let got: Vec<HostOp> = thread.near(from_ns, from_ns + span).collect();
                assert_eq!(
                    got,
                    near_by_scan(&ops, from_ns, from_ns + span),
                    "{from_ns}+{span}"
                );
            }
        }
        assert_eq!(ThreadOps::new([]).near(0, 10).count(), 0);
    }
}
