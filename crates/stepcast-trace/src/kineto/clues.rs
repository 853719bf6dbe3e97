//! What a Chrome-trace file that holds no event stepcast understands looks like.
//!
//! Many tools write the Chrome trace format (BytePS, TensorFlow, MindSpore), and their
//! files parse as JSON events, but none of their records is a Kineto op, call or kernel. Read as
//! a Kineto trace such a file would replay as an empty window with a perfect fidelity; instead
//! the reader refuses it and names the tool that seems to have written it. Only the records the
//! reader skips are looked at, so a Kineto trace pays nothing for this.
//!
//! Horovod's timeline and BytePS's `comm.json` are read (`horovod/`, `byteps/`, rows of their
//! own in the detection table); what is left here for BytePS is what those files are not
//! (byteprofile's merged `FW.`/`BW.`/`Comm.` traces, server-side `PUSH_REQ` records). The marks are
//! the names each other tool writes, from its sources: BytePS's communication traces (stages `COORDINATE_REDUCE`, `PUSH`, `PULL`,
//! ByteProfile's `Comm.`/`FW.`/`BW.` names), TensorFlow's timeline and trace viewer (category
//! `Op`/`DataFlow`, processes named after `/job:`, `/device:` or `/host:CPU`), MindSpore's
//! timeline (operator scope names `Default/...`, `Gradients/...`; processes such as
//! `Ascend Op`, `HostCpuOps`, `Step Trace`).

use super::raw::{RawEvent, RawText};

/// A tool whose Chrome-trace output stepcast does not read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lookalike {
    BytePs,
    TensorFlow,
    MindSpore,
}

impl Lookalike {
    const ALL: [Lookalike; 3] = [
        Lookalike::BytePs,
        Lookalike::TensorFlow,
        Lookalike::MindSpore,
    ];

    pub fn describe(self) -> &'static str {
        match self {
            Lookalike::BytePs => {
                "a BytePS/byteprofile trace of records stepcast does not read (it reads BytePS's own `comm.json`)"
            }
            Lookalike::TensorFlow => "a TensorFlow timeline",
            Lookalike::MindSpore => "a MindSpore (MindInsight) timeline",
        }
    }
}

/// Marks of each [`Lookalike`] seen among the skipped records.
#[derive(Debug, Default)]
pub struct Clues {
    /// Records bearing each tool's marks, in [`Lookalike::ALL`] order.
    marks: [u64; 3],
}

impl Clues {
    /// Looks at a record the reader did not keep.
    pub fn look(&mut self, raw: &RawEvent) {
        let name = raw.name.as_ref().map_or(&b""[..], RawText::as_bytes);
        let cat = raw.cat.as_deref().unwrap_or("");
        let is_process_name = raw.ph.as_deref() == Some("M") && name == b"process_name";
        let label = if is_process_name {
            raw.args
                .as_ref()
                .and_then(|a| a.name.as_deref())
                .unwrap_or("")
                .as_bytes()
        } else {
            name
        };
        if let Some(tool) = mark_of(label, cat) {
            self.marks[tool as usize] += 1;
        }
    }

    /// The tool whose marks are most common, if any was seen.
    pub fn best(&self) -> Option<Lookalike> {
        Lookalike::ALL
            .iter()
            .copied()
            .filter(|&tool| self.marks[tool as usize] > 0)
            .max_by_key(|&tool| (self.marks[tool as usize], std::cmp::Reverse(tool)))
    }
}

/// The tool a record's name (or process name) and category point to.
fn mark_of(name: &[u8], cat: &str) -> Option<Lookalike> {
    const BYTEPS: &[&[u8]] = &[
        b"COORDINATE_REDUCE",
        b"COORDINATE_PUSH",
        b"COORDINATE_BROADCAST",
        b"PCIE_REDUCE",
        b"COPYD2H",
        b"COPYH2D",
        b"PUSH_REQ",
        b"PULL_REQ",
        b"PUSH_RES",
        b"PULL_RES",
    ];
    const MINDSPORE_PROCESSES: &[&[u8]] = &[
        b"Ascend Op",
        b"AI Core Op",
        b"AI CPU Op",
        b"HostCpuOps",
        b"Step Trace",
        b"Merged Computation Op",
        b"Communication Op",
    ];
    if BYTEPS.iter().any(|mark| contains(name, mark))
        || name.ends_with(b".PUSH")
        || name.ends_with(b".PULL")
        || name.starts_with(b"Comm.")
    {
        return Some(Lookalike::BytePs);
    }
    if cat == "Op"
        || cat == "DataFlow"
        || name.starts_with(b"/job:")
        || name.starts_with(b"/device:")
        || name.starts_with(b"/host:CPU")
    {
        return Some(Lookalike::TensorFlow);
    }
    if name.starts_with(b"Default/")
        || name.starts_with(b"Gradients/")
        || MINDSPORE_PROCESSES.contains(&name)
    {
        return Some(Lookalike::MindSpore);
    }
    None
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::{Lookalike, mark_of};

    #[test]
    fn each_tool_is_told_by_its_own_names() {
        let cases: [(&[u8], &str, Option<Lookalike>); 7] = [
            (b"NEGOTIATE_ALLREDUCE", "", None),
            (b"Comm.gradient_3.PUSH", "", Some(Lookalike::BytePs)),
            (b"COORDINATE_REDUCE", "", Some(Lookalike::BytePs)),
            (b"MatMul", "Op", Some(Lookalike::TensorFlow)),
            (
                b"/job:localhost/replica:0/task:0/device:GPU:0 Compute",
                "",
                Some(Lookalike::TensorFlow),
            ),
            (
                b"Default/network-WithLossCell/Conv2D-op1",
                "",
                Some(Lookalike::MindSpore),
            ),
            (b"aten::mm", "cpu_op", None),
        ];
        for (name, cat, expected) in cases {
            assert_eq!(
                mark_of(name, cat),
                expected,
                "{}",
                String::from_utf8_lossy(name)
            );
        }
    }
}
