//! What an op, annotation, Python frame or kernel name says about the phase and layer it belongs
//! to. Names are matched as the PyTorch profiler writes them (2021 `Operator` schema and current
//! `cpu_op` / `user_annotation` / `python_function` schema alike).

use stepcast_trace::{EventKind, Interner, NameId};

/// Facts a name tells, as a set of bits: `## backward ##` both marks backward work and is not a
/// layer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct NameFlags(u16);

impl NameFlags {
    /// Autograd work: `autograd::engine::evaluate_function: X`, `XBackward0`, `AccumulateGrad`,
    /// a `## backward ##` annotation, a Python `backward` frame.
    pub const BACKWARD: NameFlags = NameFlags(1 << 0);
    /// `Optimizer.step#SGD.step`, `Optimizer.zero_grad#...`, an `optimizer` or `## zero_grad ##`
    /// annotation, a `torch/optim/` Python frame.
    pub const OPTIMIZER: NameFlags = NameFlags(1 << 1);
    /// `c10d::allreduce_`, `record_param_comms`, `nccl:all_reduce`, gloo and ProcessGroup ops.
    pub const COMMUNICATION: NameFlags = NameFlags(1 << 2);
    /// `enumerate(DataLoader)#...`, TorchRec's `## load_batch ##`-style stages and
    /// `torch/utils/data/` Python frames.
    pub const DATA_LOADING: NameFlags = NameFlags(1 << 3);
    /// `## forward ##`, `DistributedDataParallel.forward`, an `nn.Module: X` frame.
    pub const FORWARD: NameFlags = NameFlags(1 << 4);
    /// An `nn.Module: X` Python frame: a layer.
    pub const MODULE: NameFlags = NameFlags(1 << 5);
    /// Fused or multi-tensor optimizer work (`multi_tensor_apply`, `fused_adam`, `_foreach_`):
    /// weaker than a stack marker, since clipping and AMP unscaling use the same kernels.
    pub const FUSED_OPTIMIZER: NameFlags = NameFlags(1 << 6);
    /// Not a layer: step markers, `##`-style markers and phase annotations.
    pub const MARKER: NameFlags = NameFlags(1 << 7);

    pub fn contains(self, other: NameFlags) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn union(self, other: NameFlags) -> NameFlags {
        NameFlags(self.0 | other.0)
    }

    fn set_if(&mut self, flag: NameFlags, condition: bool) {
        if condition {
            *self = self.union(flag);
        }
    }
}

/// Classifies each interned name once: a trace repeats a few thousand names over hundreds of
/// thousands of events.
pub(super) struct NameClassifier<'a> {
    names: &'a Interner,
    /// Per name: flags as a Python frame, flags as anything else (`None` until first asked).
    cache: Vec<[Option<NameFlags>; 2]>,
}

impl<'a> NameClassifier<'a> {
    pub fn new(names: &'a Interner) -> Self {
        NameClassifier {
            names,
            cache: vec![[None, None]; names.len()],
        }
    }

    pub fn flags(&mut self, name: NameId, kind: EventKind) -> NameFlags {
        let is_python = kind == EventKind::PythonFunction;
        let slot = &mut self.cache[name.index()][usize::from(is_python)];
        *slot.get_or_insert_with(|| {
            let text = self.names.get(name);
            if is_python {
                python_frame_flags(text)
            } else {
                op_flags(text)
            }
        })
    }
}

/// Flags of an op, annotation or kernel name.
fn op_flags(name: &str) -> NameFlags {
    let lower = name.to_ascii_lowercase();
    let hash_marker = name.starts_with("##") && name.ends_with("##");
    let mut flags = NameFlags::default();
    flags.set_if(
        NameFlags::BACKWARD,
        name.starts_with("autograd::engine::evaluate_function")
            || is_autograd_function(name)
            || name == "torch::autograd::AccumulateGrad"
            || hash_marker && lower.contains("backward"),
    );
    // TorchRec's train pipelines mark their stages `## load_batch ##`, `## wait_for_batch ##`,
    // `## copy_batch_to_gpu ##`, `## zero_grad ##`, `## forward ##`, `## backward ##`,
    // `## optimizer ##`.
    flags.set_if(
        NameFlags::OPTIMIZER,
        name.starts_with("Optimizer.")
            || lower.contains("optimizer")
            || hash_marker && lower.contains("zero_grad"),
    );
    flags.set_if(NameFlags::COMMUNICATION, is_communication(name, &lower));
    flags.set_if(
        NameFlags::DATA_LOADING,
        name.contains("DataLoader") || hash_marker && lower.contains("batch"),
    );
    flags.set_if(
        NameFlags::FORWARD,
        hash_marker && lower.contains("forward") || name.ends_with(".forward"),
    );
    flags.set_if(NameFlags::FUSED_OPTIMIZER, is_fused_optimizer(&lower));
    let phase_flags = NameFlags::BACKWARD
        .union(NameFlags::OPTIMIZER)
        .union(NameFlags::COMMUNICATION)
        .union(NameFlags::DATA_LOADING);
    flags.set_if(
        NameFlags::MARKER,
        hash_marker || name.starts_with("ProfilerStep#") || flags.0 & phase_flags.0 != 0,
    );
    flags
}

/// Flags of a `python_function` frame (`path(line): function`, or `nn.Module: Name_N`).
fn python_frame_flags(name: &str) -> NameFlags {
    let mut flags = NameFlags::default();
    if name.starts_with("nn.Module: ") {
        return NameFlags::MODULE.union(NameFlags::FORWARD);
    }
    flags.set_if(
        NameFlags::BACKWARD,
        name.ends_with("): backward") && (name.contains("torch/") || name.contains("autograd")),
    );
    flags.set_if(NameFlags::OPTIMIZER, name.contains("torch/optim/"));
    flags.set_if(NameFlags::DATA_LOADING, name.contains("torch/utils/data/"));
    flags
}

/// An autograd node name: `ConvolutionBackward0`, `AddmmBackward` (2021), `CompiledFunctionBackward`.
fn is_autograd_function(name: &str) -> bool {
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit());
    stem.ends_with("Backward") && !stem.contains(' ') && !stem.contains("::")
}

fn is_communication(name: &str, lower: &str) -> bool {
    lower.starts_with("nccl")
        || lower.starts_with("rccl")
        || lower.starts_with("gloo")
        || name.starts_with("c10d::")
        || name == "record_param_comms"
        || name.contains("ProcessGroup")
}

fn is_fused_optimizer(lower: &str) -> bool {
    lower.contains("multi_tensor_apply")
        || lower.contains("fused_adam")
        || lower.contains("fused_sgd")
        || lower.contains("_foreach_")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(name: &str, kind: EventKind) -> NameFlags {
        let mut names = Interner::default();
        let id = names.intern(name);
        NameClassifier::new(&names).flags(id, kind)
    }

    #[test]
    fn names_as_the_profiler_writes_them() {
        let cases: &[(&str, EventKind, NameFlags)] = &[
            (
                "autograd::engine::evaluate_function: ConvolutionBackward0",
                EventKind::CpuOp,
                NameFlags::BACKWARD,
            ),
            ("AddmmBackward", EventKind::CpuOp, NameFlags::BACKWARD),
            ("ReluBackward1", EventKind::CpuOp, NameFlags::BACKWARD),
            (
                "torch::autograd::AccumulateGrad",
                EventKind::CpuOp,
                NameFlags::BACKWARD,
            ),
            (
                "## backward ##",
                EventKind::UserAnnotation,
                NameFlags::BACKWARD,
            ),
            (
                "Optimizer.step#SGD.step",
                EventKind::UserAnnotation,
                NameFlags::OPTIMIZER,
            ),
            (
                "Optimizer.zero_grad#SGD.zero_grad",
                EventKind::CpuOp,
                NameFlags::OPTIMIZER,
            ),
            (
                "nccl:all_reduce",
                EventKind::UserAnnotation,
                NameFlags::COMMUNICATION,
            ),
            (
                "c10d::allreduce_",
                EventKind::CpuOp,
                NameFlags::COMMUNICATION,
            ),
            (
                "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                EventKind::CpuOp,
                NameFlags::DATA_LOADING,
            ),
            (
                "## forward ##",
                EventKind::UserAnnotation,
                NameFlags::FORWARD,
            ),
            (
                "## load_batch ##",
                EventKind::UserAnnotation,
                NameFlags::DATA_LOADING,
            ),
            (
                "## zero_grad ##",
                EventKind::UserAnnotation,
                NameFlags::OPTIMIZER,
            ),
            (
                "nn.Module: BertLayer_0",
                EventKind::PythonFunction,
                NameFlags::MODULE.union(NameFlags::FORWARD),
            ),
            (
                "torch/_tensor.py(626): backward",
                EventKind::PythonFunction,
                NameFlags::BACKWARD,
            ),
            (
                "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<...>",
                EventKind::Kernel,
                NameFlags::FUSED_OPTIMIZER,
            ),
        ];
        for &(name, kind, expected) in cases {
            assert!(flags(name, kind).contains(expected), "{name}");
        }
        for name in ["aten::conv2d", "aten::add_", "SumBackward0 x"] {
            let none = flags(name, EventKind::CpuOp);
            assert!(!none.contains(NameFlags::BACKWARD), "{name}");
            assert!(!none.contains(NameFlags::MARKER), "{name}");
        }
        assert!(flags("ProfilerStep#3", EventKind::UserAnnotation).contains(NameFlags::MARKER));
        assert!(
            !flags("DistributedDataParallel.forward", EventKind::UserAnnotation)
                .contains(NameFlags::MARKER)
        );
    }
}
