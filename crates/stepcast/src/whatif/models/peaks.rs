//! Datasheet peak throughputs of a GPU, for the FP32 → FP16 factors `amp` divides
//! tensor-core-eligible kernels by.
//!
//! A ratio of peaks is what a kernel can gain at most when its arithmetic moves to FP16
//! tensor cores: an FP32 kernel on CUDA cores (SIMT `ffma`, `sgemm`) reaches a large share of
//! the FP32 peak, an FP16 tensor-core kernel a smaller share of its peak, so the achieved
//! ratio is usually below the peak ratio. The factors are therefore a bound, said so in the
//! model's caveats, never fitted to a measured pair.

use stepcast_trace::DeviceInfo;

/// Dense peaks of one GPU, TFLOP/s, and where they come from.
#[derive(Clone, Debug, PartialEq)]
pub struct Peaks {
    /// FP32 on CUDA cores (SIMT).
    pub fp32_tflops: f64,
    /// TF32 on tensor cores (`None`: the GPU has none, before compute capability 8.0).
    pub tf32_tflops: Option<f64>,
    /// FP16 on tensor cores, FP32 accumulate, dense.
    pub fp16_tflops: f64,
    /// The product or architecture the figures are for.
    pub source: String,
}

/// (words of the product name, FP32, TF32, FP16 tensor TFLOP/s, product, memory TB/s, host
/// link GB/s per direction: PCIe 3/4/5 x16 = 16/32/64)
type Product = (
    &'static [&'static str],
    f64,
    Option<f64>,
    f64,
    &'static str,
    f64,
    f64,
);
/// (compute capability, FP32, TF32, FP16 tensor FLOP per SM and clock, architecture)
type Architecture = ((i64, i64), f64, Option<f64>, f64, &'static str);

/// Datasheet figures by product name (NVIDIA's data sheets; dense, boost clock). Checked in
/// order: `A100` before `A10`, `L40S` before `L4`, `H100 PCIe` before `H100`.
/// Memory bandwidth: HBM3 3.35 TB/s (H100 SXM), HBM2e 2.0 (H100 PCIe, A100 80GB SXM 2.04),
/// HBM3e 4.8 (H200), HBM2 0.9 (V100), GDDR6 0.864/0.3/0.6/0.32 (L40S/L4/A10/T4), HBM3e 7.7
/// (B200), HBM3 5.3 (MI300X, MI300A), HBM3e 6.0 (MI325X), HBM2e 3.28/1.64 (MI250X and MI250,
/// MI210).
const PRODUCTS: &[Product] = &[
    (
        &["H100", "PCIE"],
        51.2,
        Some(378.0),
        756.0,
        "H100 PCIe",
        2.0,
        64.0,
    ),
    (&["H100"], 67.0, Some(494.7), 989.4, "H100 SXM", 3.35, 64.0),
    (&["H200"], 67.0, Some(494.7), 989.4, "H200 SXM", 4.8, 64.0),
    (&["A100"], 19.5, Some(156.0), 312.0, "A100", 2.04, 32.0),
    (&["V100"], 15.7, None, 125.0, "V100 SXM2", 0.9, 16.0),
    (&["L40S"], 91.6, Some(183.0), 362.0, "L40S", 0.864, 32.0),
    (&["L4"], 30.3, Some(60.0), 121.0, "L4", 0.3, 32.0),
    (&["A10"], 31.2, Some(62.5), 125.0, "A10", 0.6, 32.0),
    (&["T4"], 8.1, None, 65.0, "T4", 0.32, 16.0),
    // Blackwell: HGX B200 (1,000 W), dense; TF32 and FP16 half the sparse figures.
    (&["B200"], 75.0, Some(1100.0), 2250.0, "B200 HGX", 7.7, 64.0),
    // AMD Instinct (AMD's data sheets, dense). FP32 is the matrix cores' rate, at which
    // rocBLAS and hipBLASLt run FP32 products; no TF32, which PyTorch on ROCm leaves off.
    (&["MI325X"], 163.4, None, 1307.4, "MI325X", 6.0, 64.0),
    (&["MI300X"], 163.4, None, 1307.4, "MI300X", 5.3, 64.0),
    (&["MI300A"], 122.6, None, 980.6, "MI300A", 5.3, 64.0),
    (&["MI250X"], 95.7, None, 383.0, "MI250X", 3.2768, 32.0),
    (&["MI250"], 90.5, None, 362.1, "MI250", 3.2768, 32.0),
    (&["MI210"], 45.3, None, 181.0, "MI210", 1.6384, 32.0),
];

/// A GPU's datasheet figures, for `faster_hardware --to`: its peaks, memory bandwidth and
/// host link.
#[derive(Clone, Debug, PartialEq)]
pub struct Datasheet {
    pub peaks: Peaks,
    pub memory_tb_s: f64,
    pub host_link_gb_s: f64,
}

/// The datasheet of the product named `name` (`h200`, `A100`, `NVIDIA H100 80GB HBM3`):
/// the first of `PRODUCTS` whose words are all in it (`None`: not one of them).
pub fn datasheet(name: &str) -> Option<Datasheet> {
    let upper = name.to_ascii_uppercase().replace('-', " ");
    let &(_, fp32, tf32, fp16, source, memory_tb_s, host_link_gb_s) = PRODUCTS
        .iter()
        .find(|(words, ..)| has_words(&upper, words))?;
    Some(Datasheet {
        peaks: Peaks {
            fp32_tflops: fp32,
            tf32_tflops: tf32,
            fp16_tflops: fp16,
            source: format!("{source} datasheet"),
        },
        memory_tb_s,
        host_link_gb_s,
    })
}

/// The canonical name of the product `name` designates (`h200` → `H200 SXM`), what
/// `faster_hardware --to` keeps.
pub fn product_named(name: &str) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    PRODUCTS
        .iter()
        .find(|(words, ..)| has_words(&upper, words))
        .map(|p| p.4)
}

/// The product names [`datasheet`] knows, for messages.
pub fn products() -> Vec<&'static str> {
    PRODUCTS.iter().map(|p| p.4).collect()
}

/// Per multiprocessor and clock (FLOP), from the architecture whitepapers, where the product
/// is not in [`PRODUCTS`]: the ratios do not depend on the SM count or clock.
/// (compute capability, FP32, TF32, FP16 tensor)
const ARCHITECTURES: &[Architecture] = &[
    ((7, 0), 128.0, None, 1024.0, "Volta (7.0)"),
    ((7, 5), 128.0, None, 1024.0, "Turing (7.5)"),
    ((8, 0), 128.0, Some(1024.0), 2048.0, "Ampere GA100 (8.0)"),
    ((8, 6), 256.0, Some(512.0), 1024.0, "Ampere GA10x (8.6)"),
    ((8, 9), 256.0, Some(512.0), 1024.0, "Ada (8.9)"),
    ((9, 0), 256.0, Some(2048.0), 4096.0, "Hopper (9.0)"),
];

/// Whether every word of `words` is in `name` as a word of its own (letters and digits
/// delimited by anything else), so `A10` does not match `A100`.
fn has_words(name: &str, words: &[&str]) -> bool {
    let upper = name.to_ascii_uppercase();
    let tokens: Vec<&str> = upper
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
        .collect();
    words.iter().all(|w| tokens.contains(w))
}

/// The peaks of `device`: by product name, else by compute capability (per-SM rates times the
/// trace's SM count, so the absolute figures are per clock GHz); `None` when neither is known.
pub fn peaks(device: &DeviceInfo) -> Option<Peaks> {
    if let Some(&(_, fp32, tf32, fp16, source, ..)) = PRODUCTS
        .iter()
        .find(|(words, ..)| has_words(&device.name, words))
    {
        return Some(Peaks {
            fp32_tflops: fp32,
            tf32_tflops: tf32,
            fp16_tflops: fp16,
            source: format!("{source} datasheet"),
        });
    }
    let cc = device.compute_capability?;
    let &(_, fp32, tf32, fp16, source) = ARCHITECTURES.iter().find(|(c, ..)| *c == cc)?;
    // Per SM per clock; scaled by the SM count at 1 GHz so the figures read as TFLOP/s per
    // GHz of clock (Kineto records no clock). Only their ratios are used.
    let sms = device.sm_count.unwrap_or(1).max(1) as f64 * 1e-3;
    Some(Peaks {
        fp32_tflops: fp32 * sms,
        tf32_tflops: tf32.map(|t| t * sms),
        fp16_tflops: fp16 * sms,
        source: format!("{source} whitepaper rates per SM and clock"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(name: &str, cc: Option<(i64, i64)>) -> DeviceInfo {
        DeviceInfo {
            id: 0,
            name: name.to_string(),
            compute_capability: cc,
            sm_count: Some(132),
            max_threads_per_sm: None,
            memory_bytes: None,
        }
    }

    #[test]
    fn products_by_name_then_architecture() {
        let h100 = peaks(&device("NVIDIA H100 80GB HBM3", Some((9, 0)))).expect("H100");
        assert_eq!((h100.fp32_tflops, h100.fp16_tflops), (67.0, 989.4));
        let a10 = peaks(&device("NVIDIA A10", Some((8, 6)))).expect("A10");
        assert_eq!(a10.fp16_tflops, 125.0);
        let a100 = peaks(&device("NVIDIA A100-SXM4-40GB", Some((8, 0)))).expect("A100");
        assert_eq!(a100.fp32_tflops, 19.5);
        let v100 = peaks(&device("Tesla V100-SXM2-16GB", Some((7, 0)))).expect("V100");
        assert_eq!(v100.tf32_tflops, None);
        let other = peaks(&device("Some GPU", Some((9, 0)))).expect("by cc");
        assert_eq!(other.fp16_tflops / other.fp32_tflops, 16.0);
        assert!(peaks(&device("Some GPU", Some((12, 0)))).is_none());
        assert!(peaks(&device("Some GPU", None)).is_none());
        // ROCm's names, as Kineto writes them (`AMD Instinct MI250X/MI250`: the first word
        // that names a product wins).
        let mi210 = peaks(&device("AMD Instinct MI210", Some((9, 0)))).expect("MI210");
        assert_eq!((mi210.fp32_tflops, mi210.tf32_tflops), (45.3, None));
        let mi250x = datasheet("AMD Instinct MI250X/MI250").expect("MI250X");
        assert_eq!(mi250x.peaks.fp16_tflops, 383.0);
        assert_eq!(product_named("mi300x"), Some("MI300X"));
        assert_eq!(datasheet("NVIDIA B200").map(|d| d.memory_tb_s), Some(7.7));
    }
}
