// Everything one forward launch needs, filled by dispatch.cu from the values TS passes (abi.h).
// Strides are in elements; every offset is computed in int64 so B*H*S*D may exceed 2^31.
#pragma once
#include <cstdint>

namespace attn::flash {

struct FwdParams {
  const void* q;
  const void* k;
  const void* v;
  void* o;
  float* lse;
  // Dense: [B, H, S, D] strides (batch, head, row). Varlen: batch stride unused, rows start at cu_seqlens[b].
  int64_t q_batch_stride, q_head_stride, q_row_stride;
  int64_t k_batch_stride, k_head_stride, k_row_stride;
  int64_t v_batch_stride, v_head_stride, v_row_stride;
  int64_t o_batch_stride, o_head_stride, o_row_stride;
  // lse element of (b, h, i): dense b*lse_batch_stride + h*lse_head_stride + i;
  // varlen h*lse_head_stride + cu_seqlens_q[b] + i.
  int64_t lse_batch_stride, lse_head_stride;

  int batch, heads_q, heads_k, group;  // group = heads_q / heads_k
  int seqlen_q, seqlen_k;              // varlen: the max lengths
  int head_dim;                        // real D (== Dv); the kernel's bucket may be larger
  const int* cu_seqlens_q;             // int32 [batch + 1] on the device, or null (dense)
  const int* cu_seqlens_k;
  // int32 [batch] on the device, or null: keys used per batch row (FlashAttention's seqused_k). Where
  // set, row b's key length is seqused_k[b] (<= the keys it holds): its tiles, masks, causal/window/ALiBi
  // offsets and split-KV ranges see only those; the backward writes 0 to the gradients of the rest.
  const int* seqused_k;
  int64_t total_k;  // varlen, packed K/V: rows of k and v (cu_seqlens_k is clamped to it); paged: unused

  // Paged K/V (FlashAttention's block_table; varlen only), or block_table == null. k and v are pools
  // [num_pages, page_size, Hk, D]: key j of sequence b is row j % page_size of page
  // block_table[b * max_pages_per_seq + j / page_size]; k_row_stride / k_head_stride address inside a
  // page, k_page_stride between pages (v alike). cu_seqlens_k gives only the lengths.
  const int* block_table;
  int page_size, num_pages, max_pages_per_seq;
  int64_t k_page_stride, v_page_stride;
  // j / page_size for 0 <= j < 2^31 as umulhi(j, page_div_mul) >> page_div_shift (page_div_mul 0: page_size 1),
  // so a tile's row addresses are straight-line code (no division, no branch between its loads).
  uint32_t page_div_mul;
  int page_div_shift;

  // sdpaKvCache calls (kv_cache): dense q [B, H, Sq, D] over a paged cache (a contiguous cache is a pool of
  // one page per cache row, the table its rows). Row b's keys are table positions [start, end) with
  // end = (kv_seqlens ? kv_seqlens[b] : the table's span) + kv_new_len and start = kv_leftpad ? kv_leftpad[b] : 0,
  // read on the device and clamped (seq_extents.h); key j is table position start + j.
  bool kv_cache;
  const int* kv_seqlens;
  const int* kv_leftpad;
  int kv_new_len;
  // A kv-cache call whose forward appends (the plan's fuse_kv_append; dispatch.cu): the CTAs of the split
  // whose key range holds positions [kv_seqlens[b], + kv_new_len) write kv_k_new / kv_v_new rows there
  // (kNew rotated), each before its own loads of them (flash_fwd_kernel.h); q is the user's, rotated as it
  // is loaded. Null kv_k_new: nothing to append (or the append kernel ran before). A contiguous cache
  // (block_table null) is read as dense rows: row b of the pool is cache row kv_batch_idx[b] (null: b).
  const void* kv_k_new;
  const void* kv_v_new;
  int64_t kv_kn_stride[4], kv_vn_stride[4];  // [B, new_len, Hk, D] strides, in elements
  const int* kv_batch_idx;
  // Rotary tables [rot_rows, rot_half] (null: no rotary), applied to q rows and to appended keys at their
  // positions (attn/rotary.cuh). q row i of b sits at kv_seqlens[b] + (rot_q_per_row ? i : 0).
  const void* rot_cos;
  const void* rot_sin;
  int64_t rot_cos_stride[2], rot_sin_stride[2];
  int rot_rows, rot_half;
  bool rot_interleaved, rot_q_per_row;

  // Scores in log2 units: s2 = s * score_mul (no softcap) or softcap_out * tanh(s * softcap_in). fp8 calls
  // fold q's and k's descale factors into score_mul.
  float score_mul;
  float out_scale;                // fp8 calls: v's descale factor, applied to O before its normalization (else unused)
  float softcap_in, softcap_out;  // softcap_out == 0: off
  bool causal, lower_right;
  int window_left, window_right;  // -1: unbounded on that side
  const float* alibi;             // float32 slopes, or null
  int64_t alibi_batch_stride;     // 0 for [Hq], Hq for [B, Hq]
  float alibi_mul;                // log2(e): slopes act in natural-log units

  bool dropout;
  uint32_t dropout_threshold;
  float dropout_keep_scale;
  uint64_t dropout_seed;
  uint32_t dropout_offset;

  bool pack_gqa;   // rows of a CTA = (query i, group member g): K/V tiles read once per group
  bool aligned16;  // every base pointer 16-byte aligned, every stride and D a multiple of 8
  // q, k and v fit the TMA's tensor maps (the plan's rule, tma_declines.h): the Hopper forward's TMA producer
  // reads them (false: cp.async).
  bool tma_loads;
  int m_blocks;    // CTAs along the (packed) query rows
  int num_splits;  // > 1: split-KV; partial results to oaccum / lse_accum, merged by the combine kernel
  // The decode kernel's splits of a row tile run as one thread-block cluster and merge in its shared memory
  // (sm90; num_splits <= kMaxClusterSplits): no partials, no combine.
  bool cluster_splits;
  float* oaccum;     // [num_splits][rows][oaccum_stride], rows indexed like lse
  float* lse_accum;  // [num_splits][rows]
  int64_t accum_rows;
  int oaccum_stride;
  int64_t total_q;  // varlen: packed query length (lse is [Hq, total_q])
};

}  // namespace attn::flash
