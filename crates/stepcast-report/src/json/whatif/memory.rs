//! The memory a memory-for-time trade saves, in bytes and in words.

use serde::Serialize;
use stepcast::whatif::models::MemoryEffect;

use super::mib;

/// What a memory-for-time trade saves, per steady step (means over the steady steps).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MemorySavedJson {
    /// Where the activation bytes come from: `memory_events` (bytes each forward op allocated
    /// and kept), `op_shapes` (each op's first input) or `unknown` (then nothing is saved).
    pub source: &'static str,
    /// Activation bytes the forward pass keeps for the backward pass.
    pub activation_bytes: i64,
    /// Of which the ops the model acts on keep.
    pub chosen_bytes: i64,
    /// Peak activation bytes avoided.
    pub saved_bytes: i64,
    /// Forward ops acted on per steady step.
    pub ops_per_step: u64,
    /// The recorded peak of allocated memory (the device's; the host's on a CPU-only trace),
    /// if the trace has memory events.
    pub peak_before_bytes: Option<i64>,
    /// The peak with the trade, read off the recorded memory timeline (`step_peak_source`
    /// `memory_timeline`); `null` where the memory events record no addresses or there are
    /// none. Never `peak_before_bytes - saved_bytes`: the peak falls by the activations'
    /// saving only where they make it.
    pub peak_after_bytes: Option<i64>,
    /// The gradients a CPU-only step allocates anew (`zero_grad(set_to_none=True)`), FP32, from
    /// its optimizer's recorded shapes; `null` where unknown.
    pub gradient_bytes: Option<i64>,
    /// How far the step's own peak falls (mean over the steady steps; negative: it rises).
    /// `step_peak_source` says how it was found.
    pub step_peak_saved_bytes: Option<i64>,
    /// `memory_timeline`: the recorded memory events with the trade's activations moved
    /// (everything else as recorded); `gradient_floor`: `max(A, G) - max(A - S, G)` with the
    /// activations `A`, the saving `S` and `gradient_bytes` `G` (every gradient is allocated
    /// by the end of the backward pass); `null` where neither is known.
    pub step_peak_source: Option<&'static str>,
    /// With `memory_timeline`: the step's peak above its start, recorded and with the trade
    /// (means over the steady steps).
    pub step_peak_before_bytes: Option<i64>,
    /// See `step_peak_before_bytes`.
    pub step_peak_after_bytes: Option<i64>,
}

impl MemorySavedJson {
    /// How far the step's own peak falls, for a table cell: `2.0 MiB`, `rises 1.6 MiB`,
    /// `none`, or `n/a` where neither the recorded timeline nor the gradients tell.
    pub fn step_peak_cell(&self) -> String {
        let mib = |b: i64| format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64);
        match self.step_peak_saved_bytes {
            None => "n/a".to_string(),
            Some(0) => "none".to_string(),
            Some(b) if b < 0 => format!("rises {}", mib(-b)),
            Some(b) => mib(b),
        }
    }

    /// `saves 1.2 GiB of peak activation memory (2.4 GiB of the 4.8 GiB of activations kept
    /// per step, by 80 forward ops; bytes from memory events); recorded peak 9.1 GiB → 7.9 GiB`.
    pub fn summary(&self) -> String {
        let kept = format!(
            "{} of the {} of activations kept per step, by {} forward ops; bytes from {}",
            mib(self.chosen_bytes),
            mib(self.activation_bytes),
            self.ops_per_step,
            self.source.replace('_', " "),
        );
        let activations = format!(
            "saves {} of peak activation memory ({kept})",
            mib(self.saved_bytes)
        );
        let mut text;
        if let (Some(before), Some(after)) =
            (self.step_peak_before_bytes, self.step_peak_after_bytes)
        {
            // Read off the recorded timeline (what the gradients, the optimizer and the order
            // of frees leave): the figure a budget is about, so it leads.
            let fall = before - after;
            let peak = "the step's own peak (above its start, read off the recorded memory \
                        events)";
            text = match fall.signum() {
                1 => format!(
                    "brings {peak} from {} to {}: it falls by {}",
                    mib(before),
                    mib(after),
                    mib(fall)
                ),
                -1 => format!(
                    "raises {peak} from {} to {}: it rises by {}",
                    mib(before),
                    mib(after),
                    mib(-fall)
                ),
                _ => format!(
                    "leaves {peak} at {}: what sets it is not an activation the trade moves",
                    mib(before)
                ),
            };
            if let (Some(peak), Some(peak_after)) = (self.peak_before_bytes, self.peak_after_bytes)
            {
                text.push_str(&format!(
                    "; recorded peak {} → {}",
                    mib(peak),
                    mib(peak_after)
                ));
            }
            text.push_str(&format!(
                "; the activations' own peak falls by {} ({kept})",
                mib(self.saved_bytes)
            ));
        } else {
            text = activations;
            if let Some(before) = self.peak_before_bytes {
                text.push_str(&format!(
                    "; recorded peak {}, how far it falls unknown (the memory events record no \
                     addresses)",
                    mib(before)
                ));
            }
        }
        if let (Some(gradients), Some(step), Some("gradient_floor")) = (
            self.gradient_bytes,
            self.step_peak_saved_bytes,
            self.step_peak_source,
        ) {
            // Every gradient is allocated by the end of the backward pass: a floor.
            let gradients = mib(gradients);
            text.push_str(&if step <= 0 {
                format!(
                    "; the step's own peak does not fall: its gradients ({gradients}), all \
                     allocated by the end of the backward pass, outweigh the activations"
                )
            } else if step < self.saved_bytes {
                format!(
                    "; the step's own peak falls by about {}: its gradients ({gradients}), all \
                     allocated by the end of the backward pass, are a floor",
                    mib(step)
                )
            } else {
                format!(
                    "; the step's own peak falls by as much: its gradients ({gradients}) stay \
                     below what the activations leave"
                )
            });
        }
        text
    }
}

/// The `memory` section of a memory-for-time trade.
pub fn memory_saved_json(effect: &MemoryEffect) -> MemorySavedJson {
    MemorySavedJson {
        source: effect.source.as_str(),
        activation_bytes: effect.activation_bytes,
        chosen_bytes: effect.chosen_bytes,
        saved_bytes: effect.saved_bytes,
        ops_per_step: effect.units as u64,
        peak_before_bytes: effect.peak_bytes,
        peak_after_bytes: effect.predicted_peak_bytes(),
        gradient_bytes: effect.gradient_bytes,
        step_peak_saved_bytes: effect.step_peak_saved_bytes,
        step_peak_source: effect.step_peak_source(),
        step_peak_before_bytes: effect.step_peak.map(|p| p.recorded_above_start_bytes),
        step_peak_after_bytes: effect.step_peak.map(|p| p.predicted_above_start_bytes),
    }
}
