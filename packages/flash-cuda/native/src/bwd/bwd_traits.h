// Tile shapes of the backward kernels, apart from their bodies (as kernel_traits.h for the forward).
// One BwdTraits (dK/dV kernel) and one DqTraits (deterministic dQ kernel) per generated instantiation
// (scripts/generate-bwd-instantiations.mjs). The shared-memory swizzle and ldmatrix addressing are
// the forward's (swizzle_offset, LdsmAddr): these structs provide the same members they read.
#pragma once
#include <cstdint>

#include "common/kernel_traits.h"

namespace attn::flash {

// Which arch family this compilation pass is for (the device pass of each arch sees its own value):
// register budgets differ between ptxas's sm80 and sm90 allocations.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
inline constexpr bool kBwdSm8x = true;
#else
inline constexpr bool kBwdSm8x = false;
#endif

// The dK/dV kernel forms, in the dispatcher's order of preference where several run a call
// (bwd_dispatch.cu choose): flash_bwd_launch.h picks the kernel body of a traits type by its kForm.
enum class BwdForm : int {
  kRowTiled = 0,   // flash_bwd_kernel.h: 1-D warp tiling (each warp 16 keys), one or two Q/dO stages; every bucket
  kTiled2d = 1,    // flash_bwd_2d_kernel.h: a 2-D warp layout per GEMM, two stages always; D128 and D256 buckets
  kSm90 = 2,       // sm90/flash_bwd_sm90_kernel.h, ..._roles_kernel.h: wgmma, sm90 devices and an sm_90a build only
  kSm90TmaWs = 3,  // sm90/flash_bwd_sm90_tma_ws_kernel.h: TMA, warp-specialized, wgmma; D128 bucket, dense calls
};

// Swizzle parameters of a tile whose rows are kCols elements wide (what swizzle_offset and LdsmAddr read).
template <int kCols>
struct SmemRows {
  static constexpr int kBlockKSmem = kCols % 64 == 0 ? 64 : 32;
  static constexpr int kChunksPerBlock = kBlockKSmem / 8;
  static constexpr int kChunksPerRow = kCols / 8;
  static_assert(kCols % 32 == 0, "rows of 32-element multiples");
};

// dK/dV kernel: a CTA owns kBlockN keys (16 per warp: warp w owns keys w*16..w*16+15 for every GEMM
// whose rows are keys: S^T = K Q^T, dP^T = V dO^T, dV += P^T dO, dK += dS^T Q) and walks the query
// blocks of kBlockM rows. For kHeadDim > 128 the dK/dV columns are split over kColSplits CTAs (the
// accumulators of 16 keys x 256 columns x 2 do not fit in registers); each recomputes S^T and dP^T.
// dQ += dS K (default mode) goes through shared memory (dS^T), warps tiled (rows x column groups).
template <int kHeadDim_, int kBlockM_, int kNWarps_, typename Element_>
struct BwdTraits : SmemRows<kHeadDim_> {
  static constexpr BwdForm kForm = BwdForm::kRowTiled;
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockM = kBlockM_;
  static constexpr int kNWarps = kNWarps_;
  static constexpr int kNThreads = kNWarps * 32;
  static constexpr int kBlockN = 16 * kNWarps;

  static constexpr int kColSplits = kHeadDim > 128 ? 2 : 1;
  static constexpr int kDkvCols = kHeadDim / kColSplits;  // dK/dV (and dQ) columns of one CTA
  static constexpr int kDkvTiles = kDkvCols / 8;
  static constexpr int kQTiles = kBlockM / 8;    // n8 tiles of S^T per warp
  static constexpr int kKSteps = kHeadDim / 16;  // k16 steps of K Q^T and V dO^T
  static constexpr int kMSteps = kBlockM / 16;   // k16 steps of P^T dO and dS^T Q
  static constexpr int kDqRowWarps = kBlockM / 16;
  static constexpr int kDqColGroups = kNWarps / kDqRowWarps;
  static constexpr int kDqCols = kDkvCols / kDqColGroups;
  static constexpr int kDqTiles = kDqCols / 8;
  // dQ columns per pass: at most 4 n8 tiles (16 accumulators) live next to dK and dV; on sm8x 2 above
  // D = 128, where dK and dV already hold 128 accumulators (ptxas allocates differently per arch: this
  // is what keeps both spill-free).
  static constexpr int kDqPassTiles = (kDqTiles % 4 != 0 || (kBwdSm8x && kHeadDim > 128)) ? 2 : 4;

  using DsRows = SmemRows<kBlockM>;  // dS^T tile: kBlockN rows (keys) of kBlockM elements (queries)
  static constexpr int kSmemQElems = kBlockM * kHeadDim;   // Q and dO
  static constexpr int kSmemKVElems = kBlockN * kHeadDim;  // K and V
  static constexpr int kSmemDsElems = kBlockN * kBlockM;
  // K, V, dS^T and two slots of lse and Dsum, then 1 or 2 stages of (Q, dO): two stages let the next
  // query block's copies overlap this one's math; the launch uses two where the GPU's shared memory allows.
  static constexpr int kSmemFixedBytes = (2 * kSmemKVElems + kSmemDsElems) * 2 + 4 * kBlockM * 4;
  static constexpr int kSmemStageBytes = 2 * kSmemQElems * 2;
  static constexpr int smem_bytes(int stages) { return kSmemFixedBytes + stages * kSmemStageBytes; }
  static constexpr int kSmemBytes = kSmemFixedBytes + kSmemStageBytes;  // the minimum (one stage)

  static_assert(kHeadDim % 64 == 0 && kHeadDim <= 256, "backward head-dim buckets: 64, 128, 192, 256");
  static_assert(kBlockM % 32 == 0 && kNWarps % kDqRowWarps == 0, "dQ warps tile the block");
  static_assert(kDkvTiles % 2 == 0 && kDqTiles % 2 == 0, "ldmatrix.x4 loads two n8 tiles");
  static_assert((kBlockM * kHeadDim / 8) % kNThreads == 0, "Q tile chunks split evenly");
  static_assert(kBlockM <= kNThreads, "one thread per row loads lse and Dsum");
};

// dK/dV kernel with 2-D warp tiling (flash_bwd_2d_kernel.h), FlashAttention-2's. Every GEMM has
// its own warp layout over the CTA's (kBlockN keys x kBlockM queries x D) block, so one ldmatrix of a
// B operand feeds two or more A fragments, and P^T and dS^T go through shared memory between them:
//   S^T, dP^T (kBlockN x kBlockM, k = D):  kSdpWarpsN x (kNWarps / kSdpWarpsN) warps, in kSdpPasses
//                                          passes over the queries (fewer live accumulators per pass);
//   dV, dK (kBlockN x D, k = kBlockM):     kDkvWarpsN x (kNWarps / kDkvWarpsN) warps (keys x columns):
//                                          D > 128 needs no column split, each warp holds a slice;
//   dQ (kBlockM x D, k = kBlockN):         kDqWarpsM x (kNWarps / kDqWarpsM) warps, passes of at most
//                                          4 n8 tiles of columns (the atomics as in BwdTraits' kernel).
// The four layout numbers come packed in one decimal: kSdpWarpsN kSdpPasses kDkvWarpsN kDqWarpsM, e.g.
// 8142 = 8 x 1 warps for S^T (one pass), 4 x 2 for dK/dV, 2 x 4 for dQ. kLayout90_ is for sm90+,
// kLayout8x_ for the sm8x device pass: at 255 registers ptxas's two allocators spill on different
// layouts, and the layout changes no shared-memory size or host-side number, only the body.
// Always two shared-memory stages of (Q, dO): the dispatcher runs this form only where they fit.
template <int kHeadDim_, int kBlockM_, int kBlockN_, int kNWarps_, int kLayout90_, int kLayout8x_, typename Element_>
struct BwdTraits2d : SmemRows<kHeadDim_> {
  static constexpr BwdForm kForm = BwdForm::kTiled2d;
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockM = kBlockM_;
  static constexpr int kBlockN = kBlockN_;
  static constexpr int kNWarps = kNWarps_;
  static constexpr int kNThreads = kNWarps * 32;
  static constexpr int kColSplits = 1;
  static constexpr int kKSteps = kHeadDim / 16;  // k16 steps of K Q^T and V dO^T
  static constexpr int kMSteps = kBlockM / 16;   // k16 steps of P^T dO and dS^T Q
  static constexpr int kLayout = kBwdSm8x ? kLayout8x_ : kLayout90_;

  // S^T and dP^T: warp (warp % kSdpWarpsN, warp / kSdpWarpsN) owns kSdpTileN keys x kSdpTileM queries of a pass.
  static constexpr int kSdpWarpsN = kLayout / 1000;
  static constexpr int kSdpWarpsM = kNWarps / kSdpWarpsN;
  static constexpr int kSdpPasses = kLayout / 100 % 10;
  static constexpr int kPassRows = kBlockM / kSdpPasses;
  static constexpr int kSdpTileN = kBlockN / kSdpWarpsN;
  static constexpr int kSdpTileM = kPassRows / kSdpWarpsM;
  static constexpr int kSdpMTiles = kSdpTileN / 16;  // m16 tiles (keys)
  static constexpr int kSdpNTiles = kSdpTileM / 8;   // n8 tiles (queries)

  // dV and dK: warp (warp % kDkvWarpsN, warp / kDkvWarpsN) owns kDkvTileN keys x kDkvTileD columns.
  static constexpr int kDkvWarpsN = kLayout / 10 % 10;
  static constexpr int kDkvWarpsD = kNWarps / kDkvWarpsN;
  static constexpr int kDkvTileN = kBlockN / kDkvWarpsN;
  static constexpr int kDkvTileD = kHeadDim / kDkvWarpsD;
  static constexpr int kDkvMTiles = kDkvTileN / 16;
  static constexpr int kDkvDTiles = kDkvTileD / 8;

  // dQ: warp (warp % kDqWarpsM, warp / kDqWarpsM) owns kDqTileM queries x kDqTileD columns.
  static constexpr int kDqWarpsM = kLayout % 10;
  static constexpr int kDqWarpsD = kNWarps / kDqWarpsM;
  static constexpr int kDqTileM = kBlockM / kDqWarpsM;
  static constexpr int kDqTileD = kHeadDim / kDqWarpsD;
  static constexpr int kDqMTiles = kDqTileM / 16;
  static constexpr int kDqDTiles = kDqTileD / 8;
  static constexpr int kDqPassTiles = kDqDTiles % 4 == 0 ? 4 : 2;

  using DsRows = SmemRows<kBlockM>;  // P^T and dS^T tiles: kBlockN rows (keys) of kBlockM elements (queries)
  static constexpr int kSmemQElems = kBlockM * kHeadDim;   // Q and dO
  static constexpr int kSmemKVElems = kBlockN * kHeadDim;  // K and V
  static constexpr int kSmemDsElems = kBlockN * kBlockM;   // P^T and dS^T
  static constexpr int kSmemFixedBytes = (2 * kSmemKVElems + 2 * kSmemDsElems) * 2 + 4 * kBlockM * 4;
  static constexpr int kSmemStageBytes = 2 * kSmemQElems * 2;
  static constexpr int smem_bytes(int stages) { return kSmemFixedBytes + stages * kSmemStageBytes; }
  static constexpr int kSmemBytes = kSmemFixedBytes + 2 * kSmemStageBytes;  // always two stages

  static_assert(kHeadDim % 64 == 0 && kHeadDim <= 256, "backward head-dim buckets: 64, 128, 192, 256");
  static_assert(kSdpWarpsN > 0 && kSdpPasses > 0 && kDkvWarpsN > 0 && kDqWarpsM > 0, "layout digits");
  static_assert(kNWarps % kSdpWarpsN == 0 && kNWarps % kDkvWarpsN == 0 && kNWarps % kDqWarpsM == 0, "warp grids");
  static_assert(kSdpTileN % 16 == 0 && kSdpTileM % 16 == 0 && kBlockM % kSdpPasses == 0, "S^T warp tiles: m16 x n16");
  static_assert(kSdpMTiles * kSdpNTiles * 4 <= 32, "one 32-bit dropout mask per pass");
  static_assert(kDkvTileN % 16 == 0 && kDkvTileD % 16 == 0, "dK/dV warp tiles: m16 x n16");
  static_assert(kDqTileM % 16 == 0 && kDqTileD % 16 == 0 && kDqDTiles % kDqPassTiles == 0, "dQ warp tiles");
  static_assert(kBlockM % 32 == 0 && kBlockN % 16 == 0, "block shapes");
  static_assert((kBlockM * kHeadDim / 8) % kNThreads == 0 && (kBlockN * kHeadDim / 8) % kNThreads == 0,
                "Q and K tile chunks split evenly");
  static_assert(kBlockM <= kNThreads, "one thread per row loads lse and Dsum");
};

// Deterministic dQ kernel: FlashAttention-forward-shaped. A CTA owns kBlockM query rows (16 per
// warp) and walks the key tiles of kBlockN in a fixed order: S = Q K^T, dP = dO V^T, dS in registers,
// dQ += dS K in registers; dQ written once, in the output dtype. No atomics, no workspace.
template <int kHeadDim_, int kBlockN_, int kNWarps_, typename Element_>
struct DqTraits : SmemRows<kHeadDim_> {
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kNWarps = kNWarps_;
  static constexpr int kNThreads = kNWarps * 32;
  static constexpr int kBlockM = 16 * kNWarps;
  static constexpr int kBlockN = kBlockN_;
  static constexpr int kNTiles = kBlockN / 8;
  static constexpr int kDTiles = kHeadDim / 8;
  static constexpr int kKSteps = kHeadDim / 16;
  static constexpr int kPSteps = kBlockN / 16;
  // K/V tiles double-buffered (the next tile's copies under this one's GEMMs) where two CTAs of the larger
  // shared memory still fit an SM; D > 128 keeps one stage.
  static constexpr int kStages = kHeadDim <= 128 ? 2 : 1;
  static constexpr int kSmemBytes = (2 * kBlockM * kHeadDim + 2 * kStages * kBlockN * kHeadDim) * 2;
  static_assert(kBlockN % 16 == 0 && (kBlockN * kHeadDim / 8) % kNThreads == 0, "K/V tile chunks split evenly");
};

}  // namespace attn::flash
