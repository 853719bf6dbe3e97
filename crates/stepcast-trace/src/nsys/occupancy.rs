//! How much of its device a kernel fills, from the launch configuration CUPTI records in an
//! export (`CUPTI_ACTIVITY_KIND_KERNEL`: grid, block, registers per thread, shared memory) and
//! the device's multiprocessor limits (`TARGET_INFO_GPU`): the theoretical occupancy of the
//! CUDA Occupancy Calculator, as [`KernelFill`] (what Kineto's `warps per SM` and `est.
//! achieved occupancy %` give), so the replay's device capacity model reads nsys and Kineto
//! traces alike.
//!
//! Resident blocks per multiprocessor are the fewest that any one resource allows: the
//! device's block slots, its warp slots, its registers (allocated per warp in units of 256),
//! and its shared memory (the carve-out the driver set for the launch, `sharedMemoryExecuted`,
//! where recorded; each block's static and dynamic shared memory rounded up to 128 bytes, plus
//! the 1 KiB the runtime reserves per block from compute capability 8.0 on). Only the
//! resources recorded are counted: the register-file split per block (`maxRegistersPerBlock`)
//! and local memory do not limit residency.

use crate::model::KernelFill;

/// Registers are allocated to a warp in units of this many (every architecture since Kepler).
const REGISTER_UNIT: i64 = 256;
/// Shared memory is allocated to a block in units of this many bytes (Ampere and Hopper).
const SHARED_UNIT: i64 = 128;
/// Shared memory the CUDA runtime reserves per block from compute capability 8.0 on.
const RESERVED_SHARED_PER_BLOCK: i64 = 1024;

/// A kernel launch as recorded; any part may be missing from an export.
pub struct LaunchConfig {
    pub grid: [Option<i64>; 3],
    pub block: [Option<i64>; 3],
    pub registers_per_thread: Option<i64>,
    pub static_shared_bytes: Option<i64>,
    pub dynamic_shared_bytes: Option<i64>,
    /// The shared memory per multiprocessor the driver configured for this launch.
    pub shared_carveout_bytes: Option<i64>,
}

impl LaunchConfig {
    /// Whether the export recorded a launch configuration at all (older exports and cut-down
    /// ones may not).
    pub fn is_recorded(&self) -> bool {
        self.grid.iter().chain(&self.block).all(Option::is_some)
    }
}

/// What one multiprocessor of a device holds, and how many there are.
#[derive(Clone, Copy, Debug)]
pub struct SmLimits {
    compute_major: i64,
    sm_count: i64,
    max_warps: i64,
    threads_per_warp: i64,
    max_blocks: i64,
    registers: i64,
    shared_bytes: i64,
}

impl SmLimits {
    /// The limits, if every one is recorded and positive.
    pub fn new(
        compute_major: Option<i64>,
        sm_count: Option<i64>,
        max_warps: Option<i64>,
        threads_per_warp: Option<i64>,
        max_blocks: Option<i64>,
        registers: Option<i64>,
        shared_bytes: Option<i64>,
    ) -> Option<SmLimits> {
        let positive = |v: Option<i64>| v.filter(|&v| v > 0);
        Some(SmLimits {
            compute_major: positive(compute_major)?,
            sm_count: positive(sm_count)?,
            max_warps: positive(max_warps)?,
            threads_per_warp: positive(threads_per_warp)?,
            max_blocks: positive(max_blocks)?,
            registers: positive(registers)?,
            shared_bytes: positive(shared_bytes)?,
        })
    }

    /// Resident blocks per multiprocessor for `launch`, if it is a launch the device can run.
    pub fn blocks_per_sm(&self, launch: &LaunchConfig) -> Option<i64> {
        let threads = product(launch.block)?;
        let warps_per_block = ceil_div(threads, self.threads_per_warp)?;
        let by_warps = self.max_warps / warps_per_block;
        let registers = launch.registers_per_thread.unwrap_or(0).max(0);
        let by_registers = if registers == 0 {
            i64::MAX
        } else {
            let per_warp = round_up(registers.checked_mul(self.threads_per_warp)?, REGISTER_UNIT)?;
            (self.registers / per_warp) / warps_per_block
        };
        let shared = launch
            .static_shared_bytes
            .unwrap_or(0)
            .max(0)
            .checked_add(launch.dynamic_shared_bytes.unwrap_or(0).max(0))?;
        let reserved = if self.compute_major >= 8 {
            RESERVED_SHARED_PER_BLOCK
        } else {
            0
        };
        let by_shared = if shared == 0 {
            i64::MAX
        } else {
            let per_block = round_up(shared, SHARED_UNIT)?.checked_add(reserved)?;
            let available = launch
                .shared_carveout_bytes
                .filter(|&bytes| bytes > 0)
                .unwrap_or(self.shared_bytes);
            available / per_block
        };
        let blocks = self
            .max_blocks
            .min(by_warps)
            .min(by_registers)
            .min(by_shared);
        (blocks > 0).then_some(blocks)
    }

    /// The kernel's fill: its warps over the device's multiprocessors, and the share of a
    /// multiprocessor's warp slots its resident blocks take. `None` for a launch the device
    /// cannot hold (a resource exceeds one multiprocessor) or an absurd one.
    pub fn fill(&self, launch: &LaunchConfig) -> Option<KernelFill> {
        let blocks_per_sm = self.blocks_per_sm(launch)?;
        let warps_per_block = ceil_div(product(launch.block)?, self.threads_per_warp)?;
        let blocks = product(launch.grid)?;
        let warps = blocks.checked_mul(warps_per_block)?;
        Some(KernelFill {
            warps_per_sm: warps as f64 / self.sm_count as f64,
            occupancy_pct: (blocks_per_sm * warps_per_block) as f64 / self.max_warps as f64 * 100.0,
            blocks: u64::try_from(blocks).ok(),
        })
    }
}

/// The product of three positive dimensions (`None` if any is missing, not positive, or the
/// product overflows).
fn product(dims: [Option<i64>; 3]) -> Option<i64> {
    dims.iter()
        .try_fold(1i64, |acc, dim| acc.checked_mul(dim.filter(|&d| d > 0)?))
}

fn ceil_div(value: i64, unit: i64) -> Option<i64> {
    value.checked_add(unit - 1).map(|v| v / unit)
}

fn round_up(value: i64, unit: i64) -> Option<i64> {
    ceil_div(value, unit)?.checked_mul(unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An A100 as its nsys export describes it (`TARGET_INFO_GPU` of the CloverLeaf capture).
    fn a100() -> SmLimits {
        SmLimits::new(
            Some(8),
            Some(108),
            Some(64),
            Some(32),
            Some(32),
            Some(65536),
            Some(167_936),
        )
        .expect("every limit is given")
    }

    fn launch(grid: i64, block: i64, registers: i64, shared: i64) -> LaunchConfig {
        LaunchConfig {
            grid: [Some(grid), Some(1), Some(1)],
            block: [Some(block), Some(1), Some(1)],
            registers_per_thread: Some(registers),
            static_shared_bytes: Some(shared),
            dynamic_shared_bytes: Some(0),
            shared_carveout_bytes: None,
        }
    }

    // Expected values are the CUDA Occupancy Calculator's for compute capability 8.0 (its
    // published limits: 64 warps, 32 blocks, 64 K registers, 164 KiB shared memory per SM).
    #[test]
    fn each_resource_limits_residency() {
        let gpu = a100();
        // Warps: 256 threads = 8 warps, 64 / 8 = 8 blocks (100 %).
        assert_eq!(gpu.blocks_per_sm(&launch(1000, 256, 32, 0)), Some(8));
        // Registers: 64 per thread = 2048 per warp; 65536 / 2048 = 32 warps = 1 block of 1024.
        assert_eq!(gpu.blocks_per_sm(&launch(1000, 1024, 64, 0)), Some(1));
        // Registers rounded per warp: 33 per thread = 1056, allocated as 1280; 51 warps; 6
        // blocks of 8 warps.
        assert_eq!(gpu.blocks_per_sm(&launch(1000, 256, 33, 0)), Some(6));
        // Shared memory: 48 KiB + 1 KiB reserved per block; 164 KiB holds 3.
        assert_eq!(
            gpu.blocks_per_sm(&launch(1000, 128, 32, 48 * 1024)),
            Some(3)
        );
        // Block slots: 32-thread blocks are one warp; 32 block slots bound them before warps.
        assert_eq!(gpu.blocks_per_sm(&launch(1000, 32, 16, 0)), Some(32));
    }

    #[test]
    fn fill_gives_waves_over_the_whole_device() {
        let gpu = a100();
        // 108 SMs × 8 resident blocks of 256 threads: 864 blocks are one wave, 1728 two.
        let fill = gpu.fill(&launch(1728, 256, 32, 0)).expect("a valid launch");
        assert!((fill.occupancy_pct - 100.0).abs() < 1e-9);
        let waves = fill.waves(64.0).expect("occupancy is positive");
        assert!((waves - 2.0).abs() < 1e-9, "{waves}");
    }

    #[test]
    fn a_launch_the_device_cannot_hold_has_no_fill() {
        let gpu = a100();
        // More shared memory than a multiprocessor has.
        assert!(gpu.fill(&launch(10, 128, 32, 200 * 1024)).is_none());
        // A block dimension missing or zero.
        let mut partial = launch(10, 128, 32, 0);
        partial.block[1] = Some(0);
        assert!(gpu.fill(&partial).is_none());
        assert!(
            !LaunchConfig {
                grid: [None; 3],
                ..launch(10, 128, 32, 0)
            }
            .is_recorded()
        );
    }
}
