//! Collective cost models (issue 5, item 1): latency + bandwidth (α-β) terms per algorithm,
//! with NCCL's bus-bandwidth conventions, topology presets, the hierarchical decomposition of
//! BlueConnect, and a calibration of the network from the trace's own NCCL kernels
//! ([`calibrate()`]).
//!
//! Conventions (NCCL's `PERFORMANCE.md`): a collective of `S` bytes taking `t` has algorithm
//! bandwidth `algbw = S / t` and bus bandwidth `busbw = algbw × factor(n)`, where the factor
//! makes `busbw` comparable with the link's speed whatever the rank count: all-reduce
//! `2(n−1)/n`, reduce-scatter, all-gather and all-to-all `(n−1)/n`, broadcast, reduce and
//! send/recv `1`. `S` is the full buffer: all-reduce and broadcast its size, all-gather its
//! output, reduce-scatter its input, all-to-all what one rank sends. A [`Link`]'s bandwidth is
//! the bus bandwidth a ring achieves on it, so `t = latency + S × factor(n) / bandwidth`.

pub mod calibrate;

pub use calibrate::{Calibration, Fit, RecordedCollective, calibrate, recorded_collectives};

/// A collective operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Collective {
    AllReduce,
    ReduceScatter,
    AllGather,
    Broadcast,
    Reduce,
    /// gloo's `gather` and `scatter` (NCCL has no kernel of their own for them).
    Gather,
    Scatter,
    AllToAll,
    SendRecv,
}

impl Collective {
    pub const ALL: [Collective; 9] = [
        Collective::AllReduce,
        Collective::ReduceScatter,
        Collective::AllGather,
        Collective::Broadcast,
        Collective::Reduce,
        Collective::Gather,
        Collective::Scatter,
        Collective::AllToAll,
        Collective::SendRecv,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Collective::AllReduce => "all_reduce",
            Collective::ReduceScatter => "reduce_scatter",
            Collective::AllGather => "all_gather",
            Collective::Broadcast => "broadcast",
            Collective::Reduce => "reduce",
            Collective::Gather => "gather",
            Collective::Scatter => "scatter",
            Collective::AllToAll => "all_to_all",
            Collective::SendRecv => "send_recv",
        }
    }

    /// The collective a `Collective name` arg (`allreduce`, `_allgather_base`,
    /// `reduce_scatter_tensor_coalesced`...) or an NCCL kernel name
    /// (`ncclKernel_AllReduce_RING_LL_Sum_float`, `ncclDevKernel_SendRecv`) names.
    pub fn parse(name: &str) -> Option<Collective> {
        // Bytes, not chars: only ASCII letters and digits are kept (a `String` built char by
        // char with Unicode lowercasing took 6 % of the instructions of building
        // df_index_resolver's graph, cachegrind).
        let lower: Vec<u8> = name
            .bytes()
            .filter(u8::is_ascii_alphanumeric)
            .map(|b| b.to_ascii_lowercase())
            .collect();
        let has = |s: &str| lower.windows(s.len()).any(|w| w == s.as_bytes());
        Some(if has("allreduce") {
            Collective::AllReduce
        } else if has("reducescatter") {
            Collective::ReduceScatter
        } else if has("allgather") {
            Collective::AllGather
        } else if has("alltoall") {
            Collective::AllToAll
        } else if has("broadcast") || has("bcast") {
            Collective::Broadcast
        } else if has("sendrecv") || has("send") || has("recv") {
            Collective::SendRecv
        } else if has("gather") {
            Collective::Gather
        } else if has("scatter") {
            Collective::Scatter
        } else if has("reduce") {
            Collective::Reduce
        } else {
            return None;
        })
    }

    /// NCCL's bus-bandwidth factor for `n` ranks (`busbw = algbw × factor`).
    pub fn bus_factor(self, n: u32) -> f64 {
        let n = n.max(1) as f64;
        match self {
            Collective::AllReduce => 2.0 * (n - 1.0) / n,
            Collective::ReduceScatter
            | Collective::AllGather
            | Collective::Gather
            | Collective::Scatter
            | Collective::AllToAll => (n - 1.0) / n,
            Collective::Broadcast | Collective::Reduce | Collective::SendRecv => 1.0,
        }
    }

    /// Latency steps (hops paid one after the other) of `algorithm` for `n` ranks.
    pub fn latency_steps(self, algorithm: Algorithm, n: u32) -> f64 {
        let n = n.max(1) as f64;
        let log = n.log2().ceil().max(1.0);
        match (self, algorithm) {
            (Collective::SendRecv, _) => 1.0,
            (Collective::AllReduce, Algorithm::Ring) => 2.0 * (n - 1.0),
            (Collective::AllReduce, Algorithm::Tree) => 2.0 * log,
            (Collective::Broadcast | Collective::Reduce, Algorithm::Tree) => log,
            (_, _) => n - 1.0,
        }
    }
}

/// How a collective moves its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Algorithm {
    /// Every rank passes chunks to the next: bandwidth-optimal, `O(n)` latency steps.
    Ring,
    /// NCCL's double binary tree: `O(log n)` latency steps; for all-reduce each rank moves
    /// the whole buffer twice (reduce up, broadcast down), so its bandwidth term is `2S/B`
    /// rather than the ring's `2(n−1)/n · S/B`.
    Tree,
    /// The faster of ring and tree for the message (what NCCL's tuner picks, approximately).
    Auto,
}

impl Algorithm {
    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::Ring => "ring",
            Algorithm::Tree => "tree",
            Algorithm::Auto => "auto",
        }
    }
}

/// One level of interconnect: a per-hop latency and the bus bandwidth a ring reaches on it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Link {
    /// Latency of one step of the algorithm, ns.
    pub alpha_ns: f64,
    /// Bus bandwidth, bytes per second.
    pub bandwidth_bps: f64,
}

impl Link {
    /// `gbps` gigabits per second (a network's rating) with a per-hop latency.
    pub fn gbits(gbps: f64, alpha_ns: f64) -> Link {
        Link {
            alpha_ns,
            bandwidth_bps: gbps * 1e9 / 8.0,
        }
    }

    /// `gbytes` gigabytes per second (an interconnect's rating) with a per-hop latency.
    pub fn gbytes(gbytes: f64, alpha_ns: f64) -> Link {
        Link {
            alpha_ns,
            bandwidth_bps: gbytes * 1e9,
        }
    }

    /// Time of `collective` of `bytes` over `n` ranks on this link alone.
    pub fn time_ns(&self, collective: Collective, algorithm: Algorithm, bytes: f64, n: u32) -> f64 {
        if n <= 1 {
            return 0.0;
        }
        let bandwidth = |factor: f64| bytes.max(0.0) * factor / self.bandwidth_bps * 1e9;
        let ring = collective.latency_steps(Algorithm::Ring, n) * self.alpha_ns
            + bandwidth(collective.bus_factor(n));
        let tree_factor = match collective {
            Collective::AllReduce => 2.0,
            _ => collective.bus_factor(n),
        };
        let tree =
            collective.latency_steps(Algorithm::Tree, n) * self.alpha_ns + bandwidth(tree_factor);
        match algorithm {
            Algorithm::Ring => ring,
            Algorithm::Tree => tree,
            Algorithm::Auto => ring.min(tree),
        }
    }
}

/// Interconnect presets: typical bus bandwidths (nccl-tests on the hardware) and per-hop
/// latencies. Override either with the CLI's `--net`/`--latency` or a calibration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// PCIe 3.0 x16: ~12 GB/s.
    Pcie3,
    /// PCIe 4.0 x16: ~24 GB/s.
    Pcie4,
    /// PCIe 5.0 x16: ~48 GB/s.
    Pcie5,
    /// NVLink 2 (V100, 6 links): ~130 GB/s.
    Nvlink2,
    /// NVLink 3 (A100, 12 links): ~230 GB/s.
    Nvlink3,
    /// NVLink 4 (H100, 18 links): ~360 GB/s.
    Nvlink4,
    /// InfiniBand HDR 200 Gb/s per GPU.
    Infiniband,
    /// RoCE 100 Gb/s per GPU.
    Roce,
    /// Ethernet (TCP sockets) 25 Gb/s per GPU.
    Ethernet,
}

impl Preset {
    pub const ALL: [Preset; 9] = [
        Preset::Pcie3,
        Preset::Pcie4,
        Preset::Pcie5,
        Preset::Nvlink2,
        Preset::Nvlink3,
        Preset::Nvlink4,
        Preset::Infiniband,
        Preset::Roce,
        Preset::Ethernet,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Preset::Pcie3 => "pcie3",
            Preset::Pcie4 => "pcie4",
            Preset::Pcie5 => "pcie5",
            Preset::Nvlink2 => "nvlink2",
            Preset::Nvlink3 => "nvlink3",
            Preset::Nvlink4 => "nvlink4",
            Preset::Infiniband => "infiniband",
            Preset::Roce => "roce",
            Preset::Ethernet => "ethernet",
        }
    }

    pub fn by_name(name: &str) -> Option<Preset> {
        let name = name.to_ascii_lowercase().replace(['-', '_'], "");
        Preset::ALL
            .into_iter()
            .find(|p| p.as_str() == name)
            .or(match name.as_str() {
                "pcie" => Some(Preset::Pcie4),
                "nvlink" => Some(Preset::Nvlink3),
                "ib" => Some(Preset::Infiniband),
                "eth" => Some(Preset::Ethernet),
                _ => None,
            })
    }

    pub fn link(self) -> Link {
        match self {
            Preset::Pcie3 => Link::gbytes(12.0, 2_000.0),
            Preset::Pcie4 => Link::gbytes(24.0, 2_000.0),
            Preset::Pcie5 => Link::gbytes(48.0, 2_000.0),
            Preset::Nvlink2 => Link::gbytes(130.0, 1_000.0),
            Preset::Nvlink3 => Link::gbytes(230.0, 1_000.0),
            Preset::Nvlink4 => Link::gbytes(360.0, 1_000.0),
            Preset::Infiniband => Link::gbits(200.0, 5_000.0),
            Preset::Roce => Link::gbits(100.0, 6_000.0),
            Preset::Ethernet => Link::gbits(25.0, 25_000.0),
        }
    }
}

/// Where the ranks are: `nodes × gpus_per_node`, an intra-node and an inter-node link (the
/// inter-node bandwidth is per GPU: one NIC per GPU, as in rail-optimized clusters), and a
/// fixed cost per collective (the kernel launch and NCCL's setup, calibrated as the intercept).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Topology {
    pub nodes: u32,
    pub gpus_per_node: u32,
    pub intra: Link,
    pub inter: Link,
    /// Paid once per collective, ns.
    pub base_ns: f64,
    pub algorithm: Algorithm,
    /// BlueConnect's decomposition on several nodes (else one flat ring over the slowest link).
    pub hierarchical: bool,
}

impl Topology {
    /// `gpus` ranks, `gpus_per_node` per node (the last node may be partial: counted whole).
    pub fn new(gpus: u32, gpus_per_node: u32, intra: Link, inter: Link) -> Topology {
        let per_node = gpus_per_node.clamp(1, gpus.max(1));
        Topology {
            nodes: gpus.max(1).div_ceil(per_node),
            gpus_per_node: per_node,
            intra,
            inter,
            base_ns: 0.0,
            algorithm: Algorithm::Ring,
            hierarchical: true,
        }
    }

    pub fn world_size(&self) -> u32 {
        self.nodes * self.gpus_per_node
    }

    /// Predicted time of `collective` of `bytes` over every rank, ns.
    ///
    /// One node: the collective on the intra-node link. Several nodes, hierarchical
    /// (BlueConnect, Cho et al. 2019): an all-reduce is an intra-node reduce-scatter, an
    /// inter-node all-reduce of `bytes / gpus_per_node` (the `gpus_per_node` rails in
    /// parallel), and an intra-node all-gather; all-gather and reduce-scatter decompose the
    /// same way (one intra and one inter stage); other collectives, and flat topologies, run
    /// one ring over every rank, paced by the inter-node link.
    pub fn time_ns(&self, collective: Collective, bytes: f64) -> f64 {
        let n = self.world_size();
        if n <= 1 {
            return 0.0;
        }
        let g = self.gpus_per_node;
        let algorithm = self.algorithm;
        let body = if self.nodes <= 1 {
            self.intra.time_ns(collective, algorithm, bytes, n)
        } else if self.hierarchical && g > 1 {
            let shard = bytes / g as f64;
            let intra = |c: Collective| self.intra.time_ns(c, algorithm, bytes, g);
            let inter = |c: Collective| self.inter.time_ns(c, algorithm, shard, self.nodes);
            match collective {
                Collective::AllReduce => {
                    intra(Collective::ReduceScatter)
                        + inter(Collective::AllReduce)
                        + intra(Collective::AllGather)
                }
                Collective::AllGather => {
                    inter(Collective::AllGather) + intra(Collective::AllGather)
                }
                Collective::ReduceScatter => {
                    intra(Collective::ReduceScatter) + inter(Collective::ReduceScatter)
                }
                _ => self.inter.time_ns(collective, algorithm, bytes, n),
            }
        } else {
            self.inter.time_ns(collective, algorithm, bytes, n)
        };
        self.base_ns + body
    }
}

/// Parses a bandwidth: `100Gbps`, `100Gb/s`, `100G` (gigabits), `25GB/s`, `25GBps`
/// (gigabytes), or a plain number of gigabits. Returns bytes per second.
pub fn parse_bandwidth(text: &str) -> Option<f64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().ok().filter(|v: &f64| *v > 0.0)?;
    let bits = |scale: f64| Some(value * scale / 8.0);
    let bytes = |scale: f64| Some(value * scale);
    match unit.trim() {
        "" | "G" | "g" | "Gbps" | "gbps" | "Gb/s" | "Gbit/s" | "Gbit" => bits(1e9),
        "Mbps" | "Mb/s" => bits(1e6),
        "Tbps" | "Tb/s" => bits(1e12),
        "GB/s" | "GBps" | "GB" => bytes(1e9),
        "MB/s" | "MBps" => bytes(1e6),
        _ => None,
    }
}

/// Parses a latency: `5us`, `5µs`, `2000ns`, `0.01ms`, or a plain number of microseconds.
/// Returns ns.
pub fn parse_latency(text: &str) -> Option<f64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().ok().filter(|v: &f64| *v >= 0.0)?;
    Some(match unit.trim() {
        "" | "us" | "µs" => value * 1e3,
        "ns" => value,
        "ms" => value * 1e6,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_factors_follow_nccl() {
        assert_eq!(Collective::AllReduce.bus_factor(8), 2.0 * 7.0 / 8.0);
        assert_eq!(Collective::AllGather.bus_factor(4), 0.75);
        assert_eq!(Collective::Broadcast.bus_factor(64), 1.0);
    }

    #[test]
    fn ring_all_reduce_is_alpha_beta() {
        let link = Link::gbytes(10.0, 1_000.0);
        // 2 ranks: 2 steps × 1 µs + 1 GB × 1 / 10 GB/s = 0.1 s.
        let t = link.time_ns(Collective::AllReduce, Algorithm::Ring, 1e9, 2);
        assert!((t - (2_000.0 + 1e8)).abs() < 1.0, "{t}");
        // Tree wins for tiny messages on many ranks.
        let ring = link.time_ns(Collective::AllReduce, Algorithm::Ring, 8.0, 64);
        let auto = link.time_ns(Collective::AllReduce, Algorithm::Auto, 8.0, 64);
        assert!(auto < ring);
    }

    #[test]
    fn hierarchical_all_reduce_is_three_stages() {
        let intra = Link::gbytes(100.0, 0.0);
        let inter = Link::gbytes(10.0, 0.0);
        let topology = Topology::new(16, 8, intra, inter);
        let bytes = 8e8;
        let expected =
            2.0 * (7.0 / 8.0) * bytes / 100e9 * 1e9 + 2.0 * 0.5 * (bytes / 8.0) / 10e9 * 1e9;
        let t = topology.time_ns(Collective::AllReduce, bytes);
        assert!((t - expected).abs() < 1.0, "{t} vs {expected}");
        // Flat: one ring over the slow link.
        let flat = Topology {
            hierarchical: false,
            ..topology
        };
        assert!(flat.time_ns(Collective::AllReduce, bytes) > t);
    }

    #[test]
    fn parses_units() {
        assert_eq!(parse_bandwidth("100Gbps"), Some(12.5e9));
        assert_eq!(parse_bandwidth("25GB/s"), Some(25e9));
        assert_eq!(parse_bandwidth("400"), Some(50e9));
        assert_eq!(parse_bandwidth("fast"), None);
        assert_eq!(parse_latency("5us"), Some(5_000.0));
        assert_eq!(parse_latency("2000ns"), Some(2_000.0));
        assert_eq!(
            Collective::parse("ncclKernel_AllReduce_RING_LL_Sum_float"),
            Some(Collective::AllReduce)
        );
        assert_eq!(
            Collective::parse("_allgather_base"),
            Some(Collective::AllGather)
        );
        assert_eq!(
            Collective::parse("reduce_scatter_tensor"),
            Some(Collective::ReduceScatter)
        );
        // gloo's rooted collectives, told apart from the all- and reduce- ones they name.
        assert_eq!(Collective::parse("gloo:gather"), Some(Collective::Gather));
        assert_eq!(Collective::parse("gloo:scatter"), Some(Collective::Scatter));
        assert_eq!(
            Collective::parse("gloo:all_gather"),
            Some(Collective::AllGather)
        );
        assert_eq!(Collective::parse("gloo:reduce"), Some(Collective::Reduce));
        assert_eq!(Preset::by_name("NVLink-3"), Some(Preset::Nvlink3));
    }
}
