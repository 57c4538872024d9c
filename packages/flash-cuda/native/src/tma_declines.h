// Whether a call's tensors fit the TMA's 4-D tensor maps, from the abi numbers: the one rule of the TMA kernels (the
// Hopper dK/dV kernel 'sm90_tma_ws'; the Hopper forward's TMA producer and its one-warpgroup tile 'sm90ws_rows64',
// which take it from the plan through FwdParams::tma_loads).
#pragma once
#include <cstdint>

#include "abi.h"
#include "bwd_abi.h"

namespace attn::flash {

// Why a kernel that loads by TMA cannot take this call beyond its bucket, or "" when it can (a literal: no
// allocation on the forward's per-call path): it reads
// Q, K, V (and the backward's dO) through 4-D tensor maps (dense tensors, 16-byte aligned, strides positive multiples of 8
// elements wherever the extent is above 1) and has no seqused_k, paged K/V, ALiBi, softcap or dropout.
// `ptrs` null (backward_plan, which sees no addresses): ALiBi and seqused_k are taken as absent and
// `aligned16` as the strides say; `do_strides` false: dO's strides are not known yet. backward() decides
// with everything.
inline const char* tma_declines(const double* nums, const double* bnums, const uint64_t* ptrs, bool aligned16,
                                bool do_strides) {
  using namespace abi;
  if (nums[kTotalQ] >= 0) return "it has no varlen (cuSeqlens)";
  if (nums[kKvCache] != 0 || (ptrs != nullptr && ptrs[kBlockTable] != 0)) return "it has no paged K/V";
  if (ptrs != nullptr && ptrs[kSequsedK] != 0) return "it has no sequsedK";
  if (nums[kSoftcap] != 0 || nums[kDropout] != 0 || (ptrs != nullptr && ptrs[kAlibi] != 0))
    return "it has no ALiBi, softcap or dropout";
  if (nums[kSeqQ] < 1 || nums[kSeqK] < 1) return "it needs non-empty sequences";
  if (!aligned16) return "it needs 16-byte aligned tensors (addresses, strides and head dim multiples of 8 elements)";
  // Extent above 1: the stride is stepped, so the tensor map needs it positive (16-byte multiples: aligned16).
  auto fits = [](double extent, double stride) { return extent <= 1 || (stride > 0 && stride < 549755813888.0); };
  const double b = nums[kBatch], hq = nums[kHeadsQ], hk = nums[kHeadsK], sq = nums[kSeqQ], sk = nums[kSeqK];
  bool ok = fits(sq, nums[kQRowStride]) && fits(hq, nums[kQHeadStride]) && fits(b, nums[kQBatchStride]) &&
            fits(sk, nums[kKRowStride]) && fits(hk, nums[kKHeadStride]) && fits(b, nums[kKBatchStride]) &&
            fits(sk, nums[kVRowStride]) && fits(hk, nums[kVHeadStride]) && fits(b, nums[kVBatchStride]);
  if (do_strides)
    ok = ok && fits(sq, bnums[kDoRowStride]) && fits(hq, bnums[kDoHeadStride]) && fits(b, bnums[kDoBatchStride]);
  if (!ok) return "it needs tensors a TMA tensor map can describe (positive strides wherever an extent is above 1)";
  return "";
}

}  // namespace attn::flash
