//! `whatif TRACE ddp --gpus 64 --gpus-per-node 8 --net 100Gbps`: data-parallel training on N
//! GPUs, predicted from the trace's own collectives, or, in a one-GPU trace (or with
//! `reinsert`, `compress`, `p3`, `fsdp`), from its gradients with the collectives inserted;
//! several `gpus` or `net` values sweep and give a scaling table.

use std::path::PathBuf;

use anyhow::{Context as _, anyhow, bail};
use stepcast::comm::{Algorithm, Link, Preset, parse_bandwidth, parse_latency};
use stepcast::whatif::ddp::gradients::parse_gradient_file;
use stepcast::whatif::ddp::insert::{Dgc, INSERT_NAMES, InsertNames};
use stepcast::whatif::ddp::{DdpConfig, DdpInputs, sweep_with};
use stepcast::whatif::{Context, Peers, predict};
use stepcast_report::json::{WhatIfJson, ddp_json, whatif_json};

use super::Loaded;

/// The options of `whatif ddp`, as the command line spells them (`None`: the default).
#[derive(Clone, Debug, Default)]
pub struct DdpOptions {
    /// World size, or a comma-separated list for a sweep (`8,16,32,64`).
    pub gpus: Option<String>,
    pub gpus_per_node: Option<u32>,
    /// Inter-node bandwidth per GPU, or a comma-separated list for a sweep.
    pub net: Option<String>,
    pub latency: Option<String>,
    pub intra: Option<String>,
    pub algorithm: Option<String>,
    pub flat: bool,
    pub bucket_mb: Option<f64>,
    /// Gradient bytes per parameter, one line per parameter.
    pub gradients: Option<PathBuf>,
    pub reinsert: bool,
    pub compress: Option<String>,
    pub p3: bool,
    pub fsdp: bool,
    /// A CPU-only trace's node cores, which its processes share (`--cores`).
    pub cores: Option<f64>,
}

/// `whatif ddp`, its options checked and its gradient file read.
pub struct Ddp {
    gpus: Option<String>,
    configs: Vec<DdpConfig>,
    gradient_file: Option<Vec<i64>>,
}

impl Ddp {
    /// Checks the options (an error about them is a [`Usage`](crate::Usage) error) and reads
    /// the gradient file.
    pub fn new(options: &DdpOptions) -> anyhow::Result<Ddp> {
        let configs = configs(options).map_err(crate::usage)?;
        let gradient_file = match &options.gradients {
            None => None,
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                Some(
                    parse_gradient_file(&text)
                        .with_context(|| format!("bad gradient file {}", path.display()))?,
                )
            }
        };
        Ok(Ddp {
            gpus: options.gpus.clone(),
            configs,
            gradient_file,
        })
    }

    /// The prediction for every configuration; the document's outcome is the last one's.
    pub fn predict(&self, loaded: &Loaded, peers: Peers) -> anyhow::Result<WhatIfJson> {
        // Inserted tasks get names of their own, in a copy of the trace: the library never
        // changes a trace, and the loaded one serves other questions after this one.
        let mut trace = loaded.trace.clone();
        for name in INSERT_NAMES {
            trace.names.intern(name);
        }
        let window = &loaded.window;
        let mut context = Context::new(&trace, window, loaded.mapping());
        context.peers = peers;
        let cannot = || format!("cannot predict {}", loaded.path.display());
        let baseline = predict(window, &window.graph).with_context(cannot)?;
        let fallback = window
            .graph
            .name
            .first()
            .copied()
            .unwrap_or(stepcast_trace::NameId(0));
        let inputs = DdpInputs {
            gradient_file: self.gradient_file.clone(),
            names: Some(InsertNames::resolve(&trace, fallback)),
        };
        let result =
            sweep_with(&context, &baseline, &self.configs, &inputs).with_context(cannot)?;
        let outcome = result
            .last
            .as_ref()
            .ok_or_else(|| anyhow!("no configuration to predict"))?;
        let last = self.configs.last().copied().unwrap_or_default();
        let name = format!(
            "ddp(gpus={},gpus_per_node={})",
            self.gpus.as_deref().unwrap_or("8"),
            last.gpus_per_node
        );
        let mut document = whatif_json(&trace, window, &name, &[], outcome);
        document.trace.file = loaded.file();
        if !window.graph.has_device_tasks() {
            let processes = last.processes_per_node();
            document.trust.caveats.push(match last.host_cores {
                Some(cores) if last.no_spare_core() => format!(
                    "a CPU-only trace: DDP's all-reduces run on a worker thread of the process \
                     (gloo's), beside the training thread, and the node's {processes} \
                     processes take its {cores} cores (--cores): each all-reduce's CPU time \
                     (its time on the link) is taken from the thread that readied its last \
                     gradient, which the rest of the backward pass waits for"
                ),
                Some(cores) => format!(
                    "a CPU-only trace: DDP's all-reduces run on a worker thread of the process \
                     (gloo's), beside the training thread, on the cores the node's {processes} \
                     processes leave of its {cores} (--cores): their CPU time is not charged \
                     to the training thread"
                ),
                None => "a CPU-only trace: DDP's all-reduces run on a worker thread of the \
                         process (gloo's), beside the training thread; the CPU time they take \
                         is not charged to the training thread (on a machine with no core to \
                         spare, the step is longer: --cores says how many the node has)"
                    .to_string(),
            });
            let share = last.host_share();
            document.trust.caveats.push(match last.host_cores {
                Some(cores) if share > 1.0 => format!(
                    "the {processes} processes of a node share its {cores} cores: every host \
                     task and the untraced host time after it run ×{share:.2} slower"
                ),
                Some(cores) => {
                    format!("the {processes} processes of a node each have a core of its {cores}")
                }
                None => "the node's cores are not given (--cores): with more processes per \
                         node than cores, they time-share them and the step is longer"
                    .to_string(),
            });
        }
        let (ddp, rows) = ddp_json(&result.calibration, &result.plans, &result.points);
        document.ddp = Some(ddp);
        document.sweep = Some(rows);
        Ok(document)
    }
}

/// A link given by preset name or bandwidth, with `alpha_ns` when given by bandwidth.
fn link(text: &str, alpha_ns: f64) -> anyhow::Result<Link> {
    if let Some(preset) = Preset::by_name(text) {
        return Ok(preset.link());
    }
    let bandwidth_bps = parse_bandwidth(text).ok_or_else(|| {
        anyhow!("bad bandwidth `{text}`: expected e.g. 100Gbps, 25GB/s, or a preset (nvlink3, infiniband...)")
    })?;
    Ok(Link {
        alpha_ns,
        bandwidth_bps,
    })
}

/// The configurations `options` asks for: every `--gpus` × every `--net`, in the order given.
fn configs(options: &DdpOptions) -> anyhow::Result<Vec<DdpConfig>> {
    let gpus: Vec<u32> = match &options.gpus {
        None => vec![8],
        Some(list) => list
            .split(',')
            .map(|g| {
                g.trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|&g| g > 0)
                    .ok_or_else(|| anyhow!("bad --gpus `{g}`: expected a positive integer"))
            })
            .collect::<anyhow::Result<_>>()?,
    };
    let latency = match &options.latency {
        None => None,
        Some(text) => Some(
            parse_latency(text)
                .ok_or_else(|| anyhow!("bad --latency `{text}`: expected e.g. 5us, 2000ns"))?,
        ),
    };
    let default_alpha = Preset::Infiniband.link().alpha_ns;
    let nets: Vec<Option<Link>> = match &options.net {
        None => vec![latency.map(|alpha_ns| Link {
            alpha_ns,
            ..Preset::Infiniband.link()
        })],
        Some(list) => {
            // `10,25,100,400Gbps`: a unit written once applies to the bare numbers before it.
            let items: Vec<&str> = list.split(',').map(str::trim).collect();
            let unit: String = items
                .last()
                .map(|last| {
                    last.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.')
                        .to_string()
                })
                .unwrap_or_default();
            items
                .iter()
                .map(|item| {
                    let text = if item.chars().all(|c| c.is_ascii_digit() || c == '.') {
                        format!("{item}{unit}")
                    } else {
                        item.to_string()
                    };
                    let mut link = link(&text, default_alpha)?;
                    if let Some(alpha_ns) = latency {
                        link.alpha_ns = alpha_ns;
                    }
                    Ok(Some(link))
                })
                .collect::<anyhow::Result<_>>()?
        }
    };
    let intra = match &options.intra {
        None => None,
        Some(text) => Some(link(text, Preset::Nvlink3.link().alpha_ns)?),
    };
    let algorithm = match options.algorithm.as_deref() {
        None | Some("ring") => Algorithm::Ring,
        Some("tree") => Algorithm::Tree,
        Some("auto") => Algorithm::Auto,
        Some(other) => bail!("bad --algorithm `{other}`: expected ring, tree or auto"),
    };
    let gpus_per_node = options.gpus_per_node.unwrap_or(8);
    if gpus_per_node == 0 {
        bail!("bad --gpus-per-node 0: expected a positive integer");
    }
    let bucket_bytes = match options.bucket_mb {
        None => None,
        Some(mb) if mb.is_finite() && mb > 0.0 => Some((mb * 1024.0 * 1024.0).round() as i64),
        Some(mb) => bail!("bad --bucket-mb {mb}: expected a positive number"),
    };
    let compression = match options.compress.as_deref() {
        None => None,
        Some(text) => {
            let (kind, ratio) = text.split_once(':').unwrap_or((text, "0.001"));
            let ratio: f64 = ratio.trim().parse().unwrap_or(f64::NAN);
            if !(kind.trim().eq_ignore_ascii_case("dgc") && ratio > 0.0 && ratio <= 1.0) {
                bail!("bad --compress `{text}`: expected dgc or dgc:RATIO with 0 < RATIO <= 1");
            }
            Some(Dgc { ratio })
        }
    };
    if options.fsdp && (options.p3 || compression.is_some()) {
        bail!("--fsdp cannot be combined with --p3 or --compress");
    }
    let mut configs = Vec::new();
    for &g in &gpus {
        for &inter in &nets {
            configs.push(DdpConfig {
                gpus: g,
                gpus_per_node,
                intra,
                inter,
                algorithm,
                hierarchical: !options.flat,
                bucket_bytes,
                reinsert: options.reinsert,
                compression,
                p3: options.p3,
                fsdp: options.fsdp,
                host_cores: options.cores,
            });
        }
    }
    Ok(configs)
}
