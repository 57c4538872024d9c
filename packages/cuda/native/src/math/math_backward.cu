// cuda-math backward, cpu-math's formulas (packages/cpu/src/math/backward.ts) in three kernels, no
// atomics (every gradient is summed in one fixed order, so the backward is deterministic):
//   rows:  one block per query row. Recomputes the row's max, sum and
//          delta = sum_j P_ij Z_ij (dO_i . v_j) from scratch (the saved float32 logsumexp would cost
//          float64 its precision), then dq_i = scale * sum_j dS_ij (1 - tanh^2) k_j over every key of
//          [lo, hi); saves (max, 1 / sum, delta) per row.
//   keys:  one block per (sequence, kv head, tile of keys). Walks every query head of the group and
//          every row that sees the tile, in cpu-math's order, and sums dv_j += P Z dO_i and
//          dk_j += scale dS (1 - tanh^2) q_i in shared memory, skipping zero weights as cpu-math does.
//   dbias: one warp per element of the mask's gradient, summing dS over the dims the mask was
//          broadcast along (b, h, i, j order, as cpu-math); q and dO rows are read from global memory.
#include "attn/cuda_check.h"
#include "errors.h"
#include "math_device.cuh"
#include "math_kernels.h"

namespace attn::math {
namespace {

// One row's softmax statistics in the accumulate type.
template <typename Acc>
struct Stats {
  Acc max, inv, delta;
};

template <typename Acc>
__device__ __forceinline__ Stats<Acc> stats_at(const BwdParams& p, int64_t r) {
  const Acc* s = static_cast<const Acc*>(p.stats);
  return {s[r], s[p.rows + r], s[2 * p.rows + r]};
}

// dS (times the softcap derivative and the scale: the gradient of q.k) and P * Z of key j.
template <typename Acc>
struct KeyGrad {
  Acc dx, pz, ds;
};

template <typename Acc>
__device__ __forceinline__ KeyGrad<Acc> key_grad(const BwdParams& p, Acc s, Acc t, Acc dp, Acc z,
                                                 const Stats<Acc>& st) {
  const Acc prob = exp_of(s - st.max) * st.inv;
  // delta is sum_j P_j (Z_j dP_j) over the same rounded products (rows_kernel), so where P sits on one key
  // dS is exactly 0, as in cpu-math. A fused Z * dP - delta would leave that product's rounding error,
  // times scale * k in the gradients: 1e23 at scale 1e39.
  const Acc ds = prob * (mul_rn(z, dp) - st.delta);
  const Acc dx = ds * (Acc(1) - t * t) * static_cast<Acc>(p.scale);
  return {dx, prob * z, ds};
}

template <typename T, typename Acc>
__global__ void __launch_bounds__(kThreads) rows_kernel(const BwdParams p) {
  extern __shared__ __align__(16) unsigned char smem[];
  Acc* q_s = reinterpret_cast<Acc*>(smem);  // [D]
  Acc* g_s = q_s + p.head_dim;              // [Dv] dO row
  Acc* s_s = g_s + p.head_dim_v;            // [kKeyTile] scores, then exp(s - max), then dX
  Acc* t_s = s_s + kKeyTile;                // [kKeyTile] tanh (softcap)
  Acc* x_s = t_s + kKeyTile;                // [kKeyTile] exp(s - max) Z dP
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int D = p.head_dim, Dv = p.head_dim_v;
  Acc* stats = static_cast<Acc*>(p.stats);

  for (int64_t r = block_start(); r < p.rows; r += block_stride()) {
    const RowPos w = row_of(p, r);
    const Visible vis = visible_of(p, w.i, w.sq, w.sk);
    const int64_t hk = w.h / p.group;
    __syncthreads();
    const T* q_row = at<T>(p.q, w.b, w.h, w.q_row);
    const T* g_row = at<T>(p.dout, w.b, w.h, w.q_row);
    for (int c = tid; c < D; c += kThreads) q_s[c] = Io<T>::template load<Acc>(q_row + c * p.q.sc);
    for (int c = tid; c < Dv; c += kThreads) g_s[c] = Io<T>::template load<Acc>(g_row + c * p.dout.sc);
    __syncthreads();

    const Acc m = row_max<T, Acc>(p, w, vis, q_s, s_s);
    Acc dq[kPerThread];
#pragma unroll
    for (int x = 0; x < kPerThread; ++x) dq[x] = 0;
    Stats<Acc> st{m, Acc(0), Acc(0)};
    // A fully masked row (max -inf) has zero gradients.
    if (m != neg_inf<Acc>()) {
      // Sum and delta (unnormalized) in one pass.
      Acc l = 0, dsum = 0;
      for (int64_t j0 = vis.lo; j0 < vis.hi; j0 += kKeyTile) {
        const int n = static_cast<int>(min(int64_t{kKeyTile}, vis.hi - j0));
        tile_scores<T, Acc>(p, w, vis, j0, n, q_s, s_s, nullptr);
        for (int kk = warp; kk < n; kk += kThreads / 32) {
          const int64_t j = j0 + kk;
          const Acc dp = warp_dot<T, Acc>(g_s, at<T>(p.v, w.b, hk, w.k_row0 + j), p.v.sc, Dv, lane);
          if (lane == 0) {
            const Acc e = exp_of(s_s[kk] - m);
            s_s[kk] = e;
            x_s[kk] = e * mul_rn(keep_factor<Acc>(p, w.b, w.h, w.i, j), dp);
          }
        }
        __syncthreads();
        for (int kk = 0; kk < n; ++kk) {
          l += s_s[kk];
          dsum += x_s[kk];
        }
        __syncthreads();
      }
      st.inv = Acc(1) / l;
      st.delta = dsum * st.inv;
      // dX per key, then dq += dX_j k_j over every key of [lo, hi).
      for (int64_t j0 = vis.lo; j0 < vis.hi; j0 += kKeyTile) {
        const int n = static_cast<int>(min(int64_t{kKeyTile}, vis.hi - j0));
        tile_scores<T, Acc>(p, w, vis, j0, n, q_s, s_s, t_s);
        for (int kk = warp; kk < n; kk += kThreads / 32) {
          const int64_t j = j0 + kk;
          const Acc dp = warp_dot<T, Acc>(g_s, at<T>(p.v, w.b, hk, w.k_row0 + j), p.v.sc, Dv, lane);
          if (lane == 0) {
            const Acc t = p.softcap > 0 ? t_s[kk] : Acc(0);
            s_s[kk] = key_grad(p, s_s[kk], t, dp, keep_factor<Acc>(p, w.b, w.h, w.i, j), st).dx;
          }
        }
        __syncthreads();
        const T* k0 = at<T>(p.k, w.b, hk, w.k_row0 + j0);
#pragma unroll
        for (int x = 0; x < kPerThread; ++x) {
          const int c = tid + x * kThreads;
          if (c < D) {
            Acc a = dq[x];
            for (int kk = 0; kk < n; ++kk) a += s_s[kk] * Io<T>::template load<Acc>(k0 + kk * p.k.sr + c * p.k.sc);
            dq[x] = a;
          }
        }
        __syncthreads();
      }
    }
    T* dq_row = at_mut<T>(p.dq, w.b, w.h, w.q_row);
#pragma unroll
    for (int x = 0; x < kPerThread; ++x) {
      const int c = tid + x * kThreads;
      if (c < D) Io<T>::store(dq_row + c * p.dq.sc, dq[x]);
    }
    if (tid == 0) {
      stats[r] = st.max;
      stats[p.rows + r] = st.inv;
      stats[2 * p.rows + r] = st.delta;
    }
  }
}

template <typename T, typename Acc>
__global__ void __launch_bounds__(kThreads) keys_kernel(const BwdParams p, int key_tile) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int D = p.head_dim, Dv = p.head_dim_v;
  Acc* dk_s = reinterpret_cast<Acc*>(smem);  // [key_tile, D]
  Acc* dv_s = dk_s + key_tile * D;           // [key_tile, Dv]
  Acc* q_s = dv_s + key_tile * Dv;           // [D]
  Acc* g_s = q_s + D;                        // [Dv]
  Acc* dx_s = g_s + Dv;                      // [key_tile]
  Acc* pz_s = dx_s + key_tile;               // [key_tile]
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t tiles = (p.max_seq_k + key_tile - 1) / key_tile;
  const int64_t blocks = p.batch * p.heads_kv * tiles;

  for (int64_t blk = block_start(); blk < blocks; blk += block_stride()) {
    const int64_t tile = blk % tiles;
    const int64_t hk = (blk / tiles) % p.heads_kv;
    const int64_t b = blk / tiles / p.heads_kv;
    const SeqPos seq = seq_of(p, b);
    // Keys this sequence stores (dk / dv rows to write) and keys it uses (seqused_k: the rest get 0).
    const int64_t stored = p.cu_k != nullptr ? p.cu_k[b + 1] - seq.k0 : p.seq_k;
    const int64_t j0 = tile * key_tile;
    if (j0 >= stored) continue;  // uniform per block: no barrier is skipped by part of it
    const int nk_store = static_cast<int>(min(int64_t{key_tile}, stored - j0));
    const int nk = static_cast<int>(max(int64_t{0}, min(int64_t{key_tile}, seq.sk - j0)));
    __syncthreads();
    for (int idx = tid; idx < key_tile * D; idx += kThreads) dk_s[idx] = 0;
    for (int idx = tid; idx < key_tile * Dv; idx += kThreads) dv_s[idx] = 0;

    if (nk > 0) {
      int64_t first = 0, last = 0;
      rows_seeing(p, j0, j0 + nk, seq.sq, seq.sk, first, last);
      for (int64_t h = hk * p.group; h < (hk + 1) * p.group; ++h) {
        for (int64_t i = first; i < last; ++i) {
          const int64_t r = row_index(p, b, h, i, seq);
          const Stats<Acc> st = stats_at<Acc>(p, r);
          if (st.max == neg_inf<Acc>()) continue;  // fully masked row: no gradient (uniform per block)
          const Visible vis = visible_of(p, i, seq.sq, seq.sk);
          const int64_t q_row = seq.q0 + i;
          __syncthreads();  // the previous row's q_s, g_s, dx_s, pz_s are consumed
          const T* q_row_p = at<T>(p.q, b, h, q_row);
          const T* g_row_p = at<T>(p.dout, b, h, q_row);
          for (int c = tid; c < D; c += kThreads) q_s[c] = Io<T>::template load<Acc>(q_row_p + c * p.q.sc);
          for (int c = tid; c < Dv; c += kThreads) g_s[c] = Io<T>::template load<Acc>(g_row_p + c * p.dout.sc);
          __syncthreads();
          for (int kk = warp; kk < nk; kk += kThreads / 32) {
            const int64_t j = j0 + kk;
            if (j < vis.lo || j >= vis.hi) {
              if (lane == 0) dx_s[kk] = pz_s[kk] = 0;  // not a key of this row: cpu-math never visits it
              continue;
            }
            const Acc dot = warp_dot<T, Acc>(q_s, at<T>(p.k, b, hk, seq.k0 + j), p.k.sc, D, lane);
            const Acc dp = warp_dot<T, Acc>(g_s, at<T>(p.v, b, hk, seq.k0 + j), p.v.sc, Dv, lane);
            if (lane == 0) {
              Acc t = 0;
              const Acc s = score_of(p, dot, b, h, i, j, vis.diag, &t);
              const KeyGrad<Acc> g = key_grad(p, s, t, dp, keep_factor<Acc>(p, b, h, i, j), st);
              dx_s[kk] = g.dx;
              pz_s[kk] = g.pz;
            }
          }
          __syncthreads();
          // Each (key, column) has one owner thread across rows: no races, a fixed order.
          for (int idx = tid; idx < nk * D; idx += kThreads) {
            const Acc dx = dx_s[idx / D];
            if (dx != Acc(0)) dk_s[idx] += dx * q_s[idx % D];
          }
          for (int idx = tid; idx < nk * Dv; idx += kThreads) {
            const Acc pz = pz_s[idx / Dv];
            if (pz != Acc(0)) dv_s[idx] += pz * g_s[idx % Dv];
          }
        }
      }
    }
    __syncthreads();
    for (int idx = tid; idx < nk_store * D; idx += kThreads) {
      const int kk = idx / D, c = idx % D;
      Io<T>::store(at_mut<T>(p.dk, b, hk, seq.k0 + j0 + kk) + c * p.dk.sc, dk_s[idx]);
    }
    for (int idx = tid; idx < nk_store * Dv; idx += kThreads) {
      const int kk = idx / Dv, c = idx % Dv;
      Io<T>::store(at_mut<T>(p.dv, b, hk, seq.k0 + j0 + kk) + c * p.dv.sc, dv_s[idx]);
    }
  }
}

// Dense calls only (varlen takes no mask). The gradient element (b', h', i', j') of a mask that was
// broadcast along some of [B, Hq, Sq, Sk] sums dS over those dims.
template <typename T, typename Acc>
__global__ void __launch_bounds__(kThreads) dbias_kernel(const BwdParams p) {
  const int D = p.head_dim, Dv = p.head_dim_v;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  constexpr int kWarps = kThreads / 32;
  const int64_t full[4] = {p.batch, p.heads_q, p.seq_q, p.seq_k};
  const int64_t warps = block_stride() * kWarps;

  for (int64_t e = block_start() * kWarps + warp; e < p.dbias_numel; e += warps) {
    int64_t lo[4], hi[4];
    int64_t rest = e;
    for (int d = 3; d >= 0; --d) {
      const int64_t size = p.dbias_size[d];
      const int64_t x = rest % size;
      rest /= size;
      const bool summed = size == 1 && full[d] != 1;
      lo[d] = summed ? 0 : x;
      hi[d] = summed ? full[d] : x + 1;
    }
    Acc acc = 0;
    for (int64_t b = lo[0]; b < hi[0]; ++b) {
      const SeqPos seq = seq_of(p, b);
      for (int64_t h = lo[1]; h < hi[1]; ++h) {
        const int64_t hk = h / p.group;
        for (int64_t i = lo[2]; i < hi[2]; ++i) {
          const Stats<Acc> st = stats_at<Acc>(p, row_index(p, b, h, i, seq));
          if (st.max == neg_inf<Acc>()) continue;
          const Visible vis = visible_of(p, i, seq.sq, seq.sk);
          const int64_t j_lo = max(lo[3], vis.lo), j_hi = min(hi[3], vis.hi);
          const T* q_row = at<T>(p.q, b, h, i);
          const T* g_row = at<T>(p.dout, b, h, i);
          for (int64_t j = j_lo; j < j_hi; ++j) {
            const Acc dot = warp_dot_rows<T, Acc>(q_row, p.q.sc, at<T>(p.k, b, hk, j), p.k.sc, D, lane);
            const Acc dp = warp_dot_rows<T, Acc>(g_row, p.dout.sc, at<T>(p.v, b, hk, j), p.v.sc, Dv, lane);
            Acc t = 0;
            const Acc s = score_of(p, dot, b, h, i, j, vis.diag, &t);
            acc += key_grad(p, s, t, dp, keep_factor<Acc>(p, b, h, i, j), st).ds;
          }
        }
      }
    }
    if (lane == 0) store_any(p.dbias, e, p.mask_dtype, acc);
  }
}

unsigned grid_for(int64_t work) { return static_cast<unsigned>(work < 1 ? 1 : work < kMaxBlocks ? work : kMaxBlocks); }

size_t key_smem_bytes(int key_tile, int head_dim, int head_dim_v, size_t acc_bytes) {
  return (static_cast<size_t>(key_tile) * (head_dim + head_dim_v + 2) + head_dim + head_dim_v) * acc_bytes;
}

template <typename T, typename Acc>
std::vector<std::string> launch(const BwdParams& p, gpuStream_t stream, const std::string& suffix) {
  std::vector<std::string> ran;
  const int D = p.head_dim, Dv = p.head_dim_v;
  if (p.rows > 0) {
    const size_t smem = (static_cast<size_t>(D) + Dv + 3 * kKeyTile) * sizeof(Acc);
    rows_kernel<T, Acc><<<grid_for(p.rows), kThreads, smem, stream>>>(p);
    ATTN_LAUNCH_CHECK("cuda-math rows_kernel");
    ran.push_back("backward_rows_" + suffix);
  }
  const int tile = key_tile(D, Dv, sizeof(Acc) == 8);
  const int64_t tiles = (p.max_seq_k + tile - 1) / tile;
  const int64_t blocks = p.batch * p.heads_kv * tiles;
  if (blocks > 0) {
    keys_kernel<T, Acc><<<grid_for(blocks), kThreads, key_smem_bytes(tile, D, Dv, sizeof(Acc)), stream>>>(p, tile);
    ATTN_LAUNCH_CHECK("cuda-math keys_kernel");
    ran.push_back("backward_keys_" + suffix);
  }
  if (p.dbias != nullptr && p.dbias_numel > 0) {
    constexpr int kWarps = kThreads / 32;
    dbias_kernel<T, Acc><<<grid_for((p.dbias_numel + kWarps - 1) / kWarps), kThreads, 0, stream>>>(p);
    ATTN_LAUNCH_CHECK("cuda-math dbias_kernel");
    ran.push_back("backward_dbias_" + suffix);
  }
  return ran;
}

}  // namespace

int key_tile(int head_dim, int head_dim_v, bool acc64) {
  const size_t acc_bytes = acc64 ? 8 : 4;
  int tile = kMaxKeyTile;
  while (tile > 1 && key_smem_bytes(tile, head_dim, head_dim_v, acc_bytes) > static_cast<size_t>(kKeyKernelSmemBytes))
    tile /= 2;
  return tile;
}

std::vector<std::string> run_backward(const BwdParams& p, DType dtype, bool acc64, gpuStream_t stream) {
  switch (dtype) {
    case DType::kFloat64:
      return launch<double, double>(p, stream, "f64_acc64");
    case DType::kFloat32:
      return acc64 ? launch<float, double>(p, stream, "f32_acc64") : launch<float, float>(p, stream, "f32_acc32");
    case DType::kFloat16:
      return acc64 ? launch<__half, double>(p, stream, "f16_acc64") : launch<__half, float>(p, stream, "f16_acc32");
    case DType::kBFloat16:
      return acc64 ? launch<__nv_bfloat16, double>(p, stream, "bf16_acc64")
                   : launch<__nv_bfloat16, float>(p, stream, "bf16_acc32");
    default:
      throw InvalidArgument("cuda-math: the backward takes float64, float32, float16 or bfloat16", "ATTN_BAD_ARGUMENT");
  }
}

std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (const char* kind : {"forward", "backward_rows", "backward_keys", "backward_dbias"}) {
    for (const char* v :
         {"f64_acc64", "f32_acc32", "f32_acc64", "f16_acc32", "f16_acc64", "bf16_acc32", "bf16_acc64"}) {
      names.push_back(std::string(kind) + "_" + v);
    }
  }
  return names;
}

}  // namespace attn::math
