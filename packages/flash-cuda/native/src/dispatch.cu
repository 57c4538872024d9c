// Configuration choice (head-dim bucket, tile shape by shared memory and query length), FlashAttention's
// num_splits heuristic for split-KV, argument re-checks, and the launches.
#include "dispatch.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "abi.h"
#include "attn/abi_slots.h"
#include "attn/cuda_check.h"
#include "fwd/combine.h"
#include "common/fwd_params.h"
#include "common/kernel_traits.h"
#include "fwd/decode_traits.h"
#include "sm90/fwd_sm90_fp8_config.h"
#include "sm90/fwd_sm90_traits.h"
#include "tma_declines.h"

namespace attn::flash {

template <typename Tr>
void run_fwd(const FwdParams& p, cudaStream_t stream, int device);
template <typename Tr>
void run_fwd_sm90(const FwdParams& p, cudaStream_t stream, int device);
template <typename Tr>
void run_fwd_decode(const FwdParams& p, cudaStream_t stream, int device);
template <typename Tr>
void run_fwd_sm90_fp8(const FwdParams& p, cudaStream_t stream, int device);

// Whether this addon holds sm_90a machine code (the arch list it was built with): the Hopper kernels'
// bodies exist only there.
bool built_for_sm90a() {
  static const bool yes = std::string(ATTN_CUDA_ARCHS_STRING).find("90a") != std::string::npos;
  return yes;
}

namespace {

struct FwdConfig {
  bool bf16;
  int head_dim, block_m, block_n, warps;
  bool q_in_regs;
  bool extras;  // false: lean kernel, only for calls without ALiBi, softcap, dropout or a left window bound
  int smem_bytes;
  int paged_smem_bytes;  // with the staged block-table entries of paged calls (sm80 family; = smem_bytes for sm90)
  void (*run)(const FwdParams&, cudaStream_t, int);
  const char* name;
  bool sm90;           // the Hopper kernel (wgmma): sm_90 devices only, lean calls without split-KV or packed GQA
  bool split_release;  // sm90: K and V stages released on mbarriers of their own (FwdSm90Traits)
  int min_blocks;      // CTAs per SM its __launch_bounds__ asks for (0: as many as 255 registers allow)
  bool decode;         // the decode kernel (fwd/flash_fwd_decode_kernel.h): block_n keys per ring stage
  bool fp8;            // float8_e4m3 inputs, bf16 out (sm90/flash_fwd_sm90_fp8_kernel.h): the only tile fp8 calls take
};

#define ATTN_FWD_CONFIG(IS_BF16, D, M, N, W, QR, ELEM, EXTRAS, NAME) \
  {IS_BF16 != 0,                                                     \
   D,                                                                \
   M,                                                                \
   N,                                                                \
   W,                                                                \
   QR,                                                               \
   EXTRAS,                                                           \
   FwdTraits<D, M, N, W, QR, ELEM, EXTRAS>::kSmemBytes,              \
   FwdTraits<D, M, N, W, QR, ELEM, EXTRAS>::kPagedSmemBytes,         \
   &run_fwd<FwdTraits<D, M, N, W, QR, ELEM, EXTRAS>>,                \
   NAME,                                                             \
   false,                                                            \
   false,                                                            \
   0,                                                                \
   false},
#define ATTN_FWD_SM90_CONFIG(IS_BF16, D, M, N, MINB, ELEM, SPLIT, NAME) \
  {IS_BF16 != 0,                                                        \
   D,                                                                   \
   M,                                                                   \
   N,                                                                   \
   FwdSm90Traits<D, M, N, MINB, ELEM, SPLIT>::kLaunchThreads / 32,      \
   false,                                                               \
   false,                                                               \
   FwdSm90Traits<D, M, N, MINB, ELEM, SPLIT>::kSmemBytes,               \
   FwdSm90Traits<D, M, N, MINB, ELEM, SPLIT>::kSmemBytes,               \
   &run_fwd_sm90<FwdSm90Traits<D, M, N, MINB, ELEM, SPLIT>>,            \
   NAME,                                                                \
   true,                                                                \
   SPLIT,                                                               \
   MINB,                                                                \
   false},
#define ATTN_FWD_DECODE_CONFIG(IS_BF16, D, N, STAGES, ELEM, NAME) \
  {IS_BF16 != 0,                                                  \
   D,                                                             \
   DecodeTraits<D, N, STAGES, ELEM>::kBlockM,                     \
   N,                                                             \
   DecodeTraits<D, N, STAGES, ELEM>::kNWarps,                     \
   true,                                                          \
   false,                                                         \
   DecodeTraits<D, N, STAGES, ELEM>::kSmemBytes,                  \
   DecodeTraits<D, N, STAGES, ELEM>::kSmemBytes,                  \
   &run_fwd_decode<DecodeTraits<D, N, STAGES, ELEM>>,             \
   NAME,                                                          \
   false,                                                         \
   false,                                                         \
   0,                                                             \
   true},
const FwdConfig kConfigs[] = {
#include "generated/fwd_configs.inc"
    // The fp8 forward (one tile: head-dim bucket 128, every D <= 128 that is a multiple of 16).
    {true, Fp8FwdTile::kHeadDim, Fp8FwdTile::kBlockM, Fp8FwdTile::kBlockN, Fp8FwdTile::kLaunchThreads / 32, false,
     false, Fp8FwdTile::kSmemBytes, Fp8FwdTile::kSmemBytes, &run_fwd_sm90_fp8<Fp8FwdTile>, "fp8_d128_sm90ws", true,
     true, Fp8FwdTile::kMinBlocks, false, true},
};
#undef ATTN_FWD_CONFIG
#undef ATTN_FWD_SM90_CONFIG
#undef ATTN_FWD_DECODE_CONFIG
constexpr int kNumConfigs = sizeof(kConfigs) / sizeof(kConfigs[0]);

constexpr int kBuckets[] = {32, 64, 96, 128, 160, 192, 224, 256};
constexpr int kMaxSplits = 128;
// The kv-cache calls whose forward appends and rotates itself (Plan::fuse_kv_append): packed query rows that fit
// one 64-row tile (decode and short speculative steps: one CTA per split and KV head writes each appended key)
// and at most this many appended keys (a CTA writes them before its first load; more would stall it).
constexpr int kMaxFusedRows = 64;
constexpr int kMaxFusedAppend = 16;

int head_dim_bucket(int d) {
  for (int b : kBuckets)
    if (d <= b) return b;
  return -1;
}

void require(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string("flash-cuda: ") + what);
}

// The abi's number slots, read through the shared reader (attn/abi_args.h).
int as_int(const double* nums, int i, const char* what, double lo, double hi) {
  return static_cast<int>(attn::abi::num_int(nums, i, "flash-cuda: ", what, lo, hi));
}
int64_t as_i64(const double* nums, int i, const char* what) {
  return attn::abi::num_i64(nums, i, "flash-cuda: ", what);
}

// The slots of a kv-cache call that appends and rotates in the forward (FwdParams' kv_k_new .. rot_q_per_row).
void read_fused_kv(const uint64_t* ptrs, const double* nums, FwdParams& p) {
  using namespace abi;
  p.kv_k_new = reinterpret_cast<const void*>(ptrs[kKvKNew]);
  p.kv_v_new = reinterpret_cast<const void*>(ptrs[kKvVNew]);
  require(p.kv_new_len == 0 || (p.kv_k_new && p.kv_v_new), "an append needs kNew and vNew");
  if (p.kv_new_len == 0) p.kv_k_new = p.kv_v_new = nullptr;
  for (int d = 0; d < 4; ++d) {
    p.kv_kn_stride[d] = as_i64(nums, kKvKNewS0 + d, "kNew stride");
    p.kv_vn_stride[d] = as_i64(nums, kKvVNewS0 + d, "vNew stride");
  }
  p.kv_batch_idx = reinterpret_cast<const int*>(ptrs[kKvBatchIdx]);
  require(!(p.kv_batch_idx && ptrs[kBlockTable]), "cacheBatchIdx goes with a contiguous cache");
  p.rot_cos = reinterpret_cast<const void*>(ptrs[kRotaryCos]);
  p.rot_sin = reinterpret_cast<const void*>(ptrs[kRotarySin]);
  require((p.rot_cos == nullptr) == (p.rot_sin == nullptr), "rotaryCos and rotarySin come together");
  if (p.rot_cos != nullptr) {
    p.rot_rows = as_int(nums, kRotaryRows, "rotary rows", 1, 2147483647.0);
    p.rot_half = as_int(nums, kRotaryHalf, "rotary half dim", 1, 128);
    require(2 * p.rot_half <= p.head_dim, "the rotary dim is at most the head dim");
    p.rot_interleaved = as_int(nums, kRotaryInterleaved, "rotary interleaved flag", 0, 1) == 1;
    p.rot_q_per_row = as_int(nums, kRotaryQPerRow, "rotary per-row flag", 0, 1) == 1;
    for (int d = 0; d < 2; ++d) {
      p.rot_cos_stride[d] = as_i64(nums, kRotaryCosS0 + d, "rotaryCos stride");
      p.rot_sin_stride[d] = as_i64(nums, kRotarySinS0 + d, "rotarySin stride");
    }
  }
}

}  // namespace

KernelFamily kernel_family(const double* nums) {
  return static_cast<KernelFamily>(as_int(nums, abi::kKernelFamily, "kernel family", 0, 4));
}

namespace {

// CTAs of one configuration resident per SM: registers (up to 255 per thread) and shared memory.
// (Unpaged shared memory: a paged call's staged table entries add at most 1 KB.)
int ctas_per_sm(const FwdConfig& c, int smem_optin) {
  const int by_regs = c.min_blocks > 0 ? c.min_blocks : std::max(1, 65536 / (c.warps * 32 * 256));
  const int by_smem = std::max(1, smem_optin / c.smem_bytes);
  return std::min(by_regs, by_smem);
}

// FlashAttention's num_splits_heuristic: the fewest splits reaching 85% of the best wave efficiency;
// no split when the grid already fills 80% of the GPU.
int num_splits_heuristic(int64_t ctas, int sm_slots, int n_blocks, int max_splits) {
  if (ctas >= 0.8 * sm_slots) return 1;
  max_splits = std::min({max_splits, sm_slots, n_blocks});
  if (max_splits <= 1) return 1;
  float eff[kMaxSplits + 1] = {};
  float best = 0.f;
  auto eligible = [&](int s) { return s == 1 || (n_blocks + s - 1) / s != (n_blocks + s - 2) / (s - 1); };
  for (int s = 1; s <= max_splits; ++s) {
    if (!eligible(s)) continue;
    const float waves = float(ctas * s) / sm_slots;
    eff[s] = waves / std::ceil(waves);
    best = std::max(best, eff[s]);
  }
  for (int s = 1; s <= max_splits; ++s)
    if (eligible(s) && eff[s] >= 0.85f * best) return s;
  return 1;
}

struct Shape {
  bool bf16;
  bool fp8;  // float8_e4m3 inputs (bf16 out)
  int batch, heads_q, heads_k, group, seq_q, seq_k, head_dim;
  int sm_count, smem_optin;
  int cc_major, cc_minor;
  bool varlen;
  bool paged;  // K/V through a block table: the sm80-family kernels only
  bool kv;     // a sdpaKvCache call (its cache is paged: a contiguous one is one page per row)
  int kv_new_len;
  // The keys one query row can see at most, what the plan counts key tiles over: an upper-left causal mask or
  // right window bound (key j <= row i + window_right) leaves min(Sk, Sq + window_right); a lower-right one
  // (offset Sk - Sq per sequence) leaves every key. Only the plan reads it; the kernels walk their own range.
  int64_t visible_k;
  bool causal;
  // The call's tensors fit the TMA's tensor maps (tma_declines.h): what the TMA-only Hopper tile needs.
  bool tma_loads;
};

Shape read_shape(const double* nums, bool varlen) {
  using namespace abi;
  Shape s{};
  s.bf16 = as_int(nums, kIsBf16, "dtype flag", 0, 1) == 1;
  s.fp8 = as_int(nums, kFp8, "fp8 flag", 0, 1) == 1;
  require(!s.fp8 || s.bf16, "fp8 inputs give a bf16 output");
  s.batch = as_int(nums, kBatch, "batch", 1, 65535);
  s.heads_q = as_int(nums, kHeadsQ, "query heads", 1, 65535);
  s.heads_k = as_int(nums, kHeadsK, "key/value heads", 1, 65535);
  require(s.heads_q % s.heads_k == 0, "query heads must be a multiple of key/value heads");
  s.group = s.heads_q / s.heads_k;
  const bool kv = as_int(nums, kKvCache, "kv-cache flag", 0, 1) == 1;
  require(!(kv && varlen), "a kv-cache call has a dense query");
  s.seq_q = as_int(nums, kSeqQ, "query length", varlen ? 0 : 1, 2147483647.0);
  s.seq_k = as_int(nums, kSeqK, "key length", varlen || kv ? 0 : 1, 2147483647.0);
  s.head_dim = as_int(nums, kHeadDim, "head dim", 1, 256);
  s.sm_count = as_int(nums, kSmCount, "SM count", 1, 1 << 20);
  s.smem_optin = as_int(nums, kSmemOptin, "opt-in shared memory", 1, 1 << 30);
  s.cc_major = as_int(nums, kCcMajor, "compute capability", 0, 1000);
  s.cc_minor = as_int(nums, kCcMinor, "compute capability", 0, 1000);
  s.varlen = varlen;
  s.paged = as_int(nums, kPageSize, "page size", 0, 2147483647.0) > 0;
  require(!s.paged || varlen || kv, "paged K/V (a block table) needs varlen offsets");
  require(!kv || s.paged, "a kv-cache call reads its cache through a block table");
  s.kv = kv;
  s.kv_new_len = kv ? as_int(nums, kKvNewLen, "appended key count", 0, 2147483647.0) : 0;
  const bool causal = as_int(nums, kCausal, "causal flag", 0, 1) == 1;
  const int window_right = causal ? 0 : as_int(nums, kWindowRight, "window right", -1, 2147483647.0);
  const bool lower_right = as_int(nums, kLowerRight, "alignment flag", 0, 1) == 1;
  s.visible_k = window_right >= 0 && !lower_right ? std::min<int64_t>(s.seq_k, int64_t(s.seq_q) + window_right)
                                                  : int64_t(s.seq_k);
  s.visible_k = std::max<int64_t>(s.visible_k, 1);
  s.causal = as_int(nums, kCausal, "causal flag", 0, 1) == 1;
  return s;
}

// read_shape with what only the addresses tell (ptrs null: planFor without them, seqused_k taken as absent).
Shape read_call_shape(const double* nums, const uint64_t* ptrs, bool varlen) {
  Shape s = read_shape(nums, varlen);
  s.tma_loads = *tma_declines(nums, nullptr, ptrs, nums[abi::kAligned16] == 1, false) == '\0';
  return s;
}

// The lean kernels (FwdTraits kExtras = false) leave out ALiBi, softcap, dropout and the left window bound,
// and fold the scale into exp2, which needs scale > 0 (the max of raw scores is then the max of scaled ones).
// alibi: whether the call has ALiBi slopes (a pointer, not in nums); unknown counts as yes.
bool lean_ok(const double* nums, bool alibi) {
  using namespace abi;
  return !alibi && nums[kSoftcap] == 0 && nums[kScale] > 0 && nums[kDropout] == 0 && nums[kWindowLeft] < 0;
}

// The shared memory a configuration launches with for this call.
int smem_of(const FwdConfig& c, const Shape& s) { return s.paged ? c.paged_smem_bytes : c.smem_bytes; }

Plan make_plan(const Shape& s, int requested_splits, int forced, bool lean, KernelFamily family) {
  // fp8 calls have one tile, at bucket 128; they never pack GQA rows (the fp8 kernel reads K/V per query head).
  const int bucket = s.fp8 ? (s.head_dim <= 128 ? 128 : -1) : head_dim_bucket(s.head_dim);
  const bool pack = !s.fp8 && s.group > 1 && s.seq_q <= 64;
  const int64_t rows = int64_t(s.seq_q) * (pack ? s.group : 1);
  const bool on_sm90 = s.cc_major == 9 && s.cc_minor == 0 && built_for_sm90a();
  const int heads_eff = pack ? s.heads_k : s.heads_q;
  auto key_tiles = [&](const FwdConfig& c) {
    return static_cast<int>(std::min<int64_t>((s.visible_k + c.block_n - 1) / c.block_n, 2147483647));
  };
  auto m_blocks_of = [&](const FwdConfig& c) { return (std::max<int64_t>(rows, 1) + c.block_m - 1) / c.block_m; };
  // The heuristic's split count for tile c (no split for a grid that fills the GPU).
  // The decode kernel's splits hold at least two of its key tiles: with one, nothing overlaps a tile's load
  // (its ring never fills) and the combine reads twice the partials (short-call sweep: B 1, H 1, Sk 4096).
  // Over strided K/V it counts one CTA per SM: one CTA's ring streams at the SM's share of the HBM, and half
  // the splits halve the partials (decode B 8, Hq 32, Hk 8, Sk 8192: 2 splits 65.5-66.7 us against 66.6-68.7
  // at 4, four runs, H200); paged K/V keeps two, whose second hides the first's staging of row offsets
  // (paged 16 / 256 at 2 splits: 73.4 / 69.7 us against 71.1 / 69.1 at 4). The 8-warp tile counts its one.
  auto splits_for = [&](const FwdConfig& c, int64_t heads) {
    const int tiles = c.decode ? (key_tiles(c) + 1) / 2 : key_tiles(c);
    const int per_sm = c.decode && !s.paged ? 1 : ctas_per_sm(c, s.smem_optin);
    return num_splits_heuristic(int64_t(s.batch) * heads * m_blocks_of(c), s.sm_count * per_sm, tiles, kMaxSplits);
  };
  int large = -1, small = -1, lean_large = -1, lean_small = -1, hopper = -1, hopper_rows64 = -1, decode = -1,
      decode_wide = -1;
  for (int i = 0; i < kNumConfigs; ++i) {
    const FwdConfig& c = kConfigs[i];
    if (c.fp8 != s.fp8 || c.bf16 != s.bf16 || c.head_dim != bucket || smem_of(c, s) > s.smem_optin) continue;
    if (c.sm90) {
      // The warp-specialized Hopper kernel of the head dim, and at D 64 its one-warpgroup tile (TMA only).
      const bool takes = lean && on_sm90 && !pack && !s.paged && family != KernelFamily::kSm80;
      if (c.block_m < 128) {
        if (takes && s.tma_loads && hopper_rows64 < 0) hopper_rows64 = i;
      } else if (takes && hopper < 0) {
        hopper = i;
      }
      continue;
    }
    if (c.decode) {  // the 64-key tile of 4 warps, and the 128-key tile of 8 ('decode_wide', one CTA per SM)
      if (lean && c.block_n <= 64 && decode < 0) decode = i;
      if (lean && c.block_n > 64 && decode_wide < 0) decode_wide = i;
      continue;
    }
    if (!c.extras) {  // a lean kernel stands in for 'large' / 'small' where the call allows it
      if (lean && c.block_m >= 128 && lean_large < 0) lean_large = i;
      if (lean && c.block_m < 128 && lean_small < 0) lean_small = i;
      continue;
    }
    if (c.block_m >= 128 && large < 0) large = i;
    if (c.block_m < 128 && small < 0) small = i;
  }
  if (s.fp8) {
    // float8_e4m3 inputs: the fp8 kernel or nothing (src/rules-fp8.ts declines the same calls first).
    if (hopper < 0 || requested_splits > 1 || s.kv || s.head_dim % 16 != 0)
      throw std::invalid_argument(
          "flash-cuda: float8_e4m3 inputs run only on the Hopper fp8 kernel: an sm90 device and an sm_90a build (" +
          std::string(ATTN_CUDA_ARCHS_STRING) +
          "), head dim <= 128 and a multiple of 16, no ALiBi, softcap, dropout or left window bound, scale > 0, no "
          "paged K/V or kv cache, no split-KV");
    if (forced >= 0 && forced != hopper)
      throw std::invalid_argument(std::string("flash-cuda: kernel ") + kConfigs[forced].name +
                                  " takes no float8_e4m3 inputs");
    Plan pl{};
    pl.config = hopper;
    pl.m_blocks = static_cast<int>(m_blocks_of(kConfigs[hopper]));
    pl.oaccum_stride = kConfigs[hopper].head_dim;
    pl.num_splits = 1;
    return pl;
  }
  if (lean_large >= 0) large = lean_large;
  // Short queries run the 64-row tile: the lean one, unless every visible key fits the narrower key block of
  // 'small' (D 128: 64 keys against 128), where the wider block would load and multiply keys no row can see.
  if (lean_small >= 0 &&
      !(small >= 0 && s.visible_k <= kConfigs[small].block_n && kConfigs[small].block_n < kConfigs[lean_small].block_n))
    small = lean_small;
  int cfg = (rows <= 64 && small >= 0) ? small : (large >= 0 ? large : small);
  // Split-KV runs on 'lean_small', FlashAttention-2's split tile (64 rows, the widest key block): the 128-row
  // tile that would split needs more splits for the same grid, each adding a share of the combine
  // (scripts/short-call-sweep.mjs: up to 1.5x at Sq 128-256).
  if (cfg == large && small >= 0 && small == lean_small && splits_for(kConfigs[large], heads_eff) > 1) cfg = small;
  if (forced >= 0) {
    if (forced >= kNumConfigs)
      throw std::invalid_argument("flash-cuda: no kernel with index " + std::to_string(forced));
    const FwdConfig& c = kConfigs[forced];
    if (c.fp8 != s.fp8 || c.bf16 != s.bf16 || c.head_dim != bucket || smem_of(c, s) > s.smem_optin)
      throw std::invalid_argument(std::string("flash-cuda: kernel ") + c.name +
                                  " does not fit this call (dtype, head dim " + std::to_string(s.head_dim) +
                                  " or shared memory)");
    if (!c.extras && !lean)
      throw std::invalid_argument(
          std::string("flash-cuda: kernel ") + c.name +
          " is lean: it has no ALiBi, softcap, dropout or left window bound and needs scale > 0");
    if (c.sm90 && c.block_m < 128 && !s.tma_loads)
      throw std::invalid_argument(std::string("flash-cuda: kernel ") + c.name +
                                  " loads by TMA only: it needs dense, 16-byte aligned tensors without varlen, "
                                  "sequsedK or paged K/V, strides positive wherever an extent is above 1");
    if (c.sm90 && !on_sm90)
      throw std::invalid_argument(std::string("flash-cuda: kernel ") + c.name +
                                  " runs only on sm90 (H100/H200) devices with an addon built for sm_90a (" +
                                  ATTN_CUDA_ARCHS_STRING + ")");
    if (c.sm90 && (pack || requested_splits > 1))
      throw std::invalid_argument(std::string("flash-cuda: kernel ") + c.name +
                                  " has no split-KV or packed GQA (short queries with GQA)");
    if (c.sm90 && s.paged)
      throw std::invalid_argument(std::string("flash-cuda: kernel ") + c.name +
                                  " has no paged K/V (block table); the sm80-family kernels take it");
    cfg = forced;
  } else if (hopper_family(family)) {
    // Asked for by the kernel option (src/kernels.ts declines the calls it cannot run first): the Hopper
    // kernel with no split-KV, whatever the heuristic would prefer.
    if (hopper < 0 || requested_splits > 1)
      throw std::invalid_argument(
          "flash-cuda: the Hopper kernels (kernel sm90, sm90-bwd-tma-ws, sm90-bwd-cp-async) cannot run this call: they "
          "need an sm90 device and an sm_90a build (" +
          std::string(ATTN_CUDA_ARCHS_STRING) +
          "), head dim <= 256, no ALiBi, softcap, dropout or left window bound, scale > 0, no paged K/V, no split-KV "
          "and no packed GQA (query length <= 64 with GQA)");
    cfg = hopper;
  } else if (decode >= 0 && rows <= kConfigs[decode].block_m) {  // one row tile: K/V read once
    // Decode steps and other calls whose packed rows fit one 16-row tile: the decode kernel keeps a ring of K/V
    // tiles in flight where the 64-row tile drains its two buffers at every key tile, and its 16-row tile
    // wastes less of each load than the Hopper tile's 128 rows (short-call sweep at Sq 1 and 16: at most 1.01x
    // the Hopper tile's time, 0.69x in geomean, where that tile was the pick; docs/perf/flash-cuda.md).
    cfg = decode;
    // K/V through a block table, where the wide tile's grid is one wave: one CTA of 8 warps per SM. A paged
    // row costs its copies more issue slots (the staged offsets), and an SM streams at the rate its warps issue
    // copies: 4 warps per SM read a paged decode step's pages at 2 splits in 73.1-73.5 us, 8 warps (the 64-key
    // tile's two CTAs at 4 splits, with the combine) in 68.3-70.4, one 8-warp CTA at 2 splits (a cluster pair, no
    // combine) in 66.8-68.5 (two H200s, B 8, Hq 32, Hk 8, Sk 8192, blocks 16 / 256; docs/perf/flash-cuda.md). Over
    // strided K/V the 64-key tile at 2 splits is as fast or faster (64.1-66.3 against 65.2-66.5 us), and with
    // more CTAs than SMs or few keys it wins outright (short-call sweep), hence the one-wave test.
    if (s.paged && decode_wide >= 0 && rows <= kConfigs[decode_wide].block_m) {
      const FwdConfig& w = kConfigs[decode_wide];
      const int splits = requested_splits > 0 ? std::min(requested_splits, kMaxSplits) : splits_for(w, heads_eff);
      if (int64_t(s.batch) * heads_eff * m_blocks_of(w) * splits <= s.sm_count) cfg = decode_wide;
    }
  } else if (hopper >= 0 && requested_splits <= 1) {
    // The Hopper kernel wherever it needs no split-KV: the heuristic's split count for its own tile is 1, or the
    // visible keys are at most two of its key tiles (a split's combine launch costs more than a second tile).
    // Short queries (packed rows <= 64) take the warp-specialized tile (D <= 128, where it was measured) only
    // where its grid is one wave: at one CTA per SM, more heads than SMs run faster on the 64-row tile's two
    // CTAs per SM (scripts/short-call-sweep.mjs).
    const FwdConfig& h = kConfigs[hopper];
    const bool one_wave =
        int64_t(s.batch) * s.heads_q * m_blocks_of(h) <= int64_t(s.sm_count) * ctas_per_sm(h, s.smem_optin);
    if ((rows > 64 || (one_wave && h.head_dim <= 128)) && (key_tiles(h) <= 2 || splits_for(h, s.heads_q) == 1))
      cfg = hopper;
  }
  // D 64's one-warpgroup tile (two CTAs per SM, TMA only) where a row sees at most kRows64Keys keys on average:
  // one CTA's fill and drain then run under the other's GEMMs. Through the addon on an H200 (random bf16 inputs,
  // scripts/short-call-sweep.mjs --inputs random), against the 128-row tile: 512-1024 keys a row 1.09-1.11x (S 1k,
  // S 1k causal, S 2k causal); 2048 keys 0.97-1.00x (S 2k, S 4k causal); 4096 and more 0.91-0.98x. Below
  // the tie, with margin. A causal row sees from all the visible keys down to the band's first: about
  // visible_k - min(Sq, visible_k) / 2 on average. A kernel forced by index stays.
  constexpr int64_t kRows64Keys = 1536;
  const int64_t mean_keys = s.causal ? s.visible_k - std::min<int64_t>(s.seq_q, s.visible_k) / 2 : s.visible_k;
  if (forced < 0 && cfg >= 0 && cfg == hopper && hopper_rows64 >= 0 && mean_keys <= kRows64Keys) cfg = hopper_rows64;
  if (cfg < 0)
    throw std::runtime_error("flash-cuda: no compiled kernel for head dim " + std::to_string(s.head_dim) + " fits in " +
                             std::to_string(s.smem_optin) + " bytes of shared memory per block");
  const FwdConfig& c = kConfigs[cfg];
  Plan pl{};
  pl.config = cfg;
  pl.pack_gqa = pack;
  pl.oaccum_stride = c.head_dim;
  const int64_t m_blocks = m_blocks_of(c);
  if (m_blocks > 2147483647 / kMaxSplits) throw std::invalid_argument("flash-cuda: too many query rows");
  pl.m_blocks = static_cast<int>(m_blocks);
  pl.fuse_kv_append = s.kv && !c.sm90 && rows <= kMaxFusedRows && s.kv_new_len <= kMaxFusedAppend;
  if (c.sm90) {
    pl.num_splits = 1;
  } else if (requested_splits > 0) {
    pl.num_splits = std::min(requested_splits, kMaxSplits);
  } else {
    pl.num_splits = splits_for(c, heads_eff);
  }
  // A decode step split in two merges the pair in a cluster where the device has clusters (sm90 with the sm_90a
  // build, as the Hopper kernels) and the grid is one CTA per SM: one launch that reads no partials back (decode
  // B 8, Hq 32, Hk 8, Sk 8192 on an H200: 65.4 against 66.8 us with the combine; docs/perf/flash-cuda.md).
  pl.cluster_splits = c.decode && on_sm90 && pl.num_splits > 1 && pl.num_splits <= kMaxClusterSplits &&
                      int64_t(s.batch) * heads_eff * m_blocks * pl.num_splits <= s.sm_count;
  return pl;
}

}  // namespace

Plan plan(const double* nums, const uint64_t* ptrs) {
  using namespace abi;
  const bool varlen = as_int(nums, kTotalQ, "total query length", -1, 2147483647.0) >= 0;
  // kNumSplits > 0 forces a split count (tests); 0 lets the heuristic choose.
  return make_plan(read_call_shape(nums, ptrs, varlen), as_int(nums, kNumSplits, "split count", 0, kMaxSplits),
                   as_int(nums, kKernel, "kernel index", -1, kNumConfigs - 1),
                   lean_ok(nums, ptrs == nullptr || ptrs[kAlibi] != 0), kernel_family(nums));
}

FwdParams params_from_abi(const uint64_t* ptrs, const double* nums) {
  using namespace abi;
  const int64_t total_q = as_int(nums, kTotalQ, "total query length", -1, 2147483647.0);
  const bool varlen = total_q >= 0;
  const Shape s = read_shape(nums, varlen);

  require(ptrs[kQ] && ptrs[kK] && ptrs[kV] && ptrs[kOut] && ptrs[kLse], "q, k, v, out and lse need device addresses");
  require(!varlen || (ptrs[kCuSeqlensQ] && ptrs[kCuSeqlensK]), "varlen needs cuSeqlensQ and cuSeqlensK");

  FwdParams p{};
  p.q = reinterpret_cast<const void*>(ptrs[kQ]);
  p.k = reinterpret_cast<const void*>(ptrs[kK]);
  p.v = reinterpret_cast<const void*>(ptrs[kV]);
  p.o = reinterpret_cast<void*>(ptrs[kOut]);
  p.lse = reinterpret_cast<float*>(ptrs[kLse]);
  p.q_batch_stride = as_i64(nums, kQBatchStride, "q batch stride");
  p.q_head_stride = as_i64(nums, kQHeadStride, "q head stride");
  p.q_row_stride = as_i64(nums, kQRowStride, "q row stride");
  p.k_batch_stride = as_i64(nums, kKBatchStride, "k batch stride");
  p.k_head_stride = as_i64(nums, kKHeadStride, "k head stride");
  p.k_row_stride = as_i64(nums, kKRowStride, "k row stride");
  p.v_batch_stride = as_i64(nums, kVBatchStride, "v batch stride");
  p.v_head_stride = as_i64(nums, kVHeadStride, "v head stride");
  p.v_row_stride = as_i64(nums, kVRowStride, "v row stride");
  p.o_batch_stride = as_i64(nums, kOBatchStride, "out batch stride");
  p.o_head_stride = as_i64(nums, kOHeadStride, "out head stride");
  p.o_row_stride = as_i64(nums, kORowStride, "out row stride");
  p.lse_batch_stride = as_i64(nums, kLseBatchStride, "lse batch stride");
  p.lse_head_stride = as_i64(nums, kLseHeadStride, "lse head stride");
  p.batch = s.batch;
  p.heads_q = s.heads_q;
  p.heads_k = s.heads_k;
  p.group = s.group;
  p.seqlen_q = s.seq_q;
  p.seqlen_k = s.seq_k;
  p.head_dim = s.head_dim;
  p.total_q = varlen ? total_q : 0;
  p.cu_seqlens_q = varlen ? reinterpret_cast<const int*>(ptrs[kCuSeqlensQ]) : nullptr;
  p.cu_seqlens_k = varlen ? reinterpret_cast<const int*>(ptrs[kCuSeqlensK]) : nullptr;
  p.seqused_k = reinterpret_cast<const int*>(ptrs[kSequsedK]);
  // Packed K/V rows, the bound of cu_seqlens_k's offsets on the device (seq_extents.h).
  p.total_k = varlen && !s.paged ? as_i64(nums, kTotalK, "total key length") : 0;
  require(p.total_k >= 0, "total key length must be >= 0");
  if (s.paged) {
    p.block_table = reinterpret_cast<const int*>(ptrs[kBlockTable]);
    // A kv-cache call that appends in the forward reads a contiguous cache as dense rows (no table).
    const bool dense_cache = as_int(nums, kKvFused, "fused kv-append flag", 0, 1) == 1 && !ptrs[kBlockTable];
    require(p.block_table != nullptr || dense_cache, "paged K/V needs the block table's device address");
    p.page_size = as_int(nums, kPageSize, "page size", 1, 2147483647.0);
    p.num_pages = as_int(nums, kNumPages, "page count", 0, 2147483647.0);
    p.max_pages_per_seq = as_int(nums, kMaxPagesPerSeq, "block table width", 0, 2147483647.0);
    p.k_page_stride = as_i64(nums, kKPageStride, "k page stride");
    p.v_page_stride = as_i64(nums, kVPageStride, "v page stride");
    // Division by the page size as a multiply-shift (Granlund-Montgomery, as CUTLASS's FastDivmod): with
    // l = ceil(log2(page_size)), mul = ceil(2^(31 + l) / page_size) gives j / page_size exactly for j < 2^31.
    if (p.page_size > 1) {
      int l = 0;
      while ((int64_t(1) << l) < p.page_size) ++l;
      p.page_div_mul =
          static_cast<uint32_t>(((uint64_t(1) << (31 + l)) + uint64_t(p.page_size) - 1) / uint64_t(p.page_size));
      p.page_div_shift = l - 1;
    }
  }

  p.kv_cache = as_int(nums, kKvCache, "kv-cache flag", 0, 1) == 1;
  if (p.kv_cache) {
    p.kv_seqlens = reinterpret_cast<const int*>(ptrs[kKvSeqlens]);
    p.kv_leftpad = reinterpret_cast<const int*>(ptrs[kKvLeftpad]);
    p.kv_new_len = as_int(nums, kKvNewLen, "appended key count", 0, 2147483647.0);
    if (as_int(nums, kKvFused, "fused kv-append flag", 0, 1) == 1) read_fused_kv(ptrs, nums, p);
  } else {
    require(nums[kKvFused] == 0, "only a kv-cache call appends in the forward");
  }

  constexpr float kLog2e = 1.4426950408889634f;
  const double scale = nums[kScale], softcap = nums[kSoftcap];
  require(std::isfinite(scale), "scale must be finite");
  require(std::isfinite(softcap) && softcap >= 0, "softcap must be >= 0");
  if (softcap > 0) {
    p.softcap_in = static_cast<float>(scale / softcap);
    p.softcap_out = static_cast<float>(softcap * kLog2e);
    p.score_mul = 0.f;
  } else {
    p.score_mul = static_cast<float>(scale * kLog2e);
  }
  p.out_scale = 1.f;
  if (s.fp8) {
    // Per-tensor descale factors: q's and k's scale every score, v's the output (fp8 kernel).
    const double dq = nums[kDescaleQ], dk = nums[kDescaleK], dv = nums[kDescaleV];
    require(std::isfinite(dq) && dq > 0 && std::isfinite(dk) && dk > 0 && std::isfinite(dv) && dv > 0,
            "descale factors must be finite and > 0");
    require(softcap == 0, "fp8 inputs have no softcap");
    p.score_mul = static_cast<float>(scale * dq * dk * kLog2e);
    p.out_scale = static_cast<float>(dv);
  }
  p.causal = as_int(nums, kCausal, "causal flag", 0, 1) == 1;
  p.lower_right = as_int(nums, kLowerRight, "alignment flag", 0, 1) == 1;
  p.window_left = as_int(nums, kWindowLeft, "window left", -1, 2147483647.0);
  p.window_right = as_int(nums, kWindowRight, "window right", -1, 2147483647.0);
  if (p.causal) p.window_right = 0;  // causal is the window (.., 0]
  p.alibi = reinterpret_cast<const float*>(ptrs[kAlibi]);
  p.alibi_batch_stride = as_i64(nums, kAlibiBatchStride, "alibi batch stride");
  p.alibi_mul = kLog2e;

  p.dropout = as_int(nums, kDropout, "dropout flag", 0, 1) == 1;
  p.dropout_threshold = static_cast<uint32_t>(as_i64(nums, kDropoutThreshold, "dropout threshold"));
  p.dropout_keep_scale = static_cast<float>(nums[kDropoutKeepScale]);
  p.dropout_seed = ptrs[kSeed];
  p.dropout_offset = static_cast<uint32_t>(as_i64(nums, kDropoutOffset, "dropout offset"));
  require(!p.dropout || nums[kDropoutThreshold] <= 4294967295.0, "dropout threshold must fit in uint32");
  p.aligned16 = as_int(nums, kAligned16, "aligned flag", 0, 1) == 1;
  return p;
}

void forward(const uint64_t* ptrs, const double* nums) {
  using namespace abi;
  const int64_t total_q = as_int(nums, kTotalQ, "total query length", -1, 2147483647.0);
  const bool varlen = total_q >= 0;
  const Shape s = read_call_shape(nums, ptrs, varlen);
  const int splits = as_int(nums, kNumSplits, "split count", 1, kMaxSplits);
  const Plan pl = make_plan(s, splits, as_int(nums, kKernel, "kernel index", -1, kNumConfigs - 1),
                            lean_ok(nums, ptrs[kAlibi] != 0), kernel_family(nums));
  const FwdConfig& c = kConfigs[pl.config];
  require(splits == 1 || pl.cluster_splits || (ptrs[kOaccum] && ptrs[kLseAccum]), "split-KV needs partial buffers");

  require(nums[kKvFused] == 0 || s.kv, "only a kv-cache call appends in the forward");
  require(nums[kKvFused] == 0 || pl.fuse_kv_append,
          "this kv-cache call appends with the separate kernel (the plan does not fuse it)");
  FwdParams p = params_from_abi(ptrs, nums);
  if (s.fp8) {
    // The fp8 kernel copies 16-byte chunks only: rows of q, k, v 16-byte aligned (byte strides), out's rows (bf16)
    // too, and D a multiple of 16.
    bool rows16 = p.aligned16 && s.head_dim % 16 == 0;
    for (int64_t st : {p.q_batch_stride, p.q_head_stride, p.q_row_stride, p.k_batch_stride, p.k_head_stride,
                       p.k_row_stride, p.v_batch_stride, p.v_head_stride, p.v_row_stride})
      rows16 = rows16 && st % 16 == 0;
    require(rows16,
            "fp8 inputs need 16-byte aligned tensors, q/k/v strides that are multiples of 16 and a head dim that is a "
            "multiple of 16");
  }
  p.tma_loads = s.tma_loads;
  p.pack_gqa = pl.pack_gqa;
  p.m_blocks = pl.m_blocks;
  p.num_splits = splits;
  p.cluster_splits = pl.cluster_splits;
  p.oaccum = reinterpret_cast<float*>(ptrs[kOaccum]);
  p.lse_accum = reinterpret_cast<float*>(ptrs[kLseAccum]);
  p.oaccum_stride = pl.oaccum_stride;
  p.accum_rows = varlen ? int64_t(s.heads_q) * total_q : int64_t(s.batch) * s.heads_q * s.seq_q;

  const int device = as_int(nums, kDevice, "device index", 0, 1023);
  ATTN_CUDA_CHECK(cudaSetDevice(device));
  auto stream = reinterpret_cast<cudaStream_t>(ptrs[kStream]);
  c.run(p, stream, device);
  // On sm90 the combine is a programmatic dependent launch: its CTAs start while the forward's last CTAs
  // run and wait for the forward's memory there (griddepcontrol.wait), so no launch gap separates them.
  if (splits > 1 && !p.cluster_splits) run_combine(p, s.bf16, stream, device);
}

const char* kernel_name(int config) { return config >= 0 && config < kNumConfigs ? kConfigs[config].name : ""; }

std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (const FwdConfig& c : kConfigs) names.push_back(c.name);
  return names;
}

std::vector<std::string> kernel_descriptions() {
  std::vector<std::string> out;
  for (const FwdConfig& c : kConfigs)
    out.push_back(std::string(c.name) + " (" + std::to_string(c.block_m) + "x" + std::to_string(c.block_n) + ", " +
                  std::to_string(c.warps) + " warps, " + std::to_string(c.smem_bytes / 1024) + " KB smem" +
                  (c.q_in_regs ? ", Q in registers" : "") + (c.extras ? "" : ", lean") +
                  (c.sm90 ? (c.split_release ? ", sm90 wgmma, warp-specialized, K/V released apart"
                                             : ", sm90 wgmma, warp-specialized")
                          : "") +
                  // The 16-bit Hopper kernel's producer (FwdParams::tma_loads, the plan's tma_loads).
                  (c.sm90 && !c.fp8 && c.block_m >= 128
                       ? ", Q/K/V by TMA on dense calls (cp.async on varlen, sequsedK, misaligned)"
                       : "") +
                  (c.sm90 && c.block_m < 128 ? ", one warpgroup per CTA, Q/K/V by TMA: dense aligned calls only" : "") +
                  (c.decode ? ", decode: the warps split each key tile" : "") +
                  (c.fp8 ? ", float8_e4m3 in, bf16 out, V transposed in shared memory" : "") + ")");
  return out;
}

}  // namespace attn::flash
