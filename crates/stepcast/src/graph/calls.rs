//! What a runtime or driver call does, by name (CUDA runtime and driver, HIP).

/// The role of an API call in the dependency graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallClass {
    /// Waits for all work on the device (`cudaDeviceSynchronize`).
    DeviceSync,
    /// Waits for one stream (`cudaStreamSynchronize`).
    StreamSync,
    /// Waits for a recorded event (`cudaEventSynchronize`).
    EventSync,
    /// A copy or memset API that returns only when its own device work is done
    /// (`cudaMemcpy`, not `cudaMemcpyAsync`).
    SyncCopy,
    /// An asynchronous copy: blocks only when host memory is pageable (told by the copy's name).
    AsyncCopy,
    /// Anything else: launches, event records, stream waits, queries, allocations.
    Other,
}

impl CallClass {
    /// Whether the call may block its thread until device work completes.
    pub fn may_block(self) -> bool {
        !matches!(self, CallClass::Other)
    }
}

/// Classifies a call by its API name. Version suffixes (`_v2`, `_ptsz`) are ignored.
pub fn classify_call(name: &str) -> CallClass {
    let base = name.split("_v").next().unwrap_or(name);
    let base = base
        .strip_suffix("_ptsz")
        .or_else(|| base.strip_suffix("_ptds"))
        .unwrap_or(base);
    match base {
        "cudaDeviceSynchronize" | "hipDeviceSynchronize" | "cuCtxSynchronize" => {
            CallClass::DeviceSync
        }
        "cudaStreamSynchronize" | "hipStreamSynchronize" | "cuStreamSynchronize" => {
            CallClass::StreamSync
        }
        "cudaEventSynchronize" | "hipEventSynchronize" | "cuEventSynchronize" => {
            CallClass::EventSync
        }
        _ if is_copy(base) => {
            if base.contains("Async") {
                CallClass::AsyncCopy
            } else {
                CallClass::SyncCopy
            }
        }
        _ => CallClass::Other,
    }
}

fn is_copy(base: &str) -> bool {
    base.starts_with("cudaMemcpy")
        || base.starts_with("hipMemcpy")
        || base.starts_with("cuMemcpy")
        || base.starts_with("cudaMemset")
        || base.starts_with("hipMemset")
        || base.starts_with("cuMemset")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_runtime_driver_and_hip_names() {
        assert_eq!(
            classify_call("cudaDeviceSynchronize"),
            CallClass::DeviceSync
        );
        assert_eq!(classify_call("hipStreamSynchronize"), CallClass::StreamSync);
        assert_eq!(classify_call("cudaEventSynchronize"), CallClass::EventSync);
        assert_eq!(classify_call("cudaMemcpy"), CallClass::SyncCopy);
        assert_eq!(classify_call("cudaMemcpyAsync"), CallClass::AsyncCopy);
        assert_eq!(classify_call("cuMemcpyDtoHAsync_v2"), CallClass::AsyncCopy);
        assert_eq!(classify_call("cudaLaunchKernel"), CallClass::Other);
        assert_eq!(classify_call("cudaEventQuery"), CallClass::Other);
        assert!(!classify_call("cudaStreamWaitEvent").may_block());
    }
}
