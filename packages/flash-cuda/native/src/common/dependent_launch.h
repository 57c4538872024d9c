// The forward kernels are programmatic dependent launches on sm90 and newer: a forward's CTAs may be scheduled
// while the kernel before it on the stream still runs (the previous attention call of a decode step, in a
// replayed graph most of all), and the gap between two short kernels shrinks to the memory flush. Each
// forward kernel waits for its predecessor's completion and memory (griddepcontrol.wait) before it reads or
// writes global memory, so the semantics are a plain stream order's; it then lets its own dependents launch
// (griddepcontrol.launch_dependents): they are scheduled once every CTA of this grid has started, into the
// slots its last wave leaves free, and wait the same way. Without the launch attribute (older GPUs, another
// kind of predecessor) the wait returns at once.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <utility>

#include "attn/cuda_check.h"

namespace attn::flash {

// First statement of every forward kernel: nothing before it touches global memory.
__device__ __forceinline__ void dependent_launch_prologue() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Whether launches on this device may carry the programmatic-serialization attribute (compute capability
// >= 9), asked once per device (0..63; others are asked each time).
inline bool dependent_launch_ok(int device) {
  static std::atomic<uint64_t> known{0}, yes{0};
  const uint64_t bit = uint64_t(1) << (device & 63);
  if (device < 64 && (known.load(std::memory_order_relaxed) & bit))
    return (yes.load(std::memory_order_relaxed) & bit) != 0;
  int major = 0;
  ATTN_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  if (device < 64) {
    if (major >= 9) yes.fetch_or(bit, std::memory_order_relaxed);
    known.fetch_or(bit, std::memory_order_relaxed);
  }
  return major >= 9;
}

// kernel<<<grid, threads, smem, stream>>>(args...), as a programmatic dependent launch where the device allows;
// cluster_x > 1 groups each cluster_x consecutive CTAs along x into a thread-block cluster (sm90+ only: the
// caller checks; gridDim.x must be a multiple of it).
template <typename... Params, typename... Args>
void launch_dependent_clustered(void (*kernel)(Params...), dim3 grid, unsigned cluster_x, int threads, int smem,
                                cudaStream_t stream, int device, Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = dim3(static_cast<unsigned>(threads));
  cfg.dynamicSmemBytes = static_cast<size_t>(smem);
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  unsigned n = 0;
  if (dependent_launch_ok(device)) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  if (cluster_x > 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = cluster_x;
    attr[n].val.clusterDim.y = 1;
    attr[n].val.clusterDim.z = 1;
    ++n;
  }
  cfg.attrs = attr;
  cfg.numAttrs = n;
  ATTN_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

template <typename... Params, typename... Args>
void launch_dependent(void (*kernel)(Params...), dim3 grid, int threads, int smem, cudaStream_t stream, int device,
                      Args&&... args) {
  launch_dependent_clustered(kernel, grid, 1u, threads, smem, stream, device, std::forward<Args>(args)...);
}

}  // namespace attn::flash
