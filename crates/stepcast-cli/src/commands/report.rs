//! `stepcast report TRACE | DIR -o report.html`: one self-contained HTML page of a trace
//! (analyze, advise, the timeline of the typical step recorded, replayed and predicted, memory,
//! the data-parallel scaling curve) or of a job folder (the ranks side by side); with
//! `--format md`, a Markdown digest of analyze and advise; with `--format csv`, their tables.
//! The documents and drawings come from the library (`jobs::report`, `jobs::digest`); this
//! module renders them.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use stepcast_cli::jobs::{self, Job, ReportOptions, Unreadable};
use stepcast_report::html::{JobAdvice, ranks_report};
use stepcast_report::markdown;

use super::Answer;
use crate::args::{Format, ReportArgs};
use crate::progress::Terminal;

/// Runs `report` and returns the page (or the digest, or the tables).
pub fn run(args: &ReportArgs) -> anyhow::Result<Answer> {
    if args.format == Format::Csv && args.output.is_none() {
        return Err(stepcast_cli::usage(anyhow!(
            "--format csv writes one file per table: give a directory with -o DIR"
        )));
    }
    match args.traces.as_slice() {
        [trace]
            if (!trace.is_dir() || stepcast_trace::is_trace_dir(trace))
                && !jobs::is_reduced_file(trace) =>
        {
            one_trace(args, trace)
        }
        paths => {
            super::refuse_execution_trace(super::ET_OF_A_JOB)?;
            job(args, paths)
        }
    }
}

fn one_trace(args: &ReportArgs, path: &Path) -> anyhow::Result<Answer> {
    // The command line is checked before the trace is read, so a typo fails fast.
    let options = ReportOptions::new(
        args.model.as_deref(),
        &args.gpus,
        args.peers.peers(),
        args.host.host(),
    )?;
    if args.format == Format::Text || args.format == Format::Json {
        return Err(stepcast_cli::usage(anyhow!(
            "report writes html, md or csv; for text or JSON use `stepcast analyze` and `stepcast advise`"
        )));
    }
    let progress = Terminal::new();
    let loaded = super::load(path, &progress)?;
    match args.format {
        Format::Md => {
            let digest = jobs::digest(&loaded, args.peers.peers(), args.host.host(), &progress)?;
            let mut text = markdown::analyze_markdown(&digest.analyze);
            match &digest.advise {
                Ok(document) => text.push_str(&markdown::advise_markdown(document)),
                Err(error) => {
                    text.push_str(&format!("\n## What to try\n\nNo what-ifs: {error}.\n"))
                }
            }
            Ok(Answer::Text(text))
        }
        Format::Csv => {
            let digest = jobs::digest(&loaded, args.peers.peers(), args.host.host(), &progress)?;
            let mut files = prefixed("analyze", super::csv_files(&digest.analyze)?);
            if let Ok(document) = &digest.advise {
                files.extend(prefixed("advise", super::csv_files(document)?));
            }
            Ok(Answer::Files(files))
        }
        _ => {
            let page = jobs::report_page(&loaded, &options, &progress)?;
            drop(progress);
            Ok(Answer::Text(page))
        }
    }
}

/// `analyze.steps.csv` for `steps.csv` of the analyze document.
fn prefixed(prefix: &str, files: Vec<(String, String)>) -> Vec<(String, String)> {
    files
        .into_iter()
        .map(|(name, text)| (format!("{prefix}.{name}"), text))
        .collect()
}

/// Whether `paths` is one folder of reduced ranks.
fn reduced_folder(paths: &[PathBuf]) -> bool {
    match paths {
        [dir] if dir.is_dir() => jobs::rank_files(paths)
            .map(|files| files.iter().any(|f| jobs::is_reduced_file(f)))
            .unwrap_or(false),
        _ => false,
    }
}

/// A job's page advises what to change for jobs of up to this many ranks.
const MAX_ADVISED_RANKS: usize = 64;

/// The ranks whose collective instances a job's page lists (`replay --ranks`).
const DETAIL_RANKS: &str = "worst:16";

fn job(args: &ReportArgs, paths: &[PathBuf]) -> anyhow::Result<Answer> {
    let progress = Terminal::new();
    // The page lists every collective instance of at most 16 ranks (all of them in a job of
    // up to 16; else those holding the most critical-path time), so a large job's page stays
    // small; the per-rank tables cover every rank.
    let unreadable = Unreadable::skipped_if(args.skip_unreadable);
    let document = Job::load(paths, super::read_options(), unreadable, &progress)?.replay(
        None,
        Some(DETAIL_RANKS),
        &progress,
    )?;
    // What to change: the job's `advise` needs each rank's trace (its models edit ops a
    // reduced rank does not keep), read again; the page says why where there is none.
    let advice = if args.format != Format::Html {
        None
    } else if paths.iter().any(|p| jobs::is_reduced_file(p)) || reduced_folder(paths) {
        Some(Err(
            "the ranks are reduced: the job's advice needs each rank's trace (stepcast advise \
             DIR on the traces)"
                .to_string(),
        ))
    } else if !document.unreadable.is_empty() {
        Some(Err(
            "some ranks were unreadable: the job's advice needs every rank's trace".to_string(),
        ))
    } else if document.ranks.len() > MAX_ADVISED_RANKS {
        // The job's advice holds every rank's trace at once: a page of a large job keeps the
        // replay's memory bound, and says how to ask.
        Some(Err(format!(
            "{} ranks: the page advises jobs of up to {MAX_ADVISED_RANKS} ranks (the advice \
             holds every rank's trace at once); run stepcast advise DIR",
            document.ranks.len()
        )))
    } else {
        let job = jobs::load_ranks(paths, super::read_options(), &progress)?;
        Some(
            jobs::advise_job(&job, args.peers.peers(), args.host.host(), &progress)
                .map_err(|e| stepcast_cli::message(&e)),
        )
    };
    drop(progress);
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
            let advice = match &advice {
                Some(Ok(advice)) => JobAdvice::Advised(advice),
                Some(Err(why)) => JobAdvice::Unavailable(why.clone()),
                None => JobAdvice::Unavailable("not computed".to_string()),
            };
            Ok(Answer::Text(ranks_report(&document, &advice, &title)))
        }
        _ => Err(stepcast_cli::usage(anyhow!(
            "a job folder's report is html or csv (md digests one trace)"
        ))),
    }
}
