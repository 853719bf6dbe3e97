//! `stepcast.advise/1`: every candidate `advise` predicted, ranked, with its trust and
//! record, and those it could not predict.

use serde::Serialize;
use stepcast::Window;
use stepcast::whatif::record::TraceKind;
use stepcast::whatif::{Advice, Candidate, Model};
use stepcast_trace::Trace;

use super::{
    BottleneckJson, MemorySavedJson, ModelRecordJson, PeersJson, TasksJson, TrustJson, held_back,
    memory_saved_json, reason, runtime_name, steady_steps,
};
use crate::json::{
    AnswerJson, DeviceJson, StepTimeJson, TraceJson, answer, devices, finite, main_device,
};

/// The `advise` document: every model and useful combination, best first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AdviseJson {
    /// Always `stepcast.advise/1`.
    pub schema: &'static str,
    /// What the trace is.
    pub trace: TraceJson,
    /// The device the trace's work ran on, if any.
    pub device: Option<DeviceJson>,
    /// Why no candidate is offered on this trace, if none is: the baseline is not the
    /// measured step (off by more than 3 %), or the graph does not replay as the trace's own.
    /// `candidates` and `memory_trades` are then empty. `None` (`null`) otherwise.
    pub declined: Option<String>,
    /// Steady-state period of the untransformed replay.
    pub baseline_ns: i64,
    /// Numbers of the steady steps the figures are measured over.
    pub steady_steps: Vec<u64>,
    /// The trace has no step markers: its whole window stands as one step.
    pub no_step_markers: bool,
    /// What `--step-range` makes steps of in the trace's format (`NVTX ranges`); `None`
    /// (`null`) where steps are the format's own markers only.
    pub step_range_events: Option<&'static str>,
    /// What the critical path of the untransformed replay is made of.
    pub bottleneck: BottleneckJson,
    /// The speedup from which a candidate counts as useful.
    pub useful_speedup: f64,
    /// Where the `DataLoader` workers pace the step, the sentence that says so: no change
    /// that leaves the loader goes below their pace. `None` (`null`) otherwise.
    pub paced_by: Option<String>,
    /// Every candidate, best first: by speedup, then by name.
    pub candidates: Vec<CandidateJson>,
    /// Memory-for-time trades (usually slower), each with the memory it saves; not ranked.
    pub memory_trades: Vec<CandidateJson>,
    /// Candidates that could not be predicted on this trace, with why.
    pub failed: Vec<FailedCandidateJson>,
    /// What kind of time bounds the steady step: CPU work, blocking waits, data loading...
    pub step_time: StepTimeJson,
    /// The answer a person reads first, the same in every output (`json::answer`).
    pub answer: AnswerJson,
}

impl AdviseJson {
    /// Sets the input file as the user named it, and the answer's next command with it.
    pub fn set_file(&mut self, file: Option<String>) {
        self.trace.file = file;
        self.answer = answer(self);
    }
}

/// A candidate `advise` tried and could not predict, or declined.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FailedCandidateJson {
    pub name: String,
    pub error: String,
    /// Of a declined candidate, the speedup its bound allows (what it changes in the trace):
    /// what is left unpredicted; `None` (`null`) where it failed or its bound is no gain.
    pub at_most: Option<f64>,
}

/// One model or combination that `advise` tried.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CandidateJson {
    /// The models' names joined by ` + `.
    pub name: String,
    /// The models applied, in order.
    pub models: Vec<String>,
    /// Predicted steady-state period.
    pub predicted_ns: i64,
    /// `baseline_ns / predicted_ns`; `None` (`null`) when `predicted_ns` is 0.
    pub speedup: Option<f64>,
    /// `baseline_ns - predicted_ns`.
    pub gain_ns: i64,
    /// Whether `speedup` reaches `useful_speedup`.
    pub useful: bool,
    /// What the collectives' peers did in the prediction, and what the other choice gives.
    pub peers: PeersJson,
    /// Edges of the predicted graph whose lag is a recorded time: 0.
    pub pinned_edges: u64,
    /// How far the prediction can be trusted: its bound and caveats.
    pub trust: TrustJson,
    /// Whether it changes hardware rather than the program.
    pub hardware: bool,
    /// One sentence: what bounds the step and what the models change.
    pub reason: String,
    /// Host time saved per steady step.
    pub host_saved_ns: i64,
    /// Device time saved per steady step.
    pub device_saved_ns: i64,
    /// Tasks before and after, and what changed.
    pub tasks: TasksJson,
    /// The bottleneck after the change, as in `bottleneck.bound`.
    pub bound_after: &'static str,
    /// Memory-for-time trades only: the memory saved. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemorySavedJson>,
    /// How each of its models did on the recorded before/after pairs of `docs/accuracy.md`
    /// whose BEFORE is a trace of this one's kind (a model without such a pair is left out,
    /// so `[]`: no record).
    pub record: Vec<ModelRecordJson>,
    /// Why it is not offered as what to try first although it helps: its model's record
    /// cannot tell its gain from the model's error ([`stepcast::whatif::record::ModelRecord::cannot_tell`]), or, for a
    /// combination, one of its models' cannot. `null` otherwise.
    pub held_back: Option<String>,
}

impl CandidateJson {
    /// Whether it may be a headline (what to try first): it helps, it responds as a machine
    /// would (no anomaly), its gain does not rest on one task, and its models' records can
    /// tell that gain from their error (`held_back`).
    pub fn can_headline(&self) -> bool {
        self.useful
            && self.trust.anomaly.is_none()
            && self.trust.rests_on.is_none()
            && self.held_back.is_none()
    }
}

/// The `advise` document of `advice`, on `window` (built from `trace`).
pub fn advise_json(trace: &Trace, window: &Window, advice: &Advice) -> AdviseJson {
    let kind = TraceKind::of(&window.graph);
    let mut document = AdviseJson {
        schema: "stepcast.advise/1",
        trace: TraceJson::new(trace),
        device: main_device(&devices(trace)),
        declined: advice.declined.clone(),
        baseline_ns: advice.baseline.step_ns,
        steady_steps: steady_steps(window),
        no_step_markers: matches!(window.steps.as_slice(), [step] if step.synthetic),
        step_range_events: trace.step_range_events,
        bottleneck: BottleneckJson::new(trace, &advice.baseline.bottleneck),
        useful_speedup: stepcast::whatif::advise::USEFUL_SPEEDUP,
        paced_by: advice.paced_by.clone(),
        candidates: advice
            .candidates
            .iter()
            .map(|c| candidate_json(trace, kind, advice, c))
            .collect(),
        memory_trades: advice
            .memory_trades
            .iter()
            .map(|c| candidate_json(trace, kind, advice, c))
            .collect(),
        failed: advice
            .failed
            .iter()
            .map(|f| FailedCandidateJson {
                name: f.name.clone(),
                error: f.error.clone(),
                at_most: f.at_most.and_then(finite),
            })
            .collect(),
        step_time: StepTimeJson::new(trace, &advice.step_time),
        answer: AnswerJson::default(),
    };
    // A combination's gain rests on each of its models: one whose own gain here its record
    // cannot tell from its error holds the combination back too.
    let held: Vec<(String, String)> = document
        .candidates
        .iter()
        .filter(|c| c.models.len() == 1)
        .filter_map(|c| Some((c.models[0].clone(), c.held_back.clone()?)))
        .collect();
    for c in document
        .candidates
        .iter_mut()
        .filter(|c| c.models.len() > 1)
    {
        if let Some((model, _)) = held.iter().find(|(m, _)| c.models.contains(m)) {
            c.held_back = Some(format!(
                "it includes {model}, whose gain on its own here its record cannot tell from \
                 its error"
            ));
        }
    }
    document.answer = answer(&document);
    document
}

fn candidate_json(trace: &Trace, kind: TraceKind, advice: &Advice, c: &Candidate) -> CandidateJson {
    CandidateJson {
        name: runtime_name(trace, c.name()),
        models: c
            .models
            .iter()
            .map(|m| runtime_name(trace, m.name()))
            .collect(),
        predicted_ns: c.outcome.predicted.step_ns,
        speedup: finite(c.outcome.speedup),
        gain_ns: c.outcome.baseline.step_ns - c.outcome.predicted.step_ns,
        useful: c.is_useful(),
        peers: PeersJson::new(&c.outcome),
        pinned_edges: c.outcome.pinned_edges,
        trust: TrustJson::new(&c.outcome),
        hardware: c.models.iter().any(Model::is_hardware),
        reason: reason(&advice.baseline.bottleneck, c),
        host_saved_ns: c.outcome.host_saved_ns(),
        device_saved_ns: c.outcome.device_saved_ns(),
        tasks: TasksJson::new(&c.outcome),
        bound_after: c.outcome.predicted.bottleneck.bound().as_str(),
        memory: c.memory.as_ref().map(memory_saved_json),
        record: ModelRecordJson::of(&c.models, kind),
        held_back: match c.models.as_slice() {
            [model] => held_back(model, kind, finite(c.outcome.speedup)),
            _ => None,
        },
    }
}
