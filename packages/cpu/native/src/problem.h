// One attention call as the kernels see it: plain structs, filled and checked by args.cpp.
// Logical layout [B, H, S, D]; every view carries element strides (any non-negative layout works).
#pragma once
#include <cstdint>

namespace attn_cpu {

// Numbering as packages/cuda/native/include/attn/tensor_ref.h.
enum class DType : int32_t { kFloat64 = 0, kFloat32 = 1, kFloat16 = 2, kBFloat16 = 3, kBool = 4 };

inline int dtype_bytes(DType d) {
  switch (d) {
    case DType::kFloat64:
      return 8;
    case DType::kFloat32:
      return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kBool:
      return 1;
  }
  return 0;
}

// Element (a, b, c, d) lives at data + (a*strides[0] + b*strides[1] + c*strides[2] + d*strides[3])
// elements. `data` already includes the tensor's offset.
struct View4 {
  void* data = nullptr;
  DType dtype = DType::kFloat32;
  int64_t strides[4] = {0, 0, 0, 0};
};

struct Dims {
  int64_t B = 0, Hq = 0, Hk = 0, Sq = 0, Sk = 0, D = 0, Dv = 0;
};

// Everything that turns a dot product q.k into a logit, in this order (as core's SdpaParams):
// logit = softcap(scale * q.k) - slope * |i + align_offset - j| + mask, then keys outside the
// causal/window range of row i become -inf. Dropout acts on the normalized probabilities.
struct ScoreMods {
  float scale = 1.f;
  float softcap = 0.f;  // 0 = off
  bool causal = false;
  bool lower_right = false;  // alignment: diagonal at i + Sk - Sq (else i)
  int64_t align_offset = 0;  // query i's diagonal is key i + align_offset
  int64_t window_left = -1;  // -1 = unbounded
  int64_t window_right = -1;
  bool has_mask = false;
  bool mask_is_bool = false;     // true: attend where nonzero; false: additive
  View4 mask;                    // strides of the mask expanded to [B, Hq, Sq, Sk]
  const float* alibi = nullptr;  // slope of (b, h) at alibi[b*alibi_sb + h*alibi_sh]
  int64_t alibi_sb = 0, alibi_sh = 0;
  bool has_dropout = false;
  uint32_t drop_b0 = 0;  // added to b in the Philox counter (varlen: the sequence)
  uint64_t seed = 0;
  uint32_t rng_offset = 0;
  uint32_t threshold = 0;  // drop when the Philox word is below it
  float keep_scale = 1.f;  // 1 / (1 - p)
};

enum class Isa : int32_t {
  kAuto = -1,
  kPortable = 0,
  kAvx2 = 1,
  kAvx512 = 2,
  kAvx512Bf16 = 3,
  kAmx = 4,
  kNeon = 5,
  kSve256 = 6
};

// Packed variable-length batches (FlashAttention's varlen): sequence b has queries
// cu_q[b] .. cu_q[b+1]-1 and keys cu_k[b] .. cu_k[b+1]-1 of [total, H, D] tensors, given as views
// with strides [0, head, token, dim]; Dims.Sq / Sk are the longest lengths. The kernels run each
// sequence as a dense problem (sequence_problem in varlen.cpp).
struct Varlen {
  const int32_t* cu_q = nullptr;  // B + 1 offsets; null = dense
  const int32_t* cu_k = nullptr;
};

// Keys used per batch row (FlashAttention's seqused_k): row b of a dense call, or sequence b of a
// varlen call, sees only its first used_k[b] keys (0 <= used_k[b] <= its key count). The kernels
// never see it: varlen.cpp runs such rows as problems of their own with Sk = used_k[b], and writes
// the gradients of the unused keys as 0.
struct SequsedK {
  const int32_t* used_k = nullptr;  // B counts; null = every row uses all its keys
};

// Paged K/V (FlashAttention's block_table), forward only: k and v are block pools
// [numBlocks, blockSize, H, D] given as views [numBlocks, H, blockSize, D] (strides [block, head,
// row in block, dim]), and key j of batch row b sits at position pos = j + key_start[b] (key_start
// null: pos = j) of its blocks: row pos % block_size of block table[b * table_stride + pos / block_size].
// Varlen calls (sdpaVarlen's blockTable) and dense ones (sdpaKvCache, whose contiguous cache is a
// pool of Bc blocks of Sc keys with one table entry per row, and whose leftpadK is key_start) are
// paged alike; varlen.cpp moves `table` and `key_start` to each part's first row. args.cpp checked
// that every entry a row reads lies in the pool.
struct PagedKv {
  const int32_t* table = nullptr;  // null: k and v are plain [B, H, S, D] views
  int64_t table_stride = 0;        // entries per batch row (maxBlocksPerSeq)
  int64_t block_size = 0;
  const int32_t* key_start = nullptr;  // B first positions, or null (0)
};

// Element (b, h, j, 0) of a K or V view: row j of head h of batch row b, paged or not.
inline const void* kv_row(const View4& v, const PagedKv& pg, int64_t b, int64_t h, int64_t j) {
  int64_t at;
  if (pg.table) {
    const int64_t pos = j + (pg.key_start ? pg.key_start[b] : 0);
    const int64_t blk = pg.table[b * pg.table_stride + pos / pg.block_size];
    at = blk * v.strides[0] + h * v.strides[1] + (pos % pg.block_size) * v.strides[2];
  } else {
    at = b * v.strides[0] + h * v.strides[1] + j * v.strides[2];
  }
  return static_cast<const char*>(v.data) + at * dtype_bytes(v.dtype);
}

struct FwdProblem {
  Dims dims;
  DType dtype = DType::kFloat32;  // of q, k, v and out
  View4 q, k, v, out;
  float* lse = nullptr;            // element (b, h, i) at lse[b * lse_sb + h * lse_sh + i]
  int64_t lse_sb = 0, lse_sh = 0;  // dense: [B, Hq, Sq] contiguous; varlen: [Hq, totalQ]
  ScoreMods mods;
  Varlen varlen;
  SequsedK seqused;
  PagedKv paged;
  int threads = 1;
};

struct BwdProblem {
  Dims dims;
  DType dtype = DType::kFloat32;  // of q, k, v, out, dout, dq, dk, dv
  View4 q, k, v, out, dout, dq, dk, dv;
  const float* lse = nullptr;  // from the forward, indexed as FwdProblem::lse
  int64_t lse_sb = 0, lse_sh = 0;
  ScoreMods mods;
  Varlen varlen;
  SequsedK seqused;
  float* dbias = nullptr;                // contiguous fp32 [db, dh, di, dj], or null (no additive mask)
  int64_t dbias_dims[4] = {1, 1, 1, 1};  // each 1 (reduced) or the full size of that dim
  int threads = 1;
};

}  // namespace attn_cpu
