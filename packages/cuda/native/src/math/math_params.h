// The arguments of one cuda-math call as its kernels read them: plain values, passed by value to
// every launch. bind_math.cpp fills them from the JS argument object after checking every size,
// stride and pointer range; the kernels trust them.
#pragma once
#include <cstdint>

#include "attn/tensor_ref.h"

namespace attn::math {

// A q/k/v-like tensor seen as rows of (sequence b, head h, row r) and columns c: element (b, h, r, c)
// is at data + b * sb + h * sh + r * sr + c * sc (elements). Dense [B, H, S, D] tensors use all four
// strides; packed varlen [total, H, D] ones have sb = 0 and r counts from the start of the packed
// tensor (cuSeqlens[b] + position).
struct Rows {
  const void* data = nullptr;
  int64_t sb = 0, sh = 0, sr = 0, sc = 0;
};

struct Params {
  // Shape. Dense: seq_q / seq_k are every sequence's lengths. Varlen: cu_q / cu_k hold B + 1 offsets
  // and total_q is the packed query length.
  int64_t batch = 0, heads_q = 0, heads_kv = 0, group = 1;
  int64_t seq_q = 0, seq_k = 0, total_q = 0;
  int32_t head_dim = 0, head_dim_v = 0;
  const int32_t* cu_q = nullptr;
  const int32_t* cu_k = nullptr;
  // Keys used per sequence (int32 [B]), or null: sequence b then has only its first seqused_k[b] keys.
  const int32_t* seqused_k = nullptr;
  // Paged K/V (varlen forward only), or null: k and v are pools [num_blocks, block_size, Hk, D] whose
  // Rows have sb = the page stride and sr = the row stride inside a page; key j of sequence b is row
  // j % block_size of page block_table[b * max_blocks + j / block_size] (key_row() in math_device.cuh).
  const int32_t* block_table = nullptr;
  int64_t block_size = 0, max_blocks = 0, num_blocks = 0;
  // Paged only, or null: key j of sequence b is key position key_start[b] + j of its table row (a kv
  // cache's leftpadK), so the page is block_table[b * max_blocks + (key_start[b] + j) / block_size].
  const int32_t* key_start = nullptr;
  // Query rows of the call: B * Hq * Sq (dense) or Hq * total_q (varlen); row r is (b, h, i) in that
  // order for dense calls and (h, packed row) for varlen ones, which is also the logsumexp's layout.
  int64_t rows = 0;

  Rows q, k, v, out;
  float* lse = nullptr;  // [rows], contiguous

  double scale = 1;
  double softcap = 0;  // 0: off
  bool lower_right = false;
  // Keys visible from row i around its diagonal d: [d - left, d + right]; -1 = unbounded. Causal is
  // folded into right (right = min(right, 0)).
  int64_t window_left = -1, window_right = -1;

  const float* alibi = nullptr;  // slopes[b * alibi_sb + h * alibi_sh], or null
  int64_t alibi_sb = 0, alibi_sh = 0;

  int32_t mask_kind = 0;  // 0 none, 1 additive, 2 bool (true = attend)
  DType mask_dtype = DType::kBool;
  const void* mask = nullptr;
  int64_t mask_stride[4] = {0, 0, 0, 0};  // expanded to [B, Hq, Sq, Sk], 0 on broadcast dims

  bool dropout = false;
  uint32_t dropout_threshold = 0;
  uint32_t dropout_offset = 0;
  uint64_t dropout_seed = 0;
  double keep_scale = 1;
};

// The backward's extra tensors. dq/dk/dv use the Rows addressing of q/k/v.
struct BwdParams : Params {
  Rows dout, dq, dk, dv;
  // Row statistics of the softmax, written by the row kernel and read by the key and dbias kernels:
  // [3, rows] in the accumulate type (max, 1 / sum, delta).
  void* stats = nullptr;
  // Longest key sequence: the key kernel's tile count.
  int64_t max_seq_k = 0;
  // dbias (additive masks only): contiguous in the mask's own shape, left-padded to 4 dims.
  void* dbias = nullptr;
  int64_t dbias_size[4] = {1, 1, 1, 1};
  int64_t dbias_numel = 0;
};

}  // namespace attn::math
