// Device code shared by cuda-math's forward and backward kernels: element loads and stores, where a
// query row lives, which keys it sees, and its scores in the order docs/ARCHITECTURE.md fixes (scale * q.k, then
// softcap, then ALiBi, then the mask; causal and window bound the keys looked at). Forward, backward
// and dbias compute every score through score_of(), so all of them see bit-identical scores.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "attn/philox.h"
#include "math_limits.h"
#include "math_params.h"

namespace attn::math {

// ------------------------------------------------------------------ elements ---------------------
// double and float convert with a cast; the 16-bit types below through their intrinsics.
template <typename T>
struct Io {
  template <typename Acc>
  static __device__ __forceinline__ Acc load(const T* p) {
    return static_cast<Acc>(*p);
  }
  template <typename Acc>
  static __device__ __forceinline__ void store(T* p, Acc x) {
    *p = static_cast<T>(x);
  }
};
template <>
struct Io<__half> {
  template <typename Acc>
  static __device__ __forceinline__ Acc load(const __half* p) {
    return static_cast<Acc>(__half2float(*p));
  }
  // Rounded once, to nearest even, from the accumulate type.
  static __device__ __forceinline__ void store(__half* p, float x) { *p = __float2half_rn(x); }
  static __device__ __forceinline__ void store(__half* p, double x) { *p = __double2half(x); }
};
template <>
struct Io<__nv_bfloat16> {
  template <typename Acc>
  static __device__ __forceinline__ Acc load(const __nv_bfloat16* p) {
    return static_cast<Acc>(__bfloat162float(*p));
  }
  static __device__ __forceinline__ void store(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }
  static __device__ __forceinline__ void store(__nv_bfloat16* p, double x) { *p = __double2bfloat16(x); }
};

// A mask value of any mask dtype (bool reads as 0 / 1).
template <typename Acc>
__device__ __forceinline__ Acc load_any(const void* base, int64_t index, DType dtype) {
  switch (dtype) {
    case DType::kFloat64:
      return Io<double>::template load<Acc>(static_cast<const double*>(base) + index);
    case DType::kFloat32:
      return Io<float>::template load<Acc>(static_cast<const float*>(base) + index);
    case DType::kFloat16:
      return Io<__half>::template load<Acc>(static_cast<const __half*>(base) + index);
    case DType::kBFloat16:
      return Io<__nv_bfloat16>::template load<Acc>(static_cast<const __nv_bfloat16*>(base) + index);
    default:
      return static_cast<const uint8_t*>(base)[index] != 0 ? Acc(1) : Acc(0);
  }
}

template <typename Acc>
__device__ __forceinline__ void store_any(void* base, int64_t index, DType dtype, Acc x) {
  switch (dtype) {
    case DType::kFloat64:
      Io<double>::store(static_cast<double*>(base) + index, x);
      break;
    case DType::kFloat32:
      Io<float>::store(static_cast<float*>(base) + index, x);
      break;
    case DType::kFloat16:
      Io<__half>::store(static_cast<__half*>(base) + index, x);
      break;
    case DType::kBFloat16:
      Io<__nv_bfloat16>::store(static_cast<__nv_bfloat16*>(base) + index, x);
      break;
    default:
      break;  // a dbias is never bool: bind_math.cpp refuses it
  }
}

template <typename T>
__device__ __forceinline__ const T* at(const Rows& t, int64_t b, int64_t h, int64_t r) {
  return static_cast<const T*>(t.data) + b * t.sb + h * t.sh + r * t.sr;
}
template <typename T>
__device__ __forceinline__ T* at_mut(const Rows& t, int64_t b, int64_t h, int64_t r) {
  return const_cast<T*>(at<T>(t, b, h, r));
}

// Key j of sequence b, head h of k or v (t): row k_row0 + j of a packed or dense tensor, or through the
// block table for paged K/V (page indices clamped into the pool: bind_math.cpp checked them, the clamp
// keeps any other value inside the buffer too).
template <typename T>
__device__ __forceinline__ const T* key_row(const Params& p, const Rows& t, int64_t b, int64_t h, int64_t k_row0,
                                            int64_t j) {
  if (p.block_table == nullptr) return at<T>(t, b, h, k_row0 + j);
  if (p.key_start != nullptr) j += p.key_start[b];
  int64_t page = p.block_table[b * p.max_blocks + j / p.block_size];
  page = page < 0 ? 0 : (page >= p.num_blocks ? p.num_blocks - 1 : page);
  return static_cast<const T*>(t.data) + page * t.sb + h * t.sh + (j % p.block_size) * t.sr;
}

// ------------------------------------------------------------------ arithmetic -------------------
template <typename Acc>
__device__ __forceinline__ Acc neg_inf() {
  return -static_cast<Acc>(INFINITY);
}

// Math.max's semantics: NaN when either is NaN (so a NaN score makes the whole row NaN, as cpu-math).
template <typename Acc>
__device__ __forceinline__ Acc nan_max(Acc a, Acc b) {
  if (a != a || b != b) return a + b;
  return a > b ? a : b;
}

__device__ __forceinline__ float exp_of(float x) { return expf(x); }
__device__ __forceinline__ double exp_of(double x) { return exp(x); }
__device__ __forceinline__ float log_of(float x) { return logf(x); }
__device__ __forceinline__ double log_of(double x) { return log(x); }
__device__ __forceinline__ float tanh_of(float x) { return tanhf(x); }
__device__ __forceinline__ double tanh_of(double x) { return tanh(x); }
// A product rounded on its own, which nvcc never fuses into a neighbouring add (--fmad contracts a * b - c
// into one fma, whose result differs from the separately rounded a * b - c by up to an ulp of a * b).
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }

// Sum over the warp; every lane gets the same value (a fixed butterfly: deterministic).
template <typename Acc>
__device__ __forceinline__ Acc warp_sum(Acc a) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) a += __shfl_xor_sync(0xffffffffu, a, offset);
  return a;
}

// x (n values in shared memory, already in Acc) . row (n elements of T, `stride` apart), over the
// lanes of one warp; every lane gets the result.
template <typename T, typename Acc>
__device__ __forceinline__ Acc warp_dot(const Acc* x, const T* row, int64_t stride, int n, int lane) {
  Acc a = 0;
  for (int c = lane; c < n; c += 32) a += x[c] * Io<T>::template load<Acc>(row + c * stride);
  return warp_sum(a);
}

// x . y for two rows in global memory, over the lanes of one warp; every lane gets the result.
template <typename T, typename Acc>
__device__ __forceinline__ Acc warp_dot_rows(const T* x, int64_t x_stride, const T* y, int64_t y_stride, int n,
                                             int lane) {
  Acc a = 0;
  for (int c = lane; c < n; c += 32)
    a += Io<T>::template load<Acc>(x + c * x_stride) * Io<T>::template load<Acc>(y + c * y_stride);
  return warp_sum(a);
}

// ------------------------------------------------------------------ rows and keys ----------------
// One query row: sequence b, head h, position i; its sequence's lengths, and where its query row and
// its sequence's first key sit in the (possibly packed) tensors.
struct RowPos {
  int64_t b, h, i;
  int64_t sq, sk;
  int64_t q_row;   // row index into q / out / dout / dq
  int64_t k_row0;  // row index of key 0 into k / v / dk / dv
};

// Sequence b's query and key lengths and starts (varlen: from the offsets; seqused_k bounds the keys).
struct SeqPos {
  int64_t sq, sk, q0, k0;
};

__device__ __forceinline__ SeqPos seq_of(const Params& p, int64_t b) {
  SeqPos s;
  if (p.cu_q != nullptr) {
    s.q0 = p.cu_q[b];
    s.k0 = p.cu_k[b];
    s.sq = p.cu_q[b + 1] - s.q0;
    s.sk = p.cu_k[b + 1] - s.k0;
  } else {
    s.q0 = 0;
    s.k0 = 0;
    s.sq = p.seq_q;
    s.sk = p.seq_k;
  }
  if (p.seqused_k != nullptr) s.sk = p.seqused_k[b];
  return s;
}

// The flat row index of (b, h, i): the logsumexp's and the statistics' layout.
__device__ __forceinline__ int64_t row_index(const Params& p, int64_t b, int64_t h, int64_t i, const SeqPos& s) {
  return p.cu_q != nullptr ? h * p.total_q + s.q0 + i : (b * p.heads_q + h) * p.seq_q + i;
}

__device__ __forceinline__ RowPos row_of(const Params& p, int64_t r) {
  RowPos w;
  if (p.cu_q != nullptr) {
    w.h = r / p.total_q;
    const int64_t t = r - w.h * p.total_q;
    // The last sequence that starts at or before t (empty sequences start where the next one does).
    int64_t lo = 0, hi = p.batch;  // cu_q[lo] <= t < cu_q[hi]
    while (hi - lo > 1) {
      const int64_t mid = (lo + hi) / 2;
      if (p.cu_q[mid] <= t)
        lo = mid;
      else
        hi = mid;
    }
    w.b = lo;
    const SeqPos s = seq_of(p, w.b);
    w.i = t - s.q0;
    w.sq = s.sq;
    w.sk = s.sk;
    w.q_row = t;
    w.k_row0 = s.k0;
  } else {
    w.i = r % p.seq_q;
    const int64_t bh = r / p.seq_q;
    w.h = bh % p.heads_q;
    w.b = bh / p.heads_q;
    const SeqPos s = seq_of(p, w.b);
    w.sq = s.sq;
    w.sk = s.sk;
    w.q_row = w.i;
    w.k_row0 = 0;
  }
  return w;
}

// The key on row i's diagonal (causal, window and ALiBi measure from it) and the keys [lo, hi) that
// causal and the window leave to it; lo >= hi when it sees none.
struct Visible {
  int64_t diag, lo, hi;
};

__device__ __forceinline__ Visible visible_of(const Params& p, int64_t i, int64_t sq, int64_t sk) {
  Visible v;
  v.diag = p.lower_right ? i + sk - sq : i;
  v.lo = p.window_left < 0 ? 0 : max(int64_t{0}, v.diag - p.window_left);
  v.hi = p.window_right < 0 ? sk : min(sk, v.diag + p.window_right + 1);
  return v;
}

// The rows [first, last) of a sequence that see some key of [j0, j1) (the inverse of visible_of).
__device__ __forceinline__ void rows_seeing(const Params& p, int64_t j0, int64_t j1, int64_t sq, int64_t sk,
                                            int64_t& first, int64_t& last) {
  const int64_t off = p.lower_right ? sk - sq : 0;
  first = p.window_right < 0 ? 0 : max(int64_t{0}, j0 - p.window_right - off);
  last = p.window_left < 0 ? sq : min(sq, j1 + p.window_left - off);
}

// The score of key j (visible) for row (b, h, i), from the raw dot q.k; also tanh(scale * q.k / softcap)
// when softcap is on (its derivative needs it).
template <typename Acc>
__device__ __forceinline__ Acc score_of(const Params& p, Acc dot, int64_t b, int64_t h, int64_t i, int64_t j,
                                        int64_t diag, Acc* tanh_out) {
  Acc s = dot * static_cast<Acc>(p.scale);
  if (p.softcap > 0) {
    const Acc cap = static_cast<Acc>(p.softcap);
    const Acc t = tanh_of(s / cap);
    *tanh_out = t;
    s = cap * t;
  }
  if (p.alibi != nullptr) {
    const Acc slope = static_cast<Acc>(p.alibi[b * p.alibi_sb + h * p.alibi_sh]);
    const int64_t d = diag - j;
    s = s - slope * static_cast<Acc>(d < 0 ? -d : d);
  }
  if (p.mask_kind != 0) {
    const int64_t index = b * p.mask_stride[0] + h * p.mask_stride[1] + i * p.mask_stride[2] + j * p.mask_stride[3];
    const Acc m = load_any<Acc>(p.mask, index, p.mask_dtype);
    if (p.mask_kind == 1)
      s = s + m;
    else if (m == Acc(0))
      s = neg_inf<Acc>();
  }
  return s;
}

// Dropout's factor for (b, h, i, j): keepScale or 0, through attn/philox.h's one mapping.
template <typename Acc>
__device__ __forceinline__ Acc keep_factor(const Params& p, int64_t b, int64_t h, int64_t i, int64_t j) {
  if (!p.dropout) return Acc(1);
  const uint32_t bh = static_cast<uint32_t>(b * p.heads_q + h);
  const bool keep = dropout_keep(p.dropout_seed, p.dropout_offset, bh, static_cast<uint32_t>(i),
                                 static_cast<uint32_t>(j), p.dropout_threshold);
  return keep ? static_cast<Acc>(p.keep_scale) : Acc(0);
}

// The scores of keys [j0, j0 + n) of one row, one warp per key: s[kk] (and tanh[kk] with softcap) in
// shared memory. Ends with a barrier, so every thread may read them.
template <typename T, typename Acc>
__device__ __forceinline__ void tile_scores(const Params& p, const RowPos& w, const Visible& vis, int64_t j0, int n,
                                            const Acc* q_s, Acc* s, Acc* tanh_s) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t hk = w.h / p.group;
  for (int kk = warp; kk < n; kk += kThreads / 32) {
    const int64_t j = j0 + kk;
    const Acc dot = warp_dot<T, Acc>(q_s, key_row<T>(p, p.k, w.b, hk, w.k_row0, j), p.k.sc, p.head_dim, lane);
    if (lane == 0) {
      Acc t = 0;
      s[kk] = score_of(p, dot, w.b, w.h, w.i, j, vis.diag, &t);
      if (tanh_s != nullptr) tanh_s[kk] = t;
    }
  }
  __syncthreads();
}

// The largest score of the row (NaN if any is NaN; -inf when it sees no key or all are masked).
// s_tile: kKeyTile values of scratch. Every thread returns the same value.
template <typename T, typename Acc>
__device__ __forceinline__ Acc row_max(const Params& p, const RowPos& w, const Visible& vis, const Acc* q_s,
                                       Acc* s_tile) {
  Acc m = neg_inf<Acc>();
  for (int64_t j0 = vis.lo; j0 < vis.hi; j0 += kKeyTile) {
    const int n = static_cast<int>(min(int64_t{kKeyTile}, vis.hi - j0));
    tile_scores<T, Acc>(p, w, vis, j0, n, q_s, s_tile, nullptr);
    for (int kk = 0; kk < n; ++kk) m = nan_max(m, s_tile[kk]);
    __syncthreads();  // s_tile is rewritten by the next tile
  }
  return m;
}

// Grid-stride loops use 64-bit counters: a call may have more rows than a grid has blocks.
__device__ __forceinline__ int64_t block_start() { return static_cast<int64_t>(blockIdx.x); }
__device__ __forceinline__ int64_t block_stride() { return static_cast<int64_t>(gridDim.x); }

}  // namespace attn::math
