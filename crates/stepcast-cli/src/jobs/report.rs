//! `report`: what the report of one trace shows (the `analyze` and `advise` documents, the
//! data-parallel scaling sweep, the analyzed step's timeline recorded, replayed and predicted,
//! memory over the window), and the predicted window of a what-if that `report` and
//! `export --model` draw.

use anyhow::Context as _;
use stepcast::graph::Graph;
use stepcast::simulate::{RecordedOrder, SimOptions, Timeline, simulate};
use stepcast::whatif::models::LoaderHost;
use stepcast::whatif::{Advice, Model, ModelParams, Peers, WhatIfError, apply_models};
use stepcast_report::html::{MemoryCurve, TimelineView, TraceReport, trace_report};
use stepcast_report::json::{AdviseJson, AnalyzeJson, WhatIfJson, advise_json, analyze_json};

use super::ddp::{Ddp, DdpOptions};
use super::{Loaded, Progress};

/// What `report` is asked for, checked before the trace is read (a typo fails fast).
pub struct ReportOptions {
    /// The what-if whose predicted timeline is drawn; by default the change the answer names.
    model: Option<Model>,
    /// The data-parallel scaling sweep.
    ddp: Ddp,
    peers: Peers,
    /// The recorded run's host, as the user described it: `advise` runs on it.
    host: LoaderHost,
}

impl ReportOptions {
    /// `model` (a built-in model, with its default parameters) and `gpus` (the GPU counts of
    /// the scaling curve, `1,2,4,8`); `advise` runs on `host`. An unknown model or a bad count
    /// is a [`Usage`](crate::Usage) error.
    pub fn new(
        model: Option<&str>,
        gpus: &str,
        peers: Peers,
        host: LoaderHost,
    ) -> anyhow::Result<ReportOptions> {
        let model = model
            .map(|name| Model::with_params(name, &ModelParams::default()))
            .transpose()
            .map_err(crate::usage)?;
        let ddp = Ddp::new(&DdpOptions {
            gpus: Some(gpus.to_string()),
            ..DdpOptions::default()
        })?;
        Ok(ReportOptions {
            model,
            ddp,
            peers,
            host,
        })
    }
}

/// The digest of one trace (`report --format md|csv`): its analysis and its advice.
pub struct Digest {
    pub analyze: AnalyzeJson,
    /// The `advise` document, or why there is none.
    pub advise: Result<AdviseJson, String>,
}

/// Everything the page of one trace shows.
pub struct TracePage {
    pub analyze: AnalyzeJson,
    /// The `advise` document, or why there is none.
    pub advise: Result<AdviseJson, String>,
    /// The `whatif ddp` sweep over the GPU counts asked for, or why there is none.
    pub scaling: Result<WhatIfJson, String>,
    /// The analyzed step's timeline, if the window has an analyzed step.
    pub timeline: Option<TimelineView>,
    /// Memory over the window, per device with memory events.
    pub memory: Vec<MemoryCurve>,
}

impl TracePage {
    /// The page's contents as `stepcast_report::html::trace_report` takes them.
    pub fn view(&self) -> TraceReport<'_> {
        TraceReport {
            analyze: &self.analyze,
            advise: self.advise.as_ref().map_err(String::as_str),
            scaling: self.scaling.as_ref().map_err(String::as_str),
            timeline: self.timeline.as_ref(),
            memory: &self.memory,
        }
    }
}

/// The analysis of the window (the steady step closest to the median in detail), as the
/// `analyze` document, which the page shows unchanged.
fn analysis(
    loaded: &Loaded,
    progress: &dyn Progress,
) -> anyhow::Result<(stepcast::analyze::Analysis, AnalyzeJson)> {
    progress.update("analyzing", 0, 1);
    let analysis = stepcast::analyze::analyze(&loaded.trace, &loaded.window, None)
        .with_context(|| format!("cannot analyze {}", loaded.path.display()))?;
    progress.update("analyzing", 1, 1);
    let mut document = analyze_json(&loaded.trace, &loaded.window, &analysis, None);
    document.trace.file = loaded.file();
    Ok((analysis, document))
}

/// The advice on the trace (on `host`) and its document; a trace advise cannot rank gets a
/// report that says why instead of none.
fn advice(
    loaded: &Loaded,
    peers: Peers,
    host: LoaderHost,
    progress: &dyn Progress,
) -> (Result<Advice, WhatIfError>, Result<AdviseJson, String>) {
    progress.update("ranking the what-ifs (advise)", 0, 1);
    let advice = stepcast::whatif::advise_on(&loaded.context(peers), host);
    progress.update("ranking the what-ifs (advise)", 1, 1);
    let document = match &advice {
        Ok(advice) => {
            let mut document = advise_json(&loaded.trace, &loaded.window, advice);
            document.set_file(loaded.file());
            Ok(document)
        }
        Err(error) => Err(error.to_string()),
    };
    (advice, document)
}

/// The digest of one trace: `analyze` and `advise` (with `peers`, on `host`).
pub fn digest(
    loaded: &Loaded,
    peers: Peers,
    host: LoaderHost,
    progress: &dyn Progress,
) -> anyhow::Result<Digest> {
    let (_, mut analyze) = analysis(loaded, progress)?;
    let (_, advise) = advice(loaded, peers, host, progress);
    analyze.answer = advise.as_ref().ok().map(|a| a.answer.clone());
    Ok(Digest { analyze, advise })
}

/// The page of one trace, rendered: the self-contained HTML that `report` writes.
pub fn report_page(
    loaded: &Loaded,
    options: &ReportOptions,
    progress: &dyn Progress,
) -> anyhow::Result<String> {
    let page = report(loaded, options, progress)?;
    Ok(trace_report(&page.view()))
}

/// The page of one trace.
pub fn report(
    loaded: &Loaded,
    options: &ReportOptions,
    progress: &dyn Progress,
) -> anyhow::Result<TracePage> {
    let (analysis, mut analyze) = analysis(loaded, progress)?;
    let (advice, advise) = advice(loaded, options.peers, options.host, progress);
    analyze.answer = advise.as_ref().ok().map(|a| a.answer.clone());
    progress.update("predicting data-parallel scaling", 0, 1);
    let scaling = options
        .ddp
        .predict(loaded, options.peers)
        .map_err(|error| crate::message(&error));
    progress.update("predicting data-parallel scaling", 1, 1);
    progress.update("drawing the timeline", 0, 1);
    let timeline = match analysis.analyzed_step {
        Some(index) => {
            let (trace, window) = (&loaded.trace, &loaded.window);
            let replayed = simulate(&window.graph, &RecordedOrder, SimOptions::default())
                .with_context(|| format!("cannot replay {}", loaded.path.display()))?;
            let step = &window.steps[index];
            let title = if step.synthetic {
                "The whole window (the trace has no step markers)".to_string()
            } else {
                format!(
                    "Step {}, the steady-state step whose measured time is closest to the median",
                    step.number
                )
            };
            let mut view = TimelineView::new(trace, window, &replayed, index, title);
            // The what-if drawn: the one asked for, else the change the answer names.
            let change = analyze
                .answer
                .as_ref()
                .and_then(|a| a.change.as_ref())
                .map(|c| c.name.clone());
            let models = match (&options.model, &advice, change) {
                (Some(model), _, _) => Some(vec![model.clone()]),
                (None, Ok(advice), Some(change)) => advice
                    .candidates
                    .iter()
                    .find(|candidate| candidate.name() == change)
                    .map(|candidate| candidate.models.clone()),
                (None, _, _) => None,
            };
            if let Some(models) = models {
                let names: Vec<String> = models.iter().map(|m| m.name()).collect();
                let (graph, predicted) = predicted(loaded, &models, options.peers)?;
                view.add_prediction(
                    trace,
                    window,
                    index,
                    &format!("predicted: {}", names.join(" + ")),
                    &graph,
                    &predicted,
                );
            }
            Some(view)
        }
        None => None,
    };
    progress.update("drawing the timeline", 1, 1);
    let memory = analysis.memory.iter().map(MemoryCurve::new).collect();
    Ok(TracePage {
        analyze,
        advise,
        scaling,
        timeline,
        memory,
    })
}

/// The window as `models` predict it: their graph, replayed as every what-if is (without the
/// edges inferred from timing).
pub fn predicted(
    loaded: &Loaded,
    models: &[Model],
    peers: Peers,
) -> anyhow::Result<(Graph, Timeline)> {
    let cannot = || format!("cannot predict {}", loaded.path.display());
    let outcome = apply_models(&loaded.context(peers), models).with_context(cannot)?;
    let options = SimOptions {
        without_inferred: true,
        ..SimOptions::default()
    };
    let timeline = simulate(&outcome.graph, &RecordedOrder, options).with_context(cannot)?;
    Ok((outcome.graph, timeline))
}
