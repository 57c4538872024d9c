// Launch template of the decode kernel (fwd/decode_kernel.h), instantiated by the generated files.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>

#include "attn/cuda_check.h"
#include "common/dependent_launch.h"
#include "common/fwd_params.h"
#include "fwd/decode_kernel.h"

namespace attn::flash {

template <typename Tr>
void run_decode(const FwdParams& p, cudaStream_t stream, int device) {
  if (p.num_splits < 1 || p.num_splits > Tr::kMaxSplits)
    throw std::invalid_argument("flash-cuda: the decode kernel takes 1 to 8 splits (one cluster)");
  static std::atomic<uint64_t> opted_in{0};
  const uint64_t bit = uint64_t(1) << (device & 63);
  if (!(opted_in.load(std::memory_order_relaxed) & bit)) {
    ATTN_CUDA_CHECK(
        cudaFuncSetAttribute(decode_kernel<Tr>, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes));
    opted_in.fetch_or(bit, std::memory_order_relaxed);
  }
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(p.num_splits),
                     static_cast<unsigned>((p.heads_k + Tr::kHeads - 1) / Tr::kHeads), static_cast<unsigned>(p.batch));
  cfg.blockDim = dim3(Tr::kNThreads);
  cfg.dynamicSmemBytes = Tr::kSmemBytes;
  cfg.stream = stream;
  // The splits of one (batch, head group) are one cluster: they merge their partial results through
  // each other's shared memory (decode_kernel.h). Programmatic serialization as every forward kernel
  // (common/dependent_launch.h).
  cudaLaunchAttribute attr[2];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(p.num_splits);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[1].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = dependent_launch_ok(device) ? 2 : 1;
  ATTN_CUDA_CHECK(cudaLaunchKernelEx(&cfg, decode_kernel<Tr>, p));
  ATTN_LAUNCH_CHECK("flash_decode_kernel");
}

}  // namespace attn::flash
