//! `stepcast whatif TRACE ddp --gpus 64 --gpus-per-node 8 --net 100Gbps`: data-parallel
//! training on N GPUs, predicted from the trace's own collectives, or, in a one-GPU trace
//! (or with `--reinsert`, `--compress`, `--p3`, `--fsdp`), from its gradients with the
//! collectives inserted; `--gpus 8,16,32,64` or `--net 10,25,100,400Gbps` sweeps and prints
//! a scaling table.

use anyhow::{Context as _, anyhow, bail};
use stepcast::comm::{Algorithm, Link, Preset, parse_bandwidth, parse_latency};
use stepcast::whatif::ddp::gradients::parse_gradient_file;
use stepcast::whatif::ddp::insert::{Dgc, INSERT_NAMES, InsertNames};
use stepcast::whatif::ddp::{DdpConfig, DdpInputs, sweep_with};
use stepcast::whatif::predict;
use stepcast_report::{json, table};

use crate::args::WhatIfArgs;

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

/// The configurations `args` asks for: every `--gpus` × every `--net`, in the order given.
pub fn configs(args: &WhatIfArgs) -> anyhow::Result<Vec<DdpConfig>> {
    let gpus: Vec<u32> = match &args.gpus {
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
    let latency = match &args.latency {
        None => None,
        Some(text) => Some(
            parse_latency(text)
                .ok_or_else(|| anyhow!("bad --latency `{text}`: expected e.g. 5us, 2000ns"))?,
        ),
    };
    let default_alpha = Preset::Infiniband.link().alpha_ns;
    let nets: Vec<Option<Link>> = match &args.net {
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
    let intra = match &args.intra {
        None => None,
        Some(text) => Some(link(text, Preset::Nvlink3.link().alpha_ns)?),
    };
    let algorithm = match args.algorithm.as_deref() {
        None | Some("ring") => Algorithm::Ring,
        Some("tree") => Algorithm::Tree,
        Some("auto") => Algorithm::Auto,
        Some(other) => bail!("bad --algorithm `{other}`: expected ring, tree or auto"),
    };
    let gpus_per_node = args.gpus_per_node.unwrap_or(8);
    if gpus_per_node == 0 {
        bail!("bad --gpus-per-node 0: expected a positive integer");
    }
    let bucket_bytes = match args.bucket_mb {
        None => None,
        Some(mb) if mb.is_finite() && mb > 0.0 => Some((mb * 1024.0 * 1024.0).round() as i64),
        Some(mb) => bail!("bad --bucket-mb {mb}: expected a positive number"),
    };
    let compression = match args.compress.as_deref() {
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
    if args.fsdp && (args.p3 || compression.is_some()) {
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
                hierarchical: !args.flat,
                bucket_bytes,
                reinsert: args.reinsert,
                compression,
                p3: args.p3,
                fsdp: args.fsdp,
            });
        }
    }
    Ok(configs)
}

/// Runs `whatif TRACE ddp ...` and returns its output (text, or JSON with `--json`).
pub fn run(args: &WhatIfArgs) -> anyhow::Result<super::Answer> {
    // Every `configs` error is about the options given.
    let configs = configs(args).map_err(crate::usage)?;
    let gradient_file = match &args.gradients {
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
    let mut mapped = super::Mapped::load(&args.trace)?;
    let name = format!(
        "ddp(gpus={},gpus_per_node={})",
        args.gpus.as_deref().unwrap_or("8"),
        configs.last().copied().unwrap_or_default().gpus_per_node
    );
    let document = sweep_document(
        &mut mapped,
        &args.trace,
        &configs,
        gradient_file,
        args.peers.peers(),
        name,
    )?;
    super::render(&args.output, &document, table::whatif_text, None, None)
}

/// The `whatif ddp` document of `configs` on a loaded trace (read from `path`): the last
/// configuration's prediction, the calibration, and the sweep.
pub(super) fn sweep_document(
    mapped: &mut super::Mapped,
    path: &std::path::Path,
    configs: &[DdpConfig],
    gradient_file: Option<Vec<i64>>,
    peers: stepcast::whatif::Peers,
    name: String,
) -> anyhow::Result<json::WhatIfJson> {
    // Inserted tasks get names of their own (the library never changes a trace).
    for name in INSERT_NAMES {
        mapped.trace.names.intern(name);
    }
    let (trace, window, context) = (&mapped.trace, &mapped.window, mapped.context(peers));
    let cannot = || format!("cannot predict {}", path.display());
    let baseline = predict(window, &window.graph).with_context(cannot)?;
    let fallback = window
        .graph
        .name
        .first()
        .copied()
        .unwrap_or(stepcast_trace::NameId(0));
    let inputs = DdpInputs {
        gradient_file,
        names: Some(InsertNames::resolve(trace, fallback)),
    };
    let result = sweep_with(&context, &baseline, configs, &inputs).with_context(cannot)?;
    let outcome = result
        .last
        .as_ref()
        .ok_or_else(|| anyhow!("no configuration to predict"))?;
    let mut document = json::whatif_json(trace, window, &name, &[], outcome);
    document.trace.file = Some(path.display().to_string());
    let (ddp, rows) = json::ddp_json(&result.calibration, &result.plans, &result.points);
    document.ddp = Some(ddp);
    document.sweep = Some(rows);
    Ok(document)
}
