//! The `compare` document (`stepcast.compare/2`): two traces of one workload, the measured
//! speedup of their steady steps, what changed, and models' predictions against the outcome.

use serde::Serialize;
use stepcast::compare::{
    Comparison, DiffRow, DiffTable, Finding, Measured, ModelCheck, StepTimes, Workload,
};

use super::{TraceJson, TrustJson, finite};

/// The `compare` document.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompareJson {
    /// Always `stepcast.compare/2`.
    pub schema: &'static str,
    /// The trace before the change.
    pub before: SideJson,
    /// The trace after the change.
    pub after: SideJson,
    /// `before.steps.period_ns / after.steps.period_ns` (above 1: AFTER is faster); `None`
    /// (`null`) when AFTER's period is 0.
    pub speedup: Option<f64>,
    /// `after.steps.period_ns - before.steps.period_ns` (negative: AFTER is faster).
    pub delta_ns: i64,
    /// The speedup's spread over the steady steps, and whether it is a change at all. Read
    /// `measured.verdict` before `speedup`: within the spread, `speedup` is noise.
    pub measured: MeasuredJson,
    /// Why the comparison may not mean what it says, most serious first (empty when nothing
    /// does): different devices, little shared, training against inference, one steady step.
    /// A refusal appears here only when forced (`--force`).
    pub warnings: Vec<WarningJson>,
    /// How alike the two traces are: what `warnings` is decided from.
    pub workload: WorkloadJson,
    /// What a row's `status` means.
    pub noise: NoiseJson,
    /// Host-busy time by phase (remainder: host idle).
    pub phases_host: DiffTableJson,
    /// Device-busy time by phase (remainder: device idle).
    pub phases_device: DiffTableJson,
    /// Host time of the outermost ops (remainder: host time outside them).
    pub ops_host: DiffTableJson,
    /// Device time by the op that launched it (remainder: the step less that time).
    pub ops_device: DiffTableJson,
    /// Device time by kernel, copy and memset name (remainder: the step less that time).
    pub kernels: DiffTableJson,
    /// One entry per `--model`, in the order given.
    pub models: Vec<ModelCheckJson>,
}

/// One trace of the pair.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SideJson {
    /// What the trace is.
    pub trace: TraceJson,
    /// Its steady steps.
    pub steps: StepTimesJson,
}

/// The measured steady steps of one trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StepTimesJson {
    /// Numbers (`N` of `ProfilerStep#N`) of the steady steps.
    pub steady_steps: Vec<u64>,
    /// Their measured spans, in step order.
    pub measured_ns: Vec<i64>,
    /// Median of `measured_ns`.
    pub median_ns: i64,
    /// Smallest of `measured_ns`.
    pub min_ns: i64,
    /// Largest of `measured_ns`.
    pub max_ns: i64,
    /// Mean of `measured_ns` (what the tables sum to).
    pub mean_ns: i64,
    /// The steady-state period: mean time between consecutive steady steps' ends, as a
    /// what-if measures it. The speedup compares these.
    pub period_ns: i64,
    /// Per steady step, the time from the previous step's end to its own.
    pub periods_ns: Vec<i64>,
}

/// The measured speedup with its spread.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MeasuredJson {
    /// `faster` (every AFTER steady step shorter than every BEFORE one), `slower`, or
    /// `no_measurable_change` (the steps overlap: the difference is within their spread), or
    /// `spread_unknown` (a side has one steady step).
    pub verdict: &'static str,
    /// Median BEFORE per-step period / median AFTER per-step period (`null` when infinite).
    pub median_speedup: Option<f64>,
    /// Smallest BEFORE period / largest AFTER period: the low end of the interval (`null` when
    /// infinite).
    pub low: Option<f64>,
    /// Largest BEFORE period / smallest AFTER period: the high end (`null` when infinite).
    pub high: Option<f64>,
}

/// One reason to doubt the comparison.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WarningJson {
    /// `devices`, `names`, `training_inference` or `spread_unknown`.
    pub kind: &'static str,
    /// The pair was refused for this and compared only because it was forced.
    pub refused: bool,
    /// One sentence.
    pub message: String,
}

/// How alike the two traces are.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkloadJson {
    /// Device product names of BEFORE, sorted, each once.
    pub devices_before: Vec<String>,
    /// Device product names of AFTER.
    pub devices_after: Vec<String>,
    /// Time-weighted Jaccard similarity of host op names, 0-1 (`null`: a side has none).
    pub op_similarity: Option<f64>,
    /// Time-weighted Jaccard similarity of kernel names without template arguments, 0-1.
    pub kernel_similarity: Option<f64>,
    /// Share of BEFORE's busy time in the backward phase.
    pub backward_share_before: f64,
    /// Share of AFTER's busy time in the backward phase.
    pub backward_share_after: f64,
}

/// The thresholds below which a change is `same`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NoiseJson {
    /// A change within this share of the before time.
    pub fraction: f64,
    /// A change of at most this many nanoseconds per step.
    pub floor_ns: i64,
}

/// A table of changes, per steady step, that sums to the mean step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DiffTableJson {
    /// The largest changes, by absolute delta then name.
    pub rows: Vec<DiffRowJson>,
    /// The other names summed (`null` when every name is listed).
    pub others: Option<DiffRowJson>,
    /// The mean step less the rows above.
    pub remainder: DiffRowJson,
    /// The mean steady step.
    pub total: DiffRowJson,
}

/// One row: time per steady step before and after.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DiffRowJson {
    /// Name as recorded (a phase, op or kernel), or a parenthesized label for summed rows.
    pub name: String,
    /// Names summed into the row (1 for a listed name, 0 for remainder and total).
    pub count: usize,
    /// Time per steady step before.
    pub before_ns: i64,
    /// Time per steady step after.
    pub after_ns: i64,
    /// `after_ns - before_ns`.
    pub delta_ns: i64,
    /// `new`, `gone`, `faster`, `slower` or `same`.
    pub status: &'static str,
}

/// A model's prediction from BEFORE against the measured AFTER.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelCheckJson {
    /// The model's name with its parameters.
    pub model: String,
    /// The what-if's speedup on BEFORE (`null` when infinite).
    pub predicted_speedup: Option<f64>,
    /// BEFORE's measured median divided by `predicted_speedup`.
    pub predicted_ns: i64,
    /// AFTER's measured median.
    pub measured_ns: i64,
    /// `predicted_ns / measured_ns - 1` (`null` when undefined).
    pub error: Option<f64>,
    /// Where `predicted_speedup` lies against the measured interval (`measured.low` to
    /// `measured.high` of the document): `inside`, `above` (more gain than any pair of steps
    /// shows) or `below`. A prediction is judged by this, not by `error` alone.
    pub placement: &'static str,
    /// How far the prediction can be trusted, as `whatif` gives it: its bound and caveats.
    pub trust: TrustJson,
    /// Per phase, every phase in a fixed order.
    pub phases: Vec<PhaseCheckJson>,
}

/// One phase of a model check, per steady step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PhaseCheckJson {
    /// `forward`, `backward`, `optimizer`, `communication`, `data_loading` or `other`.
    pub phase: &'static str,
    /// Host task time of BEFORE, as recorded.
    pub host_before_ns: i64,
    /// Host task time predicted.
    pub host_predicted_ns: i64,
    /// Host task time of AFTER, as recorded.
    pub host_measured_ns: i64,
    /// `host_predicted_ns / host_measured_ns - 1` (`null` when AFTER has none).
    pub host_error: Option<f64>,
    /// Device task time of BEFORE, as recorded.
    pub device_before_ns: i64,
    /// Device task time predicted.
    pub device_predicted_ns: i64,
    /// Device task time of AFTER, as recorded.
    pub device_measured_ns: i64,
    /// `device_predicted_ns / device_measured_ns - 1` (`null` when AFTER has none).
    pub device_error: Option<f64>,
}

/// The document for `comparison` of `before` and `after`, with `checks`. The files are `None`;
/// the caller fills them in.
pub fn compare_json(
    before: &stepcast_trace::Trace,
    after: &stepcast_trace::Trace,
    comparison: &Comparison,
    checks: &[ModelCheck],
) -> CompareJson {
    let changes = &comparison.changes;
    CompareJson {
        schema: "stepcast.compare/2",
        before: SideJson {
            trace: TraceJson::new(before),
            steps: steps_json(&comparison.before),
        },
        after: SideJson {
            trace: TraceJson::new(after),
            steps: steps_json(&comparison.after),
        },
        speedup: finite(comparison.speedup),
        delta_ns: comparison.after.period_ns - comparison.before.period_ns,
        measured: measured_json(&comparison.measured),
        warnings: comparison
            .workload
            .findings
            .iter()
            .map(warning_json)
            .collect(),
        workload: workload_json(&comparison.workload),
        noise: NoiseJson {
            fraction: stepcast::compare::NOISE_FRACTION,
            floor_ns: stepcast::compare::NOISE_FLOOR_NS,
        },
        phases_host: table_json(&changes.phases_host),
        phases_device: table_json(&changes.phases_device),
        ops_host: table_json(&changes.ops_host),
        ops_device: table_json(&changes.ops_device),
        kernels: table_json(&changes.kernels),
        models: checks.iter().map(check_json).collect(),
    }
}

fn measured_json(measured: &Measured) -> MeasuredJson {
    MeasuredJson {
        verdict: measured.verdict.as_str(),
        median_speedup: finite(measured.median_speedup),
        low: finite(measured.low),
        high: finite(measured.high),
    }
}

fn warning_json(finding: &Finding) -> WarningJson {
    WarningJson {
        kind: finding.kind.as_str(),
        refused: finding.refuses,
        message: finding.message.clone(),
    }
}

fn workload_json(workload: &Workload) -> WorkloadJson {
    WorkloadJson {
        devices_before: workload.devices_before.clone(),
        devices_after: workload.devices_after.clone(),
        op_similarity: workload.op_similarity,
        kernel_similarity: workload.kernel_similarity,
        backward_share_before: workload.backward_share_before,
        backward_share_after: workload.backward_share_after,
    }
}

fn steps_json(steps: &StepTimes) -> StepTimesJson {
    StepTimesJson {
        steady_steps: steps.numbers.clone(),
        measured_ns: steps.measured_ns.clone(),
        median_ns: steps.median_ns,
        min_ns: steps.min_ns,
        max_ns: steps.max_ns,
        mean_ns: steps.mean_ns,
        period_ns: steps.period_ns,
        periods_ns: steps.periods_ns.clone(),
    }
}

fn table_json(table: &DiffTable) -> DiffTableJson {
    DiffTableJson {
        rows: table.rows.iter().map(row_json).collect(),
        others: table.others.as_ref().map(row_json),
        remainder: row_json(&table.remainder),
        total: row_json(&table.total),
    }
}

fn row_json(row: &DiffRow) -> DiffRowJson {
    DiffRowJson {
        name: row.name.clone(),
        count: row.count,
        before_ns: row.before_ns,
        after_ns: row.after_ns,
        delta_ns: row.delta_ns(),
        status: row.status.as_str(),
    }
}

/// `predicted / measured - 1`, `None` when `measured` is 0.
fn error(predicted_ns: i64, measured_ns: i64) -> Option<f64> {
    (measured_ns != 0).then(|| predicted_ns as f64 / measured_ns as f64 - 1.0)
}

fn check_json(check: &ModelCheck) -> ModelCheckJson {
    ModelCheckJson {
        model: check.model.clone(),
        predicted_speedup: finite(check.predicted_speedup),
        predicted_ns: check.predicted_step_ns,
        measured_ns: check.measured_step_ns,
        error: error(check.predicted_step_ns, check.measured_step_ns),
        placement: check.placement.as_str(),
        trust: TrustJson::of(&check.trust),
        phases: check
            .phases
            .iter()
            .map(|p| PhaseCheckJson {
                phase: p.phase.as_str(),
                host_before_ns: p.host_before_ns,
                host_predicted_ns: p.host_predicted_ns,
                host_measured_ns: p.host_measured_ns,
                host_error: error(p.host_predicted_ns, p.host_measured_ns),
                device_before_ns: p.device_before_ns,
                device_predicted_ns: p.device_predicted_ns,
                device_measured_ns: p.device_measured_ns,
                device_error: error(p.device_predicted_ns, p.device_measured_ns),
            })
            .collect(),
    }
}
