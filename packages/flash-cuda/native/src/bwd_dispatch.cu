// Backward configuration choice (head-dim bucket, shared memory), argument re-checks and the launch.
#include "bwd_dispatch.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "abi.h"
#include "attn/abi_slots.h"
#include "attn/cuda_check.h"
#include "bwd_abi.h"
#include "common/bwd_params.h"
#include "bwd/bwd_traits.h"
#include "dispatch.h"
#include "sm90/bwd_sm90_traits.h"
#include "sm90/bwd_sm90_tma_ws_traits.h"
#include "tma_declines.h"

namespace attn::flash {

template <typename Tr, typename DqTr>
void run_bwd(const BwdParams& p, cudaStream_t stream, int device);

namespace {

struct BwdConfig {
  BwdForm form;
  bool bf16;
  int head_dim;
  int block_m, block_n, warps, smem, smem2;       // dK/dV kernel (smem: one stage of Q/dO, smem2: two)
  int dq_block_m, dq_block_n, dq_warps, dq_smem;  // deterministic dQ kernel
  void (*run)(const BwdParams&, cudaStream_t, int);
  const char* name;
};

#define ATTN_BWD_CONFIG(IS_BF16, D, M, W, DQN, DQW, ELEM, NAME)     \
  {BwdForm::kRowTiled,                                              \
   IS_BF16 != 0,                                                    \
   D,                                                               \
   M,                                                               \
   BwdTraits<D, M, W, ELEM>::kBlockN,                               \
   W,                                                               \
   BwdTraits<D, M, W, ELEM>::smem_bytes(1),                         \
   BwdTraits<D, M, W, ELEM>::smem_bytes(2),                         \
   DqTraits<D, DQN, DQW, ELEM>::kBlockM,                            \
   DQN,                                                             \
   DQW,                                                             \
   DqTraits<D, DQN, DQW, ELEM>::kSmemBytes,                         \
   &run_bwd<BwdTraits<D, M, W, ELEM>, DqTraits<D, DQN, DQW, ELEM>>, \
   NAME},
#define ATTN_BWD_CONFIG_2D(IS_BF16, D, M, N, W, L90, L8X, DQN, DQW, ELEM, NAME)    \
  {BwdForm::kTiled2d,                                                              \
   IS_BF16 != 0,                                                                   \
   D,                                                                              \
   M,                                                                              \
   N,                                                                              \
   W,                                                                              \
   BwdTraits2d<D, M, N, W, L90, L8X, ELEM>::smem_bytes(2),                         \
   BwdTraits2d<D, M, N, W, L90, L8X, ELEM>::smem_bytes(2),                         \
   DqTraits<D, DQN, DQW, ELEM>::kBlockM,                                           \
   DQN,                                                                            \
   DQW,                                                                            \
   DqTraits<D, DQN, DQW, ELEM>::kSmemBytes,                                        \
   &run_bwd<BwdTraits2d<D, M, N, W, L90, L8X, ELEM>, DqTraits<D, DQN, DQW, ELEM>>, \
   NAME},
#define ATTN_BWD_CONFIG_SM90(IS_BF16, D, M, DQN, DQW, ELEM, NAME)    \
  {BwdForm::kSm90,                                                   \
   IS_BF16 != 0,                                                     \
   D,                                                                \
   M,                                                                \
   BwdSm90Traits<D, M, ELEM>::kBlockN,                               \
   BwdSm90Traits<D, M, ELEM>::kNWarps,                               \
   BwdSm90Traits<D, M, ELEM>::kSmemBytes,                            \
   BwdSm90Traits<D, M, ELEM>::kSmemBytes,                            \
   DqTraits<D, DQN, DQW, ELEM>::kBlockM,                             \
   DQN,                                                              \
   DQW,                                                              \
   DqTraits<D, DQN, DQW, ELEM>::kSmemBytes,                          \
   &run_bwd<BwdSm90Traits<D, M, ELEM>, DqTraits<D, DQN, DQW, ELEM>>, \
   NAME},
#define ATTN_BWD_CONFIG_SM90_TMA_WS(IS_BF16, D, M, DQN, DQW, ELEM, NAME)  \
  {BwdForm::kSm90TmaWs,                                                   \
   IS_BF16 != 0,                                                          \
   D,                                                                     \
   M,                                                                     \
   BwdSm90TmaWsTraits<D, M, ELEM>::kBlockN,                               \
   BwdSm90TmaWsTraits<D, M, ELEM>::kLaunchThreads / 32,                   \
   BwdSm90TmaWsTraits<D, M, ELEM>::kSmemBytes,                            \
   BwdSm90TmaWsTraits<D, M, ELEM>::kSmemBytes,                            \
   DqTraits<D, DQN, DQW, ELEM>::kBlockM,                                  \
   DQN,                                                                   \
   DQW,                                                                   \
   DqTraits<D, DQN, DQW, ELEM>::kSmemBytes,                               \
   &run_bwd<BwdSm90TmaWsTraits<D, M, ELEM>, DqTraits<D, DQN, DQW, ELEM>>, \
   NAME},
const BwdConfig kBwdConfigs[] = {
#include "generated/bwd_configs.inc"
};
#undef ATTN_BWD_CONFIG
#undef ATTN_BWD_CONFIG_2D
#undef ATTN_BWD_CONFIG_SM90
#undef ATTN_BWD_CONFIG_SM90_TMA_WS
constexpr int kNumBwdConfigs = sizeof(kBwdConfigs) / sizeof(kBwdConfigs[0]);

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("flash-cuda backward: " + what);
}

int64_t as_i64(const double* bnums, int i, const char* what) {
  return attn::abi::num_i64(bnums, i, "flash-cuda backward: ", what);
}

bool as_flag(const double* bnums, int i, const char* what) {
  const double x = bnums[i];
  require(x == 0 || x == 1, std::string(what) + " must be 0 or 1");
  return x == 1;
}

// Strides and head dim as the TMA needs them, from the numbers alone (backward_plan's view of aligned16).
bool strides_aligned16(const double* nums) {
  using namespace abi;
  for (int i : {kQBatchStride, kQHeadStride, kQRowStride, kKBatchStride, kKHeadStride, kKRowStride, kVBatchStride,
                kVHeadStride, kVRowStride})
    if (std::fmod(nums[i], 8) != 0) return false;
  return std::fmod(nums[kHeadDim], 8) == 0;
}

// The smallest compiled bucket holding D for the call's dtype, among those that fit shared memory, then the
// preferred form of that bucket that this device runs: on sm90 (unless the family is sm80) the TMA
// warp-specialized kernel where it is built (the D64 and D128 buckets) and takes the call (`tma_why` empty), else the
// cp.async wgmma kernel; elsewhere the 2-D tiled form where its two stages fit, else the row-tiled one. Measured on
// H100/H200: each step of that order is the faster one wherever both run, in both modes (docs/perf/flash-cuda.md,
// Backward; the TMA kernel: 1.34-1.46x the cp.async one's backward at D 128 on an H200). The family
// sm90-bwd-tma-ws insists on the TMA kernel (it throws where that cannot run), sm90-bwd-cp-async keeps the
// cp.async one.
int choose(bool bf16, int head_dim, int smem_optin, bool deterministic, bool on_sm90, KernelFamily family,
           const std::string& tma_why) {
  int best = -1;
  for (int i = 0; i < kNumBwdConfigs; ++i) {
    const BwdConfig& c = kBwdConfigs[i];
    if (c.form != BwdForm::kRowTiled || c.bf16 != bf16 || c.head_dim < head_dim) continue;
    if (best < 0 || c.head_dim < kBwdConfigs[best].head_dim) best = i;
  }
  if (best < 0) throw std::runtime_error("flash-cuda: no backward kernel for head dim " + std::to_string(head_dim));
  const BwdConfig& c = kBwdConfigs[best];
  const int need = deterministic ? std::max(c.smem, c.dq_smem) : c.smem;
  if (need > smem_optin)
    throw std::runtime_error(std::string("flash-cuda: the backward kernel ") + c.name + " needs " +
                             std::to_string(need) + " bytes of shared memory per block; this GPU allows " +
                             std::to_string(smem_optin));
  auto find = [&](BwdForm form) {
    for (int i = 0; i < kNumBwdConfigs; ++i) {
      const BwdConfig& v = kBwdConfigs[i];
      if (v.form == form && v.bf16 == bf16 && v.head_dim == c.head_dim && v.smem2 <= smem_optin &&
          (!deterministic || v.dq_smem <= smem_optin))
        return i;
    }
    return -1;
  };
  if (family != KernelFamily::kSm80 && on_sm90) {
    const int tma = family != KernelFamily::kSm90BwdCpAsync ? find(BwdForm::kSm90TmaWs) : -1;
    if (tma >= 0 && tma_why.empty()) return tma;
    if (family == KernelFamily::kSm90BwdTmaWs)
      throw std::invalid_argument(
          "flash-cuda: kernel sm90-bwd-tma-ws cannot run this backward: " +
          (tma < 0 ? "it is built for head dims up to 128 (D64 and D128 buckets) only, not " + std::to_string(head_dim)
                   : tma_why));
    const int i = find(BwdForm::kSm90);
    if (i >= 0) return i;
  }
  // Asked for by the kernel option (src/kernels.ts declines what it cannot run first).
  if (hopper_family(family))
    throw std::invalid_argument("flash-cuda: kernel sm90 has no backward for head dim " + std::to_string(head_dim) +
                                " on this device (wgmma backward: sm90 with an sm_90a build, D <= 128 or 193..256)");
  const int i = find(BwdForm::kTiled2d);
  return i >= 0 ? i : best;
}

BwdPlan plan_for(const FwdParams& f, bool bf16, int smem_optin, bool deterministic, bool on_sm90, KernelFamily family,
                 const std::string& tma_why) {
  BwdPlan pl{};
  pl.config = choose(bf16, f.head_dim, smem_optin, deterministic, on_sm90, family, tma_why);
  const BwdConfig& c = kBwdConfigs[pl.config];
  pl.dq_accum_stride = c.head_dim;  // a multiple of 8: the Dsum pass zeroes workspace rows in 16-byte stores
  // The TMA kernel keeps its dQ in deterministic mode, added in key-block order (one turn counter per query block).
  pl.dq_turn_rows = deterministic && c.form == BwdForm::kSm90TmaWs ? c.block_m : 0;
  pl.stages = c.smem2 <= smem_optin ? 2 : 1;  // the 2-D tiled and sm90 forms: always 2 (choose() checked)
  pl.n_blocks = static_cast<int>((int64_t(f.seqlen_k) + c.block_n - 1) / c.block_n);
  pl.m_blocks = static_cast<int>((int64_t(f.seqlen_q) + c.dq_block_m - 1) / c.dq_block_m);
  require(pl.n_blocks * 2 <= 2147483647 && pl.m_blocks >= 0, "sequence too long");
  return pl;
}

// An sm90 device (H100 / H200) and an addon with sm_90a code: where the Hopper kernel can run.
bool on_sm90(const double* nums) { return nums[abi::kCcMajor] == 9 && nums[abi::kCcMinor] == 0 && built_for_sm90a(); }

}  // namespace

BwdPlan backward_plan(const double* nums, const double* bnums) {
  using namespace abi;
  auto in = [&](int i, double lo, double hi, const char* what) {
    const double x = nums[i];
    require(x >= lo && x <= hi && x == std::floor(x), std::string(what) + " out of range");
    return static_cast<int>(x);
  };
  FwdParams f{};
  f.head_dim = in(kHeadDim, 1, 256, "head dim");
  f.seqlen_q = in(kSeqQ, 0, 2147483647.0, "query length");
  f.seqlen_k = in(kSeqK, 0, 2147483647.0, "key length");
  const bool deterministic = as_flag(bnums, kDeterministic, "deterministic flag");
  return plan_for(f, in(kIsBf16, 0, 1, "dtype flag") == 1, in(kSmemOptin, 1, 1 << 30, "opt-in shared memory"),
                  deterministic, on_sm90(nums), kernel_family(nums),
                  tma_declines(nums, bnums, nullptr, strides_aligned16(nums), false));
}

void backward(const uint64_t* ptrs, const double* nums, const uint64_t* bptrs, const double* bnums) {
  using namespace abi;
  BwdParams p{};
  p.f = params_from_abi(ptrs, nums);  // re-checks shapes, strides, features; out and lse are the saved ones
  if (p.f.block_table != nullptr) throw std::invalid_argument("flash-cuda: paged K/V (a block table) is forward only");
  p.deterministic = as_flag(bnums, kDeterministic, "deterministic flag");
  p.plain_tiles = p.f.softcap_out == 0.f && p.f.alibi == nullptr && !p.f.dropout;
  p.f.aligned16 = p.f.aligned16 && as_flag(bnums, kGradAligned16, "gradient alignment flag");
  const bool bf16 = nums[kIsBf16] == 1;
  const BwdPlan pl = plan_for(p.f, bf16, static_cast<int>(nums[kSmemOptin]), p.deterministic, on_sm90(nums),
                              kernel_family(nums), tma_declines(nums, bnums, ptrs, p.f.aligned16, true));

  require(bptrs[kDout] && bptrs[kDq] && bptrs[kDk] && bptrs[kDv] && bptrs[kDsum],
          "dout, dq, dk, dv and dsum need device addresses");
  const bool workspace = !p.deterministic || pl.dq_turn_rows > 0;
  require(!workspace || bptrs[kDqAccum], "this backward needs the dQ workspace (dqAccum)");
  require(pl.dq_turn_rows == 0 || bptrs[kDqTurns], "this deterministic backward needs its dQ turn counters (dqTurns)");
  p.dout = reinterpret_cast<const void*>(bptrs[kDout]);
  p.dq = reinterpret_cast<void*>(bptrs[kDq]);
  p.dk = reinterpret_cast<void*>(bptrs[kDk]);
  p.dv = reinterpret_cast<void*>(bptrs[kDv]);
  p.dsum = reinterpret_cast<float*>(bptrs[kDsum]);
  p.dq_accum = workspace ? reinterpret_cast<float*>(bptrs[kDqAccum]) : nullptr;
  p.dq_turns = pl.dq_turn_rows > 0 ? reinterpret_cast<int*>(bptrs[kDqTurns]) : nullptr;
  p.dq_turn_rows = pl.dq_turn_rows;
  p.do_batch_stride = as_i64(bnums, kDoBatchStride, "dout batch stride");
  p.do_head_stride = as_i64(bnums, kDoHeadStride, "dout head stride");
  p.do_row_stride = as_i64(bnums, kDoRowStride, "dout row stride");
  p.dq_batch_stride = as_i64(bnums, kDqBatchStride, "dq batch stride");
  p.dq_head_stride = as_i64(bnums, kDqHeadStride, "dq head stride");
  p.dq_row_stride = as_i64(bnums, kDqRowStride, "dq row stride");
  p.dk_batch_stride = as_i64(bnums, kDkBatchStride, "dk batch stride");
  p.dk_head_stride = as_i64(bnums, kDkHeadStride, "dk head stride");
  p.dk_row_stride = as_i64(bnums, kDkRowStride, "dk row stride");
  p.dv_batch_stride = as_i64(bnums, kDvBatchStride, "dv batch stride");
  p.dv_head_stride = as_i64(bnums, kDvHeadStride, "dv head stride");
  p.dv_row_stride = as_i64(bnums, kDvRowStride, "dv row stride");
  p.scale = static_cast<float>(nums[kScale]);
  p.dq_accum_stride = pl.dq_accum_stride;
  p.stages = pl.stages;
  p.n_blocks = pl.n_blocks;
  p.m_blocks = pl.m_blocks;

  const int device = static_cast<int>(nums[kDevice]);
  ATTN_CUDA_CHECK(cudaSetDevice(device));
  kBwdConfigs[pl.config].run(p, reinterpret_cast<cudaStream_t>(ptrs[kStream]), device);
}

std::vector<std::string> backward_kernel_names() {
  std::vector<std::string> names;
  for (const BwdConfig& c : kBwdConfigs) names.push_back(c.name);
  return names;
}

std::vector<std::string> backward_kernel_descriptions() {
  std::vector<std::string> out;
  for (const BwdConfig& c : kBwdConfigs)
    out.push_back(std::string(c.name) + " (dK/dV " +
                  (c.form == BwdForm::kSm90TmaWs ? "sm90 wgmma, TMA warp-specialized"
                   : c.form == BwdForm::kSm90    ? "sm90 wgmma, cp.async"
                   : c.form == BwdForm::kTiled2d ? "2-D warp tiling"
                                                 : "row-tiled") +
                  " " + std::to_string(c.block_m) + "x" + std::to_string(c.block_n) + ", " + std::to_string(c.warps) +
                  " warps, " + std::to_string(c.smem / 1024) + " KB, " + std::to_string(c.smem2 / 1024) +
                  " KB with prefetch; dQ " + std::to_string(c.dq_block_m) + "x" + std::to_string(c.dq_block_n) + ", " +
                  std::to_string(c.dq_warps) + " warps, " + std::to_string(c.dq_smem / 1024) + " KB)");
  return out;
}

}  // namespace attn::flash
