// A batch row's sequence extents as every forward and backward kernel reads them from the device:
// cu_seqlens_q/k (varlen), seqused_k, and for paged K/V the table width.
//
// Replay rule. The host validated these tensors, but a captured CUDA graph replays with whatever they
// hold then (lengths and tables updated on the device between steps). Every value read here is clamped
// into the tensors it addresses, so values that would fail validation give unspecified numbers, never
// an access outside q, k, v, out, lse or the block table:
//   q rows  [q_start, q_start + seq_q) within [0, total_q];
//   k rows  packed: [k_start, k_start + seq_k) within [0, total_k]; paged: seq_k <= the keys the
//           table row can name (max_pages_per_seq * page_size), block-table entries clamped to
//           [0, num_pages) where flash_fwd_kernel.h turns them into row offsets;
//   seqused_k clamped to [0, the row's key count];
//   kv cache: old = cacheSeqlens[b] within [0, the table's span], end = old + new_len within the span, start =
//           leftpadK[b] within [0, end]; a contiguous cache's row (cacheBatchIdx[b], or b) within its rows.
// On the validated path every clamp is the identity, at a few integer instructions per CTA.
#pragma once
#include <climits>
#include <cstdint>

#include "common/fwd_params.h"

namespace attn::flash {

struct SeqExtents {
  int64_t q_start, k_start;  // first packed row of the batch row (0 when dense or paged)
  int seq_q, seq_k;
  int k_pos0;  // paged: the table position of key 0 (a kv cache's leftpadK; 0 otherwise)
  int kv_old;  // kv cache: the table position of the first appended key (the keys held before the call)
  int kv_row;  // kv cache read as dense rows (no block table): the pool row of this batch row
};

__device__ __forceinline__ int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
__device__ __forceinline__ int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
__device__ __forceinline__ int64_t clamp64(int64_t x, int64_t lo, int64_t hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

__device__ __forceinline__ SeqExtents seq_extents(const FwdParams& p, int b) {
  SeqExtents e{0, 0, p.seqlen_q, p.seqlen_k, 0, 0, 0};
  if (p.kv_cache) {
    const int64_t span = p.num_pages > 0 ? int64_t(p.max_pages_per_seq) * p.page_size : 0;
    const int64_t cap = span < INT_MAX ? span : INT_MAX;
    const int64_t old = p.kv_seqlens != nullptr ? clamp64(p.kv_seqlens[b], 0, cap) : cap;
    const int64_t end = clamp64(old + p.kv_new_len, 0, cap);
    const int64_t start = p.kv_leftpad != nullptr ? clamp64(p.kv_leftpad[b], 0, end) : 0;
    e.seq_k = static_cast<int>(end - start);
    e.k_pos0 = static_cast<int>(start);
    e.kv_old = static_cast<int>(old);
    if (p.block_table == nullptr && p.num_pages > 0)
      e.kv_row = static_cast<int>(clamp64(p.kv_batch_idx != nullptr ? p.kv_batch_idx[b] : b, 0, p.num_pages - 1));
    return e;
  }
  if (p.cu_seqlens_q != nullptr) {
    const int64_t q0 = clamp64(p.cu_seqlens_q[b], 0, p.total_q);
    const int64_t q1 = clamp64(p.cu_seqlens_q[b + 1], q0, p.total_q);
    e.q_start = q0;
    e.seq_q = static_cast<int>(q1 - q0);
    if (p.block_table != nullptr) {
      const int64_t span = p.num_pages > 0 ? int64_t(p.max_pages_per_seq) * p.page_size : 0;  // keys the row can name
      const int64_t n = int64_t(p.cu_seqlens_k[b + 1]) - p.cu_seqlens_k[b];
      e.seq_k = static_cast<int>(clamp64(n, 0, span < INT_MAX ? span : INT_MAX));
    } else {
      const int64_t k0 = clamp64(p.cu_seqlens_k[b], 0, p.total_k);
      const int64_t k1 = clamp64(p.cu_seqlens_k[b + 1], k0, p.total_k);
      e.k_start = k0;
      e.seq_k = static_cast<int>(k1 - k0);
    }
  }
  if (p.seqused_k != nullptr) e.seq_k = static_cast<int>(clamp64(p.seqused_k[b], 0, e.seq_k));
  return e;
}

}  // namespace attn::flash
