// sdpaKvCache's append and rotary kernel, one implementation for every CUDA backend (cuda-math and
// flash-cuda compile it into their addons): kNew / vNew written into the cache at positions
// cacheSeqlens[b] + i (kNew rotated as it is written), q rotated into a scratch buffer, and, for
// contiguous caches, the cache row of each batch row into a one-column block table, so that the
// attention that follows reads every cache through one paged path.
//
// Semantics are core's KvCacheParams (and cpu-math's, packages/cpu/src/kv-cache/host.ts); the rotation of
// each pair is attn/rotary.cuh's, which flash-cuda's forward also computes with where it appends itself.
//
// Replay rule (as flash-cuda's seq_extents.h): cacheSeqlens, cacheBatchIdx and the block table are
// read on the device, and a captured graph replays with whatever they hold then. Every value read is
// clamped into what it addresses: cache rows and blocks into the pools, rotary positions into the
// tables; an append position at or past the row's capacity is not written. Values that would fail
// validation give unspecified numbers, never an access outside the tensors.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "attn/kv_append_abi.h"
#include "attn/rotary.cuh"
#include "attn/tensor_ref.h"

namespace attn::kv {

struct Params {
  DType dtype;
  int64_t batch, seq_q, heads_q, heads_kv, head_dim, head_dim_v, new_len;
  // The caches as pools [num_blocks, block_size, Hk, C]: a contiguous cache [Bc, Sc, Hk, C] is Bc blocks of Sc.
  int64_t num_blocks, block_size;
  const int32_t* block_table;  // paged: [batch, max_blocks]; null for contiguous caches
  int64_t max_blocks;
  const int32_t* cache_batch_idx;  // contiguous: the cache row of batch row b, or null (row b)
  const int32_t* cache_seqlens;    // keys in each row before the append, or null (every row full: capacity)
  int64_t capacity;                // key positions a row holds
  const void* q;                   // [B, Sq, Hq, D], any strides
  void* q_out;                     // contiguous [B, Sq, Hq, D] in the dtype: q rotated (or copied); null: not written
  const void *k_new, *v_new;       // [B, new_len, Hk, D | Dv], any strides
  void *k_cache, *v_cache;
  const void *cos, *sin;  // [rot_rows, rot_half] each, or null: no rotary
  int64_t rot_rows, rot_half;
  bool interleaved, q_per_row;
  int32_t* row_table;  // contiguous caches: [batch] cache rows out (a one-column block table), or null
  int64_t q_s[4], kn_s[4], vn_s[4], kc_s[4], vc_s[4], cos_s[2], sin_s[2];
};

__device__ __forceinline__ int64_t clamp64(int64_t x, int64_t lo, int64_t hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

// Keys in row b before the append (cacheSeqlens[b], or the capacity), clamped to [0, capacity].
__device__ __forceinline__ int64_t seqlen_of(const Params& p, int64_t b) {
  return p.cache_seqlens != nullptr ? clamp64(p.cache_seqlens[b], 0, p.capacity) : p.capacity;
}

// One row of `n` columns from src (stride ss) to dst (stride ds), columns [0, 2 * rot_half) rotated at
// table row pos (clamped into the tables) when rotate is set. Lanes of one warp over the columns.
template <typename T>
__device__ __forceinline__ void copy_row(const Params& p, const T* src, int64_t ss, T* dst, int64_t ds, int64_t n,
                                         bool rotate, int64_t pos, int lane) {
  const int64_t half = rotate ? p.rot_half : 0;
  if (half > 0) {
    const int64_t r = clamp64(pos, 0, p.rot_rows - 1);
    const T* cos_row = static_cast<const T*>(p.cos) + r * p.cos_s[0];
    const T* sin_row = static_cast<const T*>(p.sin) + r * p.sin_s[0];
    for (int64_t i = lane; i < half; i += 32) {
      const int64_t a = p.interleaved ? 2 * i : i;
      const int64_t b = p.interleaved ? 2 * i + 1 : i + half;
      const double c = Elem<T>::load(cos_row + i * p.cos_s[1]);
      const double s = Elem<T>::load(sin_row + i * p.sin_s[1]);
      const double x1 = Elem<T>::load(src + a * ss);
      const double x2 = Elem<T>::load(src + b * ss);
      Elem<T>::store(dst + a * ds, rotary_first(x1, x2, c, s));
      Elem<T>::store(dst + b * ds, rotary_second(x1, x2, c, s));
    }
  }
  for (int64_t c = 2 * half + lane; c < n; c += 32) dst[c * ds] = src[c * ss];
}

constexpr int kWarps = 4;

// One warp per row: rows [0, B * new_len * Hk) are appends, then B * Sq * Hq query rows.
template <typename T>
__global__ void __launch_bounds__(kWarps * 32) append_kernel(const Params p) {
  const int lane = threadIdx.x & 31;
  if (blockIdx.x == 0 && p.row_table != nullptr) {
    for (int64_t b = threadIdx.x; b < p.batch; b += blockDim.x) {
      p.row_table[b] =
          static_cast<int32_t>(p.cache_batch_idx != nullptr ? clamp64(p.cache_batch_idx[b], 0, p.num_blocks - 1) : b);
    }
  }
  const int64_t appends = p.batch * p.new_len * p.heads_kv;
  const int64_t rows = appends + (p.q_out != nullptr ? p.batch * p.seq_q * p.heads_q : 0);
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarps;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5); r < rows; r += warps) {
    if (r < appends) {
      const int64_t h = r % p.heads_kv, bi = r / p.heads_kv, i = bi % p.new_len, b = bi / p.new_len;
      const int64_t pos = seqlen_of(p, b) + i;
      if (pos >= p.capacity) continue;  // only a replay with lengths that fail validation gets here
      int64_t block, in_block;
      if (p.block_table != nullptr) {
        block = clamp64(p.block_table[b * p.max_blocks + pos / p.block_size], 0, p.num_blocks - 1);
        in_block = pos % p.block_size;
      } else {
        block = p.cache_batch_idx != nullptr ? clamp64(p.cache_batch_idx[b], 0, p.num_blocks - 1) : b;
        in_block = pos;
      }
      const T* kn = static_cast<const T*>(p.k_new) + b * p.kn_s[0] + i * p.kn_s[1] + h * p.kn_s[2];
      const T* vn = static_cast<const T*>(p.v_new) + b * p.vn_s[0] + i * p.vn_s[1] + h * p.vn_s[2];
      T* kc = static_cast<T*>(p.k_cache) + block * p.kc_s[0] + in_block * p.kc_s[1] + h * p.kc_s[2];
      T* vc = static_cast<T*>(p.v_cache) + block * p.vc_s[0] + in_block * p.vc_s[1] + h * p.vc_s[2];
      copy_row<T>(p, kn, p.kn_s[3], kc, p.kc_s[3], p.head_dim, p.cos != nullptr, pos, lane);
      copy_row<T>(p, vn, p.vn_s[3], vc, p.vc_s[3], p.head_dim_v, false, 0, lane);
    } else {
      const int64_t q = r - appends;
      const int64_t h = q % p.heads_q, bi = q / p.heads_q, i = bi % p.seq_q, b = bi / p.seq_q;
      const int64_t pos = seqlen_of(p, b) + (p.q_per_row ? i : 0);
      const T* src = static_cast<const T*>(p.q) + b * p.q_s[0] + i * p.q_s[1] + h * p.q_s[2];
      T* dst = static_cast<T*>(p.q_out) + q * p.head_dim;
      copy_row<T>(p, src, p.q_s[3], dst, 1, p.head_dim, p.cos != nullptr, pos, lane);
    }
  }
}

// Params from the TS argument arrays. Throws std::invalid_argument naming the field; sizes are checked
// here, pointers and strides were derived by TS from validated tensors.
inline Params params_from_arrays(const uint64_t* ptrs, const double* nums) {
  auto integer = [&](int slot, const char* what, double lo, double hi) -> int64_t {
    const double x = nums[slot];
    if (!(x >= lo && x <= hi) || static_cast<double>(static_cast<int64_t>(x)) != x) {
      throw std::invalid_argument(std::string("kv append: ") + what + " out of range");
    }
    return static_cast<int64_t>(x);
  };
  constexpr double kMax = 9007199254740991.0;
  Params p{};
  p.dtype = static_cast<DType>(integer(kDtype, "dtype", 0, 3));
  p.batch = integer(kBatch, "batch", 0, kMax);
  p.seq_q = integer(kSeqQ, "seqQ", 0, kMax);
  p.heads_q = integer(kHeadsQ, "headsQ", 0, kMax);
  p.heads_kv = integer(kHeadsKV, "headsKV", 1, kMax);
  p.head_dim = integer(kHeadDim, "headDim", 1, kMax);
  p.head_dim_v = integer(kHeadDimV, "headDimV", 0, kMax);
  p.new_len = integer(kNewLen, "newLen", 0, kMax);
  p.num_blocks = integer(kNumBlocks, "numBlocks", 0, kMax);
  p.block_size = integer(kBlockSize, "blockSize", 1, kMax);
  p.max_blocks = integer(kMaxBlocks, "maxBlocks", 0, kMax);
  p.capacity = integer(kCapacity, "capacity", 0, kMax);
  p.rot_rows = integer(kRotRows, "rotary rows", 0, kMax);
  p.rot_half = integer(kRotHalf, "rotary half dim", 0, kMax);
  p.interleaved = nums[kInterleaved] != 0;
  p.q_per_row = nums[kQPerRow] != 0;
  auto strides = [&](int first, int n, int64_t* out) {
    for (int d = 0; d < n; ++d) out[d] = integer(first + d, "stride", -kMax, kMax);
  };
  strides(kQS0, 4, p.q_s);
  strides(kKNewS0, 4, p.kn_s);
  strides(kVNewS0, 4, p.vn_s);
  strides(kKCacheS0, 4, p.kc_s);
  strides(kVCacheS0, 4, p.vc_s);
  strides(kCosS0, 2, p.cos_s);
  strides(kSinS0, 2, p.sin_s);
  auto ptr = [&](int slot) { return reinterpret_cast<void*>(static_cast<uintptr_t>(ptrs[slot])); };
  p.q = ptr(kQ);
  p.q_out = ptr(kQOut);
  p.k_new = ptr(kKNew);
  p.v_new = ptr(kVNew);
  p.k_cache = ptr(kKCache);
  p.v_cache = ptr(kVCache);
  p.cos = ptr(kCos);
  p.sin = ptr(kSin);
  p.cache_seqlens = static_cast<const int32_t*>(ptr(kCacheSeqlens));
  p.cache_batch_idx = static_cast<const int32_t*>(ptr(kCacheBatchIdx));
  p.block_table = static_cast<const int32_t*>(ptr(kBlockTable));
  p.row_table = static_cast<int32_t*>(ptr(kRowTable));
  if (p.new_len > 0 && (!p.k_new || !p.v_new || !p.k_cache || !p.v_cache))
    throw std::invalid_argument("kv append: an append needs kNew, vNew and the caches");
  if (p.new_len > 0 && p.num_blocks == 0) throw std::invalid_argument("kv append: an append into an empty pool");
  if (p.q_out != nullptr && p.seq_q * p.heads_q > 0 && p.q == nullptr)
    throw std::invalid_argument("kv append: q out needs q");
  if ((p.cos == nullptr) != (p.sin == nullptr))
    throw std::invalid_argument("kv append: rotaryCos and rotarySin come together");
  if (p.cos != nullptr && (p.rot_rows < 1 || p.rot_half < 1 || 2 * p.rot_half > p.head_dim)) {
    throw std::invalid_argument("kv append: rotary tables must be [R >= 1, 1 <= half <= D / 2]");
  }
  if (p.block_table != nullptr && p.max_blocks * p.block_size < p.capacity)
    throw std::invalid_argument("kv append: capacity past the block table");
  if (p.block_table == nullptr && p.block_size < p.capacity)
    throw std::invalid_argument("kv append: capacity past the cache rows");
  if (p.block_table == nullptr && p.cache_batch_idx == nullptr && p.new_len > 0 && p.num_blocks < p.batch) {
    throw std::invalid_argument("kv append: fewer cache rows than batch rows");
  }
  return p;
}

template <typename T>
inline void launch_typed(const Params& p, cudaStream_t stream) {
  const int64_t rows = p.batch * p.new_len * p.heads_kv + (p.q_out != nullptr ? p.batch * p.seq_q * p.heads_q : 0);
  const int64_t want = (rows + kWarps - 1) / kWarps;
  const unsigned blocks = static_cast<unsigned>(want < 1 ? 1 : (want > 65535 ? 65535 : want));
  if (rows == 0 && p.row_table == nullptr) return;
  append_kernel<T><<<blocks, kWarps * 32, 0, stream>>>(p);
}

// Queues the kernel on `stream`; the caller checks the launch (each addon names it its own way).
inline void launch(const Params& p, cudaStream_t stream) {
  switch (p.dtype) {
    case DType::kFloat64:
      launch_typed<double>(p, stream);
      break;
    case DType::kFloat32:
      launch_typed<float>(p, stream);
      break;
    case DType::kFloat16:
      launch_typed<__half>(p, stream);
      break;
    case DType::kBFloat16:
      launch_typed<__nv_bfloat16>(p, stream);
      break;
    default:
      throw std::invalid_argument("kv append: dtype must be float64, float32, float16 or bfloat16");
  }
}

}  // namespace attn::kv
