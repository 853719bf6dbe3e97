//! The one-line reason beside a candidate: the baseline's bound and what the models changed.

use stepcast::whatif::{Bottleneck, Candidate, Model, Resource};

use super::{count, mib, ms};

/// What a bound is called in a sentence: `host-bound`...
fn bound_words(resource: Resource) -> &'static str {
    match resource {
        Resource::Host => "host-bound",
        Resource::Compute => "GPU-bound",
        Resource::Copy => "copy-bound",
        Resource::Communication => "communication-bound",
        Resource::Wait => "latency-bound",
    }
}

/// What a resource's time is, in a sentence.
fn resource_words(resource: Resource) -> &'static str {
    match resource {
        Resource::Host => "CPU work",
        Resource::Compute => "GPU kernels",
        Resource::Copy => "copies",
        Resource::Communication => "communication",
        Resource::Wait => "waiting (launch latency, other streams)",
    }
}

/// `the step is host-bound: 72% of the critical path is CPU work`.
fn bound_sentence(bottleneck: &Bottleneck) -> String {
    let bound = bottleneck.bound();
    format!(
        "the step is {}: {:.0}% of the critical path is {}",
        bound_words(bound),
        bottleneck.share(bound) * 100.0,
        resource_words(bound)
    )
}

/// `602 ms of CPU time (all threads) and 12 ms of GPU time`, leaving out what is zero.
fn saved(host_ns: i64, device_ns: i64) -> String {
    let host = (host_ns != 0).then(|| format!("{} of CPU time (all threads)", ms(host_ns)));
    let device = (device_ns != 0).then(|| format!("{} of GPU time", ms(device_ns)));
    match (host, device) {
        (Some(h), Some(d)) => format!("{h} and {d}"),
        (Some(one), None) | (None, Some(one)) => one,
        (None, None) => "no time".to_string(),
    }
}

/// What the models change, per steady step, in words.
fn effect(candidate: &Candidate) -> String {
    let outcome = &candidate.outcome;
    let steps = outcome.steady_steps.max(1) as f64;
    let changed = count(outcome.changes.changed as f64 / steps);
    let removed = count(outcome.changes.removed as f64 / steps);
    let saved = saved(outcome.host_saved_ns(), outcome.device_saved_ns());
    let [model] = candidate.models.as_slice() else {
        return format!("together they save {saved} per step");
    };
    let nothing = outcome.changes == Default::default();
    match model {
        Model::FusedOptimizer { .. } if nothing => {
            "no optimizer step of several kernels to fuse".to_string()
        }
        // On a CPU-only trace the update's ops are fused on the host: tasks shortened, none
        // removed.
        Model::FusedOptimizer { .. } if outcome.changes.removed == 0 => format!(
            "fusing the optimizer's update into one op per step shortens {changed} host \
             task(s) per step: {saved}"
        ),
        Model::FusedOptimizer { .. } => format!(
            "fusing the optimizer removes {removed} kernels and launch calls per step: {saved}"
        ),
        Model::CudaGraphs if nothing => "no launch calls to capture".to_string(),
        Model::CudaGraphs => {
            format!("CUDA graphs take away the CPU cost of {changed} host tasks per step: {saved}")
        }
        Model::Amp | Model::AmpBf16 if nothing => {
            "no FP32 kernel that mixed precision would speed up".to_string()
        }
        Model::Amp | Model::AmpBf16 => {
            format!("mixed precision shortens {changed} kernels per step: {saved}")
        }
        Model::RemoveSyncs if nothing => "no explicit synchronization to remove".to_string(),
        Model::RemoveSyncs => format!("removes {removed} synchronizing calls per step"),
        Model::KernelFusion { .. } if nothing => {
            "no chain of element-wise kernels to fuse".to_string()
        }
        Model::KernelFusion { .. } => format!(
            "fusing element-wise chains removes {removed} kernels and launch calls per step: \
             {saved}"
        ),
        Model::ReconstructBatchnorm if nothing => "no batch-norm kernel to restructure".to_string(),
        // On a CPU-only trace the batch norms and their activations are host ops.
        Model::ReconstructBatchnorm if !outcome.graph.has_device_tasks() => format!(
            "restructuring batch norm removes {removed} element-wise ops and halves {changed} \
             batch-norm ops per step: {saved}"
        ),
        Model::ReconstructBatchnorm => format!(
            "restructuring batch norm removes {removed} element-wise kernels and launch calls \
             and halves {changed} batch-norm kernels per step: {saved}"
        ),
        Model::PrefetchInputs { .. } if nothing => {
            "no data loading or input copy to overlap".to_string()
        }
        Model::PrefetchInputs { .. } => format!(
            "prefetching the next batch takes {changed} data-loading tasks and waits off the \
             step: {saved}"
        ),
        Model::Recompute { .. } | Model::Offload { .. } | Model::Gist { .. } => {
            let added = count(outcome.changes.added as f64 / steps);
            let memory = candidate.memory.as_ref().map_or(String::new(), |m| {
                match (m.step_peak_source(), m.step_peak_saved_bytes) {
                    (Some("memory_timeline"), Some(fall)) => format!(
                        "; the step's peak, read off the recorded memory, falls by {} (the \
                         activations' own by {})",
                        mib(fall),
                        mib(m.saved_bytes)
                    ),
                    _ => format!(
                        "; it saves {} of peak activation memory",
                        mib(m.saved_bytes)
                    ),
                }
            });
            if nothing {
                "no activation it can act on (needs memory events or shapes and linked \
                 backward ops)"
                    .to_string()
            } else {
                format!("adds {added} tasks per step{memory}")
            }
        }
        Model::FasterHardware(_) => format!(
            "{} saves {saved} per step",
            match model.name().as_str() {
                "faster_gpu" => "a GPU twice as fast",
                "faster_cpu" => "a CPU twice as fast",
                "faster_copies" => "copies twice as fast",
                _ => "the faster hardware",
            }
        ),
    }
}

/// One sentence on why `candidate` helps or not, given the baseline's bottleneck.
pub fn reason(baseline: &Bottleneck, candidate: &Candidate) -> String {
    let after = &candidate.outcome.predicted.bottleneck;
    let effect = effect(candidate);
    if candidate.is_useful() {
        let mut text = format!("{}; {effect}", bound_sentence(baseline));
        if after.bound() != baseline.bound() {
            text.push_str(&format!("; then {}", bound_sentence(after)));
        }
        text
    } else if candidate.outcome.changes == Default::default() {
        effect
    } else {
        format!(
            "{effect}, but {}: that time is off the critical path",
            bound_sentence(baseline)
        )
    }
}
