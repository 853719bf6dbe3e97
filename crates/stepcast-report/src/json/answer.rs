//! The answer a person reads first, the same in every output: what kind of time bounds the
//! step, the one change to the program predicted to help most with its speedup and bound, and
//! the next command to run. Built from the `advise` document alone, so `advise`, `analyze`,
//! the report and the Python package say the same words.
//!
//! Hardware what-ifs answer another question (what a faster machine would buy) and are never
//! "try first"; a combination is named beside the single change it extends, not instead of
//! it: a person changes one thing at a time.

use serde::Serialize;
use stepcast::whatif::{StepTime, TimeKind};
use stepcast_trace::Trace;

use super::whatif::{AdviseJson, CandidateJson};
use crate::names::short_name;

/// What kind of time bounds the steady step (`stepcast::whatif::StepTime`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepTimeJson {
    /// The kind with the most critical-path time: `cpu_work`, `blocking_wait` (the host
    /// blocked inside a runtime call), `data_loading`, `compute`, `copies`, `communication`
    /// or `latency` (launch latency, stream waits); `None` (`null`) for an empty path.
    pub bound: Option<&'static str>,
    /// Critical-path time per steady step, by kind, in that order.
    pub by_kind_ns: super::NsMap,
    /// Per kind, the names with the most of it, most first.
    pub top: Vec<KindItemJson>,
}

/// A name that takes critical-path time of one kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KindItemJson {
    /// The kind of time, as in `bound`.
    pub kind: &'static str,
    /// The task's full name (a kernel, a runtime call, a CPU op); for data loading, what the
    /// loader spent it in (an op, a Python frame, the loader range).
    pub name: String,
    /// The op it ran in, if any; for data loading, the loader range.
    pub op: Option<String>,
    /// Path time per steady step.
    pub ns: i64,
}

impl StepTimeJson {
    /// The document of `step_time`, with `trace`'s names.
    pub fn new(trace: &Trace, step_time: &StepTime) -> StepTimeJson {
        StepTimeJson {
            bound: step_time.bound().map(TimeKind::as_str),
            by_kind_ns: super::NsMap(
                TimeKind::ALL
                    .iter()
                    .map(|&k| (k.as_str(), step_time.ns(k)))
                    .collect(),
            ),
            top: TimeKind::ALL
                .iter()
                .flat_map(|&kind| {
                    step_time.top[kind as usize]
                        .iter()
                        .map(move |item| KindItemJson {
                            kind: kind.as_str(),
                            name: trace.name(item.name).to_string(),
                            op: item.op.map(|op| trace.name(op).to_string()),
                            ns: item.ns,
                        })
                })
                .collect(),
        }
    }

    fn length_ns(&self) -> i64 {
        self.by_kind_ns.total()
    }
}

/// One change the answer names.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AnswerChangeJson {
    /// The models' names joined by ` + ` (as `advise` lists it).
    pub name: String,
    /// Its predicted steady-state period.
    pub predicted_ns: i64,
    /// `step_ns / predicted_ns`.
    pub speedup: Option<f64>,
    /// The most the change can gain, as a speedup (`trust.bound_speedup`).
    pub bound_speedup: Option<f64>,
    /// How many caveats its prediction carries.
    pub caveats: usize,
    /// One model: its median error out of sample on the measured pairs of this kind of trace
    /// (`candidates[].record`); `null` where no such pair holds it, or for a combination.
    pub record_median_error: Option<f64>,
    /// Those pairs (0: no measured pair of this kind holds it).
    pub record_pairs: u32,
}

impl AnswerChangeJson {
    fn new(c: &CandidateJson) -> AnswerChangeJson {
        let record = c.record.first().filter(|_| c.models.len() == 1);
        AnswerChangeJson {
            name: c.name.clone(),
            predicted_ns: c.predicted_ns,
            speedup: c.speedup,
            bound_speedup: c.trust.bound_speedup,
            caveats: c.trust.caveats.len(),
            record_median_error: record.and_then(|r| r.out_of_sample_median_error),
            record_pairs: record.map_or(0, |r| r.out_of_sample),
        }
    }
}

/// The answer first (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AnswerJson {
    /// The sentence every output leads with.
    pub sentence: String,
    /// The step time every command names: the steady-state period of the recording (the mean
    /// time between the ends of consecutive steady steps), what every prediction divides.
    pub step_ns: i64,
    /// The steady steps it is measured over.
    pub steady_steps: Vec<u64>,
    /// What kind of time bounds it (`step_time.bound`).
    pub bound: Option<&'static str>,
    /// The bound's share of the critical path, in `[0, 1]`.
    pub bound_share: Option<f64>,
    /// The one change to the program predicted to help most; `None` (`null`) when none does,
    /// or no prediction is offered.
    pub change: Option<AnswerChangeJson>,
    /// A combination of program changes, with `change`, predicted to help more; `None`
    /// (`null`) when none does.
    pub together: Option<AnswerChangeJson>,
    /// What the best hardware what-if would buy (a faster machine, not a change to make).
    pub hardware: Option<AnswerChangeJson>,
    /// Why no change is offered, when none is: predictions declined on this trace, or the
    /// `DataLoader` workers pace the step.
    pub no_change: Option<String>,
    /// The command to run next.
    pub next: String,
    /// How to get steps, where the trace has no step markers and its whole window stands as
    /// one step; `None` (`null`) otherwise.
    pub steps_hint: Option<String>,
}

/// `1.234×`, or `n/a`.
fn times(speedup: Option<f64>) -> String {
    speedup.map_or_else(|| "n/a".to_string(), |s| format!("{s:.3}×"))
}

fn ms(ns: i64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

/// What a kind of time is called in the sentence.
pub fn kind_words(kind: &str) -> &'static str {
    match kind {
        "cpu_work" => "CPU work",
        "blocking_wait" => "the host blocked in runtime calls",
        "data_loading" => "data loading on the host",
        "compute" => "device compute",
        "copies" => "memory copies",
        "communication" => "communication",
        "latency" => "waiting (launch latency, stream waits)",
        _ => "nothing",
    }
}

/// `` `cudaLaunchKernel` in `aten::copy_` ``: a name of the bound's kind as a reader knows
/// it.
fn item_words(item: &KindItemJson) -> String {
    let name = readable(&item.name);
    match &item.op {
        Some(op) if *op != item.name => format!("`{name}` in `{}`", readable(op)),
        _ => format!("`{name}`"),
    }
}

/// The widest a name is shown in the sentence.
const NAME_WIDTH: usize = 60;

/// A name as the sentence shows it: as recorded when short (`aten::copy_`), else its short
/// form (demangled, templates collapsed), cut in the middle if still too long.
fn readable(name: &str) -> String {
    if name.chars().count() <= NAME_WIDTH && !name.starts_with("_Z") {
        return name.to_string();
    }
    let short = short_name(name);
    let chars: Vec<char> = short.chars().collect();
    if chars.len() <= NAME_WIDTH {
        return short;
    }
    let half = (NAME_WIDTH - 1) / 2;
    let head: String = chars[..half].iter().collect();
    let tail: String = chars[chars.len() - half..].iter().collect();
    format!("{head}…{tail}")
}

/// Where a step number list is shown.
fn steps(numbers: &[u64]) -> String {
    let list = crate::table::step_list(numbers);
    if numbers.len() == 1 {
        format!("step {list}")
    } else {
        format!("steps {list}")
    }
}

/// A change as the sentence names it: `cuda_graphs: 4.331× (at most 30.854×; 4 caveats)`.
fn change_words(c: &AnswerChangeJson) -> String {
    let bound = c
        .bound_speedup
        .map_or_else(|| "no bound".to_string(), |b| format!("at most {b:.3}×"));
    let caveats = match c.caveats {
        0 => "no caveat".to_string(),
        1 => "1 caveat".to_string(),
        n => format!("{n} caveats"),
    };
    // How far its model's predictions held on measured pairs like this trace: the headline
    // says it, not only the tables below (the change offered is one model).
    let record = match c.record_median_error {
        Some(median) => format!(
            "; its model off by a median {:.0}% on {} measured pair{} of such traces",
            median * 100.0,
            c.record_pairs,
            if c.record_pairs == 1 { "" } else { "s" }
        ),
        None => "; its model unmeasured on such traces".to_string(),
    };
    format!(
        "{}, predicted {} ({bound}; {caveats}{record})",
        c.name,
        times(c.speedup)
    )
}

/// The file as a command line names it (`TRACE` where the document knows no path).
fn file_arg(doc: &AdviseJson) -> String {
    let file = doc.trace.file.as_deref().unwrap_or("TRACE");
    if file
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
    {
        file.to_string()
    } else {
        format!("'{}'", file.replace('\'', r"'\''"))
    }
}

/// A model as `whatif` takes it on the command line: its name, then each parameter its
/// name carries as an option (`prefetch_inputs(cores=2,threads=1)` is `prefetch_inputs
/// --cores 2 --threads 1`).
fn whatif_args(model: &str) -> String {
    let Some((base, params)) = model
        .strip_suffix(')')
        .and_then(|inner| inner.split_once('('))
    else {
        return model.to_string();
    };
    let mut args = base.to_string();
    for param in params.split(',') {
        match param.split_once('=') {
            Some((name, value)) => args.push_str(&format!(" --{name} {value}")),
            None => args.push_str(&format!(" --{param}")),
        }
    }
    args
}

/// The answer of an `advise` document.
pub fn answer(doc: &AdviseJson) -> AnswerJson {
    let time = &doc.step_time;
    let length = time.length_ns();
    let bound = time.bound;
    let bound_share =
        bound.and_then(|b| (length > 0).then(|| time.by_kind_ns.get(b) as f64 / length as f64));
    let helps = |c: &&CandidateJson| c.can_headline() && c.trust.declined.is_none();
    let change = doc
        .candidates
        .iter()
        .filter(helps)
        .find(|c| !c.hardware && c.models.len() == 1);
    let together = change.and_then(|single| {
        doc.candidates
            .iter()
            .filter(helps)
            .filter(|c| !c.hardware && c.models.len() > 1)
            .filter(|c| c.models.contains(&single.models[0]))
            .find(|c| c.speedup > single.speedup)
    });
    // What a faster machine buys: a hardware model alone first, a mix only without one.
    let hardware = doc
        .candidates
        .iter()
        .filter(helps)
        .find(|c| c.hardware && c.models.iter().all(|m| is_hardware_model(m)))
        .or_else(|| doc.candidates.iter().filter(helps).find(|c| c.hardware));
    // The best single change that helps but whose gain its model's record cannot tell from
    // the model's error: said beside the answer, never offered as what to try first.
    let held = doc
        .candidates
        .iter()
        .filter(|c| !c.hardware && c.models.len() == 1 && c.useful)
        .filter(|c| c.trust.declined.is_none() && c.trust.anomaly.is_none())
        .filter(|c| c.trust.rests_on.is_none())
        .find_map(|c| Some((c, c.held_back.as_ref()?)))
        .filter(|(c, _)| change.is_none_or(|offered| c.speedup > offered.speedup));
    let no_change = match (&doc.declined, change) {
        (Some(reason), _) => Some(format!("no prediction is offered on this trace: {reason}")),
        (None, None) if held.is_some() => Some(
            "no change to the program is predicted to gain more than its model's error on \
             the recorded pairs"
                .to_string(),
        ),
        (None, None) => Some(match &doc.paced_by {
            Some(why) => format!("no change to the program is predicted to help: {why}"),
            None => format!(
                "no change to the program is predicted to help (none reaches {})",
                times(Some(doc.useful_speedup))
            ),
        }),
        (None, Some(_)) => None,
    };
    let file = file_arg(doc);
    let next = match (change, held) {
        (Some(c), _) => format!("stepcast whatif {file} {}", whatif_args(&c.models[0])),
        // Its record, caveats and bound, to judge it by.
        (None, Some((c, _))) => format!("stepcast whatif {file} {}", whatif_args(&c.models[0])),
        (None, None) => format!("stepcast report {file} -o report.html"),
    };
    let steps_hint = doc.no_step_markers.then(|| match doc.step_range_events {
        // A PyTorch trace: the program can mark its steps, or its own ranges can be read as them.
        Some(events) if events == stepcast_trace::kineto::STEP_RANGE_EVENTS => format!(
            "record step markers to see steps (`prof.step()` once per iteration), or \
             `--step-range REGEX` makes steps of the {events} whose name matches REGEX"
        ),
        Some(events) => {
            format!("`--step-range REGEX` makes steps of the {events} whose name matches REGEX")
        }
        None => "record step markers to see steps (PyTorch: `prof.step()` once per iteration)"
            .to_string(),
    });
    let mut sentence = if doc.no_step_markers {
        format!(
            "The whole window takes {} (one step: the trace has no step markers)",
            ms(doc.baseline_ns)
        )
    } else {
        format!(
            "The step takes {} (the steady-state period, {})",
            ms(doc.baseline_ns),
            steps(&doc.steady_steps)
        )
    };
    match (bound, bound_share) {
        (Some(kind), Some(share)) => {
            sentence.push_str(&format!(
                " and is bound by {} ({:.0}% of its critical path",
                kind_words(kind),
                share * 100.0
            ));
            let of_kind = time.by_kind_ns.get(kind);
            match time.top.iter().find(|i| i.kind == kind) {
                Some(item) if of_kind > 0 => sentence.push_str(&format!(
                    "; the most of it: {}, {:.0}%)",
                    item_words(item),
                    item.ns as f64 * 100.0 / of_kind as f64
                )),
                _ => sentence.push(')'),
            }
        }
        _ => sentence.push_str(" and has no critical path"),
    }
    let change = change.map(AnswerChangeJson::new);
    let together = together.map(AnswerChangeJson::new);
    match (&change, &no_change) {
        (Some(c), _) => {
            sentence.push_str(&format!(". Try first: {}", change_words(c)));
            if let Some(t) = &together {
                sentence.push_str(&format!("; {} together: {}", t.name, times(t.speedup)));
            }
        }
        (None, Some(why)) => sentence.push_str(&format!(". {}{}", capital(why), "")),
        (None, None) => {}
    }
    if let Some((c, why)) = held {
        sentence.push_str(&format!(
            ". Not offered first: {} ({}): {why}",
            c.name,
            times(c.speedup)
        ));
    }
    // A declined change that could have paid more than the one offered: the answer says it
    // was left unpredicted rather than let the smaller change stand alone.
    let offered = change.as_ref().and_then(|c| c.speedup).unwrap_or(1.0);
    let passed_over = doc
        .failed
        .iter()
        .filter_map(|f| Some((f, f.at_most?)))
        .filter(|&(_, at_most)| at_most >= doc.useful_speedup && at_most > offered)
        .max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((f, at_most)) = passed_over {
        sentence.push_str(&format!(
            ". Not predicted: {} (up to {}) is declined on this trace: `stepcast whatif {file} {}` \
             says why",
            f.name,
            times(Some(at_most)),
            whatif_args(&f.name)
        ));
    }
    if let Some(hint) = &steps_hint {
        sentence.push_str(&format!(". {}", capital(hint)));
    }
    sentence.push_str(&format!(". Next: `{next}`."));
    AnswerJson {
        sentence,
        step_ns: doc.baseline_ns,
        steady_steps: doc.steady_steps.clone(),
        bound,
        bound_share,
        change,
        together,
        hardware: hardware.map(AnswerChangeJson::new),
        no_change,
        next,
        steps_hint,
    }
}

fn is_hardware_model(name: &str) -> bool {
    stepcast::whatif::Model::by_name(name).is_some_and(|m| m.is_hardware())
}

fn capital(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
