// Backward, key-split parallelism (the main kernel of the SIMT path): one block per (key block,
// b, kv head, head-dim tile, query split). It walks the query blocks (of every query head of its GQA
// group, in a fixed order), accumulating dK and dV in registers; dQ goes to an fp32 workspace with
// atomics (unless deterministic: bwd_q_simt then computes it), and an unbroadcast dbias is written
// directly. With query splits, dK/dV partials go to a workspace that bwd_post reduces in order.
#pragma once
#include "bwd/bwd_tile.cuh"
#include "bwd/dkdv_store.cuh"
#include "common/dbias_store.cuh"

namespace memeff {

template <typename T, typename Tr>
__global__ void __launch_bounds__(Tr::kThreads, 2) bwd_kv_simt_kernel(const BwdParams params, int n_z) {
  constexpr int CT = Tr::kTile / 8;
  __shared__ BwdTileSmem sm;
  const int tx = threadIdx.x % 8, ty = threadIdx.x / 8;
  const int j0 = blockIdx.x * 32;
  const int bhk = blockIdx.y + params.bh_base, b = bhk / params.heads_kv, hk = bhk % params.heads_kv;
  BwdParams p = params;
  bind_sequence(p, b, sizeof(T));
  if (j0 >= p.seq_k_rows) return;  // a varlen sequence shorter than the longest
  const int z = blockIdx.z % n_z, split = blockIdx.z / n_z;
  const int c0 = z * Tr::kTile;
  const bool dbias_direct = p.dbias != nullptr && z == 0;
  const bool dq_atomic = !p.deterministic && z == 0;

  float dk[2][CT] = {}, dv[2][CT] = {};
  // The queries that see a key of the block (none past sequsedK's keys: their dK and dV are 0).
  const int q_first = query_begin_for_key(p, j0) / 32;
  const int q_blocks = j0 < p.seq_k ? (query_end_for_key(p, min(j0 + 32, p.seq_k) - 1) + 31) / 32 : 0;
  for (int hh = 0; hh < p.group; ++hh) {
    const int h = hk * p.group + hh;
    const BwdHeadView<T> hv = bwd_head_view<T>(p, b, h);
    for (int qb = q_first + split; qb < q_blocks; qb += p.query_splits) {
      const int i0 = qb * 32;
      bwd_tile(p, hv, sm, i0, j0);
#pragma unroll
      for (int q = 0; q < Tr::kChunksPerTile; ++q) {
        const int cc0 = c0 + 32 * q;
        if (cc0 < p.head_dim_v) {  // dV += Pd^T dO
          __syncthreads();
          load_chunk(sm.a, hv.dout, p.do_stride[2], i0, p.seq_q, cc0, p.head_dim_v);
          __syncthreads();
#pragma unroll 8
          for (int ii = 0; ii < 32; ++ii) {
            const float w0 = sm.pd[ii][ty], w1 = sm.pd[ii][ty + 16];
#pragma unroll
            for (int c = 0; c < 4; ++c) {
              const float x = sm.a[ii][tx + 8 * c];
              dv[0][q * 4 + c] = fmaf(w0, x, dv[0][q * 4 + c]);
              dv[1][q * 4 + c] = fmaf(w1, x, dv[1][q * 4 + c]);
            }
          }
        }
        if (cc0 < p.head_dim) {  // dK += dS^T Q
          __syncthreads();
          load_chunk(sm.a, hv.q, p.q_stride[2], i0, p.seq_q, cc0, p.head_dim);
          __syncthreads();
#pragma unroll 8
          for (int ii = 0; ii < 32; ++ii) {
            const float w0 = sm.dx[ii][ty], w1 = sm.dx[ii][ty + 16];
#pragma unroll
            for (int c = 0; c < 4; ++c) {
              const float x = sm.a[ii][tx + 8 * c];
              dk[0][q * 4 + c] = fmaf(w0, x, dk[0][q * 4 + c]);
              dk[1][q * 4 + c] = fmaf(w1, x, dk[1][q * 4 + c]);
            }
          }
        }
      }
      if (dq_atomic) {  // dQ += scale * dS K, all of D, into the fp32 workspace
        float* dq_rows = p.dq_accum + lse_row(p, b, h, 0) * p.head_dim;
        for (int d0 = 0; d0 < p.head_dim; d0 += 32) {
          __syncthreads();
          load_chunk(sm.b, hv.k, p.k_stride[2], j0, p.seq_k, d0, p.head_dim);
          __syncthreads();
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            const int i = i0 + ty + 16 * r;
            float acc[4] = {};
#pragma unroll 8
            for (int jj = 0; jj < 32; ++jj) {
              const float w = sm.dx[ty + 16 * r][jj];
#pragma unroll
              for (int c = 0; c < 4; ++c) acc[c] = fmaf(w, sm.b[jj][tx + 8 * c], acc[c]);
            }
#pragma unroll
            for (int c = 0; c < 4; ++c) {
              const int d = d0 + tx + 8 * c;
              if (i < p.seq_q && d < p.head_dim)
                atomicAdd(dq_rows + static_cast<int64_t>(i) * p.head_dim + d, acc[c] * p.scale);
            }
          }
        }
      }
      if (dbias_direct) {  // each (b, h, i, j) is visited once: dbias = dS (or += with dbias_accum)
#pragma unroll
        for (int r = 0; r < 2; ++r)
#pragma unroll
          for (int c = 0; c < 4; ++c) {
            const int i = i0 + ty + 16 * r, j = j0 + tx + 8 * c;
            if (i < p.seq_q && j < p.seq_k) {
              const int64_t idx =
                  b * p.dbias_stride[0] + h * p.dbias_stride[1] + i * p.dbias_stride[2] + j * p.dbias_stride[3];
              write_dbias(p, idx, sm.ds[ty + 16 * r][tx + 8 * c]);
            }
          }
      }
    }
  }

  // Rows of this block's keys: ty and ty + 16; columns c0 + 32q + tx + 8c.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int j = j0 + ty + 16 * r;
    if (j >= p.seq_k_rows) continue;
#pragma unroll
    for (int q = 0; q < Tr::kChunksPerTile; ++q)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int d = c0 + 32 * q + tx + 8 * c;
        const float gk = dk[r][q * 4 + c] * p.scale, gv = dv[r][q * 4 + c];
        store_dkdv_element<T>(p, b, hk, j, d, split, gk, gv);
      }
  }
}

}  // namespace memeff
