// Host side of a forward call: checks the arguments again (TS validated them first), picks the tile
// configuration and the split count, fills FwdParams and launches.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/fwd_params.h"

namespace attn::flash {

// The kernel families the `kernel` call option names (src/kernels.ts declares them for core; nums[kKernelFamily]):
// kAuto lets the plan choose from the device and the problem; kSm80 keeps every GEMM on mma.sync (the
// sm80-family kernels, forward and backward, on any GPU); kSm90 runs the Hopper wgmma kernels (the plan picks
// the backward among them) and throws std::invalid_argument where they cannot run the call. kSm90BwdTmaWs
// and kSm90BwdCpAsync are kSm90 with the backward forced onto one Hopper dK/dV kernel: the TMA
// warp-specialized one (bwd_dispatch.cu declines the calls it cannot take) or the cp.async one.
enum class KernelFamily : int { kAuto = 0, kSm80 = 1, kSm90 = 2, kSm90BwdTmaWs = 3, kSm90BwdCpAsync = 4 };
KernelFamily kernel_family(const double* nums);
// Every family that runs the Hopper kernels (the forward treats them alike).
inline bool hopper_family(KernelFamily f) {
  return f == KernelFamily::kSm90 || f == KernelFamily::kSm90BwdTmaWs || f == KernelFamily::kSm90BwdCpAsync;
}

struct Plan {
  int num_splits;     // 1: no split-KV
  int oaccum_stride;  // floats per row of the split-KV partials (the head-dim bucket)
  int config;         // index into the generated table
  bool pack_gqa;
  int m_blocks;
  // A kv-cache call whose forward appends kNew / vNew and rotates q and kNew itself (FwdParams' kv_k_new ..):
  // short packed queries and few appended keys (dispatch.cu). Otherwise the append kernel runs first.
  bool fuse_kv_append;
  // The decode kernel's splits merge in a thread-block cluster (FwdParams::cluster_splits): sm90, 2 to
  // kMaxClusterSplits splits. The call then needs no partials and launches no combine.
  bool cluster_splits;
};

// nums: the abi::Num array; ptrs: the abi::Ptr array, or null (then ALiBi counts as present, so no lean
// kernel is planned). Throws std::invalid_argument on bad values, std::runtime_error when no compiled
// configuration fits the device.
Plan plan(const double* nums, const uint64_t* ptrs);
// ptrs, nums: the abi arrays; nums[kNumSplits] is the split count to run (plan(nums).num_splits; partials in
// ptrs[kOaccum]); nums[kKernel] >= 0 runs one tile configuration by index (tests comparing two calls on one
// tile), -1 lets the plan choose within nums[kKernelFamily].
void forward(const uint64_t* ptrs, const double* nums);
// The FwdParams of a call from the abi arrays (pointers, shapes, strides, score features), re-checked;
// the plan's fields (splits, GQA packing, blocks, partials) are left for the caller. The backward fills
// its forward part with this too, so both passes compute the same scores.
FwdParams params_from_abi(const uint64_t* ptrs, const double* nums);
// Names of the compiled forward configurations ("bf16_d128_large"), in table order (= kKernel index),
// and the same with their shapes ("bf16_d128_large (128x32, 4 warps, 48 KB smem)").
std::vector<std::string> kernel_names();
// One configuration's name, without building the list (the per-call path).
const char* kernel_name(int config);
std::vector<std::string> kernel_descriptions();
// Whether this addon holds sm_90a machine code (its arch list): the Hopper kernels' bodies exist only there.
bool built_for_sm90a();

}  // namespace attn::flash
