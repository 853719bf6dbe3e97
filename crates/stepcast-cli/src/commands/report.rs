//! `stepcast report TRACE | DIR -o report.html`: one self-contained HTML page of a trace
//! (analyze, advise, the timeline of the typical step recorded, replayed and predicted, memory,
//! the data-parallel scaling curve) or of a job folder (the ranks side by side); with
//! `--format md`, a Markdown digest of analyze and advise; with `--format csv`, their tables.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, anyhow};
use stepcast::simulate::{RecordedOrder, SimOptions, simulate};
use stepcast::whatif::ddp::DdpConfig;
use stepcast::whatif::{advise, apply_models};
use stepcast_report::html::{MemoryCurve, TimelineView, TraceReport, ranks_report, trace_report};
use stepcast_report::{json, markdown};

use super::Answer;
use crate::args::{Format, ReportArgs};
use crate::progress::Progress;

/// Runs `report` and returns the page (or the digest, or the tables).
pub fn run(args: &ReportArgs) -> anyhow::Result<Answer> {
    if args.format == Format::Csv && args.output.is_none() {
        return Err(crate::usage(anyhow!(
            "--format csv writes one file per table: give a directory with -o DIR"
        )));
    }
    match args.traces.as_slice() {
        [trace] if !trace.is_dir() => one_trace(args, trace),
        paths => job(args, paths),
    }
}

/// The GPU counts of `--gpus`.
fn gpu_counts(text: &str) -> anyhow::Result<Vec<u32>> {
    text.split(',')
        .map(|g| {
            g.trim()
                .parse::<u32>()
                .ok()
                .filter(|&g| g > 0)
                .ok_or_else(|| {
                    anyhow!("bad --gpus `{g}`: expected positive integers, e.g. 1,2,4,8")
                })
        })
        .collect()
}

fn one_trace(args: &ReportArgs, path: &Path) -> anyhow::Result<Answer> {
    // The command line is checked before the trace is read, so a typo fails fast.
    let model = super::model_option(args.model.as_deref())?;
    let gpus = gpu_counts(&args.gpus).map_err(crate::usage)?;
    if args.format == Format::Text || args.format == Format::Json {
        return Err(crate::usage(anyhow!(
            "report writes html, md or csv; for text or JSON use `stepcast analyze` and `stepcast advise`"
        )));
    }
    let progress = Progress::spinner(format!("reading {}", path.display()));
    let mut mapped = super::Mapped::load(path)?;
    let scaling = if args.format == Format::Html {
        progress.message("predicting data-parallel scaling");
        let configs: Vec<DdpConfig> = gpus
            .iter()
            .map(|&gpus| DdpConfig {
                gpus,
                ..DdpConfig::default()
            })
            .collect();
        let name = format!("ddp(gpus={})", args.gpus);
        super::whatif_ddp::sweep_document(
            &mut mapped,
            path,
            &configs,
            None,
            args.peers.peers(),
            name,
        )
        .map_err(|error| crate::message(&error))
    } else {
        Err("not drawn".to_string())
    };
    let (trace, window, context) = (
        &mapped.trace,
        &mapped.window,
        mapped.context(args.peers.peers()),
    );
    progress.message("analyzing");
    let analysis = stepcast::analyze::analyze(trace, window, None)
        .with_context(|| format!("cannot analyze {}", path.display()))?;
    let mut analyze = json::analyze_json(trace, window, &analysis, None);
    analyze.trace.file = Some(path.display().to_string());
    progress.message("ranking the what-ifs (advise)");
    let advice = advise(&context);
    let advise_document = advice.as_ref().map(|advice| {
        let mut document = json::advise_json(trace, window, advice);
        document.trace.file = Some(path.display().to_string());
        document
    });
    match args.format {
        Format::Md => {
            let mut text = markdown::analyze_markdown(&analyze);
            match &advise_document {
                Ok(document) => text.push_str(&markdown::advise_markdown(document)),
                Err(error) => {
                    text.push_str(&format!("\n## What to try\n\nNo what-ifs: {error}.\n"))
                }
            }
            return Ok(Answer::Text(text));
        }
        Format::Csv => {
            let mut files = prefixed("analyze", super::csv_files(&analyze)?);
            if let Ok(document) = &advise_document {
                files.extend(prefixed("advise", super::csv_files(document)?));
            }
            return Ok(Answer::Files(files));
        }
        _ => {}
    }
    progress.message("drawing the timeline");
    let timeline = match analysis.analyzed_step {
        Some(index) => {
            let replayed = simulate(&window.graph, &RecordedOrder, SimOptions::default())
                .with_context(|| format!("cannot replay {}", path.display()))?;
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
            // The what-if drawn: the one asked for, else the best useful candidate.
            let models = match (&model, &advice) {
                (Some(model), _) => Some(vec![model.clone()]),
                (None, Ok(advice)) => advice
                    .candidates
                    .iter()
                    .find(|candidate| candidate.is_useful())
                    .map(|candidate| candidate.models.clone()),
                (None, Err(_)) => None,
            };
            if let Some(models) = models {
                let name: Vec<String> = models.iter().map(|m| m.name()).collect();
                let outcome = apply_models(&context, &models)
                    .with_context(|| format!("cannot predict {}", path.display()))?;
                let predicted = simulate(
                    &outcome.graph,
                    &RecordedOrder,
                    SimOptions {
                        without_inferred: true,
                    },
                )
                .with_context(|| format!("cannot predict {}", path.display()))?;
                view.add_prediction(
                    trace,
                    window,
                    index,
                    &format!("predicted: {}", name.join(" + ")),
                    &outcome.graph,
                    &predicted,
                );
            }
            Some(view)
        }
        None => None,
    };
    let memory: Vec<MemoryCurve> = analysis.memory.iter().map(MemoryCurve::new).collect();
    let advise_error = advise_document
        .as_ref()
        .err()
        .map(|error| error.to_string())
        .unwrap_or_default();
    let scaling_error = scaling.as_ref().err().cloned().unwrap_or_default();
    let report = TraceReport {
        analyze: &analyze,
        advise: advise_document.as_ref().map_err(|_| advise_error.as_str()),
        scaling: scaling.as_ref().map_err(|_| scaling_error.as_str()),
        timeline: timeline.as_ref(),
        memory: &memory,
    };
    Ok(Answer::Text(trace_report(&report)))
}

/// `analyze.steps.csv` for `steps.csv` of the analyze document.
fn prefixed(prefix: &str, files: Vec<(String, String)>) -> Vec<(String, String)> {
    files
        .into_iter()
        .map(|(name, text)| (format!("{prefix}.{name}"), text))
        .collect()
}

fn job(args: &ReportArgs, paths: &[PathBuf]) -> anyhow::Result<Answer> {
    let document = super::replay::ranks_document(paths)?;
    match args.format {
        Format::Csv => Ok(Answer::Files(prefixed(
            "ranks",
            super::csv_files(&document)?,
        ))),
        Format::Html => {
            let title = paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ");
            Ok(Answer::Text(ranks_report(&document, &title)))
        }
        _ => Err(crate::usage(anyhow!(
            "a job folder's report is html or csv (md digests one trace)"
        ))),
    }
}
