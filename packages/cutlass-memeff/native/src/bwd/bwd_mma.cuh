// Backward of the tensor-core path (fp16/bf16, sm80+): key-split, one block per (128 keys, b, kv head,
// query split). Each step takes 32 queries of one query head of the GQA group: S^T = K Q^T and
// dP^T = V dO^T with mma.sync, P^T from the saved logsumexp, dropout replayed, dS^T; then
// dV += Pd^T dO and dK += dS^T Q from registers, and dQ = dS K from dS^T staged in shared memory,
// added to the fp32 workspace with atomics (the deterministic mode computes dQ in bwd_q_simt).
// Q, dO, logsumexp and D are double-buffered: step s + 1 loads while step s computes.
#pragma once
#include <cmath>

#include "bwd/bwd_lean.cuh"
#include "bwd/mma_bwd_traits.h"
#include "common/dbias_store.cuh"
#include "common/dtype_traits.cuh"
#include "common/mask_tile.cuh"
#include "common/mma_sm80.cuh"
#include "common/params.h"
#include "common/score_mods.cuh"
#include "common/smem_tile.cuh"
#include "fwd/mma_traits.h"

namespace memeff {

// kFull: D == Dv == the bucket; the head-dim loops are then compile-time (as fwd_mma_kernel's).
// kMask: the call has a mask or bias; without one the mask code is compiled out (as fwd_mma_kernel's).
template <typename T, typename Tr, bool kFull, bool kMask>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kMinBlocksPerSm) bwd_mma_kernel(const BwdParams p) {
#ifdef ATTN_MEMEFF_SM80
  constexpr int N = Tr::kBlockN, M = Tr::kBlockM, HD = Tr::kHeadDim, QT = Tr::kQTiles, DT = Tr::kDTiles;
  constexpr int DS = Tr::kDsStride;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* k_s = reinterpret_cast<T*>(smem_raw);
  T* v_s = k_s + Tr::kSmemK;
  T* q_s = v_s + Tr::kSmemK;         // [2][M][HD]
  T* do_s = q_s + 2 * Tr::kSmemQ;    // [2][M][HD]
  T* dst_s = do_s + 2 * Tr::kSmemQ;  // dS^T [N][DS]
  float* lse_s = reinterpret_cast<float*>(dst_s + Tr::kSmemDs);  // [2][M], log2 units
  float* dsum_s = lse_s + 2 * M;                                  // [2][M]
  // [2] mask tiles of [M queries][N keys], double-buffered with Q and dO (only with a mask).
  unsigned char* mask_s = reinterpret_cast<unsigned char*>(dsum_s + 2 * M);
  using MaskT = MaskTile<M, N>;

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  const int j0 = blockIdx.x * N;
  const int bhk = blockIdx.y + p.bh_base, b = bhk / p.heads_kv, hk = bhk % p.heads_kv;
  const int split = blockIdx.z;
  const T* k = static_cast<const T*>(p.k) + b * p.k_stride[0] + hk * p.k_stride[1];
  const T* v = static_cast<const T*>(p.v) + b * p.v_stride[0] + hk * p.v_stride[1];
  load_tile_async<T, N, HD, Tr::kThreads>(k_s, k, p.k_stride[2], j0, p.seq_k, p.head_dim);
  load_tile_async<T, N, HD, Tr::kThreads>(v_s, v, p.v_stride[2], j0, p.seq_k, p.head_dim_v);

  // Steps: (query head of the group, query block of this split), heads outer (inner with dbias_presum).
  const int q_first = query_begin_for_key(p, j0) / M;
  const int q_blocks = (p.seq_q + M - 1) / M;
  const int per_head = q_first + split < q_blocks ? (q_blocks - q_first - split + p.query_splits - 1) / p.query_splits : 0;
  const int steps = per_head * p.group;
  // v7, BwdParams::dbias_stagger: each (b, kv head) starts its query walk at its own offset, so blocks of
  // different heads that run side by side (same key block, same start) add into different dbias rows
  // instead of the same sectors at the same time. Neighbouring heads are 4 steps (128 rows) apart: never
  // in one step's rows, yet close enough that a line they share is still in L2 when the next one adds
  // (the accumulator, 64 MB per batch at S4k, does not fit). The same steps in another order. Only with
  // a dbias, hence a mask: the mask-free kernels compile it out.
  const int rot = kMask && p.dbias_stagger && per_head > 0 ? static_cast<int>((static_cast<int64_t>(bhk) * 4) % per_head) : 0;
  // With dbias_presum (a mask kernel only: it needs a dbias) the group's heads are the inner walk.
  const bool presum = kMask && p.dbias_presum;
  auto step_head = [&](int s) { return hk * p.group + (presum ? s % p.group : s / per_head); };
  auto row0_of = [&](int r0) {  // first query of walk position r0 (rotated by the stagger)
    const int r = r0 + rot;
    return (q_first + split + (r < per_head ? r : r - per_head) * p.query_splits) * M;
  };
  auto step_row0 = [&](int s) { return row0_of(presum ? s / p.group : s % per_head); };
  // v8: where every row and key of the step is in bounds (bwd_lean.cuh).
  auto interior = [&](int i0) { return i0 + M <= p.seq_q && j0 + N <= p.seq_k; };
  auto load_step = [&](int h, int i0, int buf) {
    const T* q = static_cast<const T*>(p.q) + b * p.q_stride[0] + h * p.q_stride[1];
    const T* dout = static_cast<const T*>(p.dout) + b * p.do_stride[0] + h * p.do_stride[1];
    load_tile_async<T, M, HD, Tr::kThreads>(q_s + buf * Tr::kSmemQ, q, p.q_stride[2], i0, p.seq_q, p.head_dim);
    load_tile_async<T, M, HD, Tr::kThreads>(do_s + buf * Tr::kSmemQ, dout, p.do_stride[2], i0, p.seq_q, p.head_dim_v);
    const MaskView mv = mask_view(p, b, h);
    const bool staged = kMask && mask_tile_ok(mv);
    if (staged) {
      if (p.bwd_lean && interior(i0)) {
        load_mask_tile_interior<M, N, Tr::kThreads>(mask_s + buf * MaskT::kBytes, mv, i0, j0);
      } else {
        load_mask_tile_async<M, N, Tr::kThreads>(mask_s + buf * MaskT::kBytes, mv, i0, j0, p.seq_q, p.seq_k);
      }
    }
    if (threadIdx.x < M) {
      const int i = i0 + threadIdx.x;
      const int64_t row = (static_cast<int64_t>(b) * p.heads_q + h) * p.seq_q + i;
      lse_s[buf * M + threadIdx.x] = i < p.seq_q ? p.lse[row] * kLog2e : -INFINITY;
      dsum_s[buf * M + threadIdx.x] = i < p.seq_q ? p.dsum[row] : 0.f;
    }
    return staged;
  };
  // v8: whether the step's mask tile was staged, carried from its load_step (bwd_lean) instead of the
  // step recomputing the mask view (64-bit strides, dtype size) and its alignment test.
  bool staged_cur = steps > 0 && load_step(step_head(0), step_row0(0), 0);
  cp_async_commit();

  const int qk_steps = kFull ? HD / 16 : (p.head_dim + 15) / 16, v_steps = kFull ? HD / 16 : (p.head_dim_v + 15) / 16;
  float acc_dk[DT][4], acc_dv[DT][4];
#pragma unroll
  for (int n = 0; n < DT; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_dk[n][e] = acc_dv[n][e] = 0.f;

  StepWalk walk;  // v8 (bwd_lean): step s's position, advanced without division
  for (int s = 0; s < steps; ++s) {
    const int buf = s & 1;
    cp_async_wait_all();
    __syncthreads();  // this step's tiles landed; every warp is done with the previous step
    const StepWalk next = walk.next(presum, p.group, per_head);
    int h, i0, h_next, i0_next;
    if (p.bwd_lean) {
      h = hk * p.group + walk.gh;
      i0 = row0_of(walk.r);
      h_next = hk * p.group + next.gh;
      i0_next = row0_of(next.r);
    } else {
      h = step_head(s);
      i0 = step_row0(s);
      h_next = step_head(s + 1);
      i0_next = step_row0(s + 1);
    }
    const int step_gh = walk.gh;  // this step's head within the GQA group (both paths keep the walk)
    walk = next;
    const bool staged_next = s + 1 < steps && load_step(h_next, i0_next, buf ^ 1);
    cp_async_commit();
    const T* qb_s = q_s + buf * Tr::kSmemQ;
    const T* dob_s = do_s + buf * Tr::kSmemQ;

    // S^T = K Q^T and dP^T = V dO^T: this warp's 16 keys x M queries.
    float acc_st[QT][4], acc_dpt[QT][4];
#pragma unroll
    for (int n = 0; n < QT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_st[n][e] = acc_dpt[n][e] = 0.f;
#pragma unroll
    for (int ks = 0; ks < HD / 16; ++ks) {
      if (!kFull && ks >= qk_steps) break;
      uint32_t a[4];
      ldmatrix_x4(a, k_s + swizzle<HD>(warp * 16 + (lane % 16), ks * 16 + (lane / 16) * 8));
#pragma unroll
      for (int np = 0; np < QT / 2; ++np) {
        uint32_t bq[4];
        ldmatrix_x4(bq, qb_s + swizzle<HD>(np * 16 + (lane % 8) + (lane / 16) * 8, ks * 16 + ((lane / 8) % 2) * 8));
        mma_16816<T>(acc_st[2 * np], a, bq[0], bq[1]);
        mma_16816<T>(acc_st[2 * np + 1], a, bq[2], bq[3]);
      }
    }
#pragma unroll
    for (int ks = 0; ks < HD / 16; ++ks) {
      if (!kFull && ks >= v_steps) break;
      uint32_t a[4];
      ldmatrix_x4(a, v_s + swizzle<HD>(warp * 16 + (lane % 16), ks * 16 + (lane / 16) * 8));
#pragma unroll
      for (int np = 0; np < QT / 2; ++np) {
        uint32_t bd[4];
        ldmatrix_x4(bd, dob_s + swizzle<HD>(np * 16 + (lane % 8) + (lane / 16) * 8, ks * 16 + ((lane / 8) % 2) * 8));
        mma_16816<T>(acc_dpt[2 * np], a, bd[0], bd[1]);
        mma_16816<T>(acc_dpt[2 * np + 1], a, bd[2], bd[3]);
      }
    }

    // P^T, dropout, dS^T = P^T * (dP^T * keep / (1 - p) - D); acc_st becomes Pd^T, acc_dpt dS^T.
    // Without kMask the view is empty at compile time, so masked_logit below keeps only causal and bounds.
    const MaskView mask = kMask ? mask_view(p, b, h) : MaskView{};
    const bool mask_smem = kMask && (p.bwd_lean ? staged_cur : mask_tile_ok(mask));  // same decision as load_step's for this step
    staged_cur = staged_next;
    const unsigned char* maskb_s = mask_s + buf * MaskT::kBytes;
    const bool plain = tile_unmasked(p, i0, j0, N);
    // v4, as the forward (mask_tile.cuh): on a step whose keys are all in bounds and visible from
    // every query, S^T becomes dot * scale + mask term in place, one LDS and one FFMA per score
    // instead of tile_logit's rules and dtype switch (padded rows are skipped below by lse = -inf).
    const bool mask_fast = mask_smem && p.mask_tile_fast && tile_keys_visible(p, i0, j0, N);
    if (mask_fast) {
      with_mask_dtype<T>(p.mask_dtype, [&](auto dt) {  // = mask.dtype
        constexpr int kDt = decltype(dt)::value;
        if constexpr (kDt == kBF16 || kDt == kF16) {
          if (p.bwd_lean) {  // v8: QT / 2 ldmatrix.trans instead of 4 * QT 16-bit loads (bwd_lean.cuh)
            uint32_t mf[QT][2];
            load_mask_frag16<MaskT::kPitch, QT>(mf, maskb_s, warp, lane);
#pragma unroll
            for (int n = 0; n < QT; ++n)
#pragma unroll
              for (int kh = 0; kh < 2; ++kh) {
                const float2 m = unpack_mask16<kDt>(mf[n][kh]);
                acc_st[n][2 * kh] = fmaf(acc_st[n][2 * kh], p.scale, m.x);
                acc_st[n][2 * kh + 1] = fmaf(acc_st[n][2 * kh + 1], p.scale, m.y);
              }
            return;
          }
        }
#pragma unroll
        for (int n = 0; n < QT; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int il = n * 8 + 2 * t + (e % 2), jl = warp * 16 + g + 8 * (e / 2);
            acc_st[n][e] = fmaf(acc_st[n][e], p.scale, mask_one<kDt>(maskb_s + il * MaskT::kPitch, jl));
          }
      });
    }
    if (p.bwd_lean && !p.dropout && (mask_fast || plain)) {
      // v8: the same P and dS without the per-element rules (none apply on these steps) and without a
      // branch per score: a padded or fully masked row (lse = -inf) selects P = 0 after the exp2. With
      // keep = 1 the general loop's acc * keep - D and P * keep are these values exactly.
      const float sl2 = mask_fast ? kLog2e : p.scale * kLog2e;
#pragma unroll
      for (int n = 0; n < QT; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int il = n * 8 + 2 * t + (e % 2);
          const float lse2 = lse_s[buf * M + il];
          const float x = exp2f(acc_st[n][e] * sl2 - lse2);
          const float pr = lse2 != -INFINITY ? x : 0.f;
          acc_dpt[n][e] = pr * (acc_dpt[n][e] - dsum_s[buf * M + il]);
          acc_st[n][e] = pr;
        }
    } else {
#pragma unroll
      for (int n = 0; n < QT; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int il = n * 8 + 2 * t + (e % 2), i = i0 + il;
          const int j = j0 + warp * 16 + g + 8 * (e / 2);
          const float lse2 = lse_s[buf * M + il];
          float pr = 0.f;
          if (lse2 != -INFINITY) {  // padded and fully masked rows: P = 0
            const float logit2 = mask_fast   ? acc_st[n][e] * kLog2e
                                 : plain     ? acc_st[n][e] * (p.scale * kLog2e)
                                 : mask_smem ? tile_logit<M, N>(p, mask, maskb_s, i, j, il, j - j0, acc_st[n][e]) * kLog2e
                                             : masked_logit(p, mask, i, j, acc_st[n][e]) * kLog2e;
            pr = exp2f(logit2 - lse2);
          }
          float keep = 1.f;
          if (p.dropout) keep = (i < p.seq_q && j < p.seq_k && dropout_kept(p, b, h, i, j)) ? p.dropout_keep_scale : 0.f;
          acc_dpt[n][e] = pr * (acc_dpt[n][e] * keep - dsum_s[buf * M + il]);
          acc_st[n][e] = pr * keep;
        }
    }
    // A dbias needs an additive mask (dispatch.cu), so the mask-free kernels compile this out.
    // v7 presum: ds is this head's dS plus the group's earlier heads' (kept in this thread's smem slots);
    // every head but the group's last stores it back and sends nothing.
    float ds[QT][4];
#pragma unroll
    for (int n = 0; n < QT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) ds[n][e] = acc_dpt[n][e];
    bool send = true;
    if (kMask && presum) {
      float* slot = reinterpret_cast<float*>(mask_s + 2 * MaskT::kBytes) + threadIdx.x;
      const int gh = p.bwd_lean ? step_gh : s % p.group;
#pragma unroll
      for (int n = 0; n < QT; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if (gh > 0) ds[n][e] += slot[(n * 4 + e) * Tr::kThreads];
          if (gh + 1 < p.group) slot[(n * 4 + e) * Tr::kThreads] = ds[n][e];
        }
      send = gh + 1 == p.group;
    }
    if (kMask && send && p.dbias != nullptr && p.dbias_quads) {
      // v7: 4 adjacent keys per request. Query tiles 2m, 2m + 1 and key half kh of the fragment are a
      // 4 x 4 block per group of 4 lanes (lanes 4 apart: rows 2t, 2t + 1, 8 + 2t, 9 + 2t, keys
      // g & ~3 .. + 3); after transpose_keys4 this lane holds row c = g % 4 of it, keys 0..3.
      static_assert(QT % 2 == 0, "query tiles come in pairs");
      const int c = g & 3;
      // fn(m, kh, x): this lane's 4 keys of quad (m, kh), transposed.
      auto for_quads = [&](auto&& fn) {
#pragma unroll
        for (int m = 0; m < QT / 2; ++m)
#pragma unroll
          for (int kh = 0; kh < 2; ++kh) {
            float x[4] = {ds[2 * m][2 * kh], ds[2 * m][2 * kh + 1], ds[2 * m + 1][2 * kh], ds[2 * m + 1][2 * kh + 1]};
            transpose_keys4(x, c);
            fn(m, kh, x);
          }
      };
      if (p.bwd_lean && p.dbias_accum != nullptr && interior(i0)) {
        // v8: every quad of the step in bounds: one 64-bit row address per step, + 16 rows / + 8 keys
        // per quad, and the reduction without write_dbias4's per-quad checks. Same adds, same addresses.
        float* q0 = p.dbias_accum + (b * p.dbias_stride[0] + h * p.dbias_stride[1] +
                                     static_cast<int64_t>(i0 + (c >> 1) * 8 + 2 * t + (c & 1)) * p.dbias_stride[2] + j0 + warp * 16 + (g & ~3));
        const int64_t rows16 = 16 * p.dbias_stride[2];
        for_quads([&](int m, int kh, const float (&x)[4]) { red_add_f32x4(q0 + m * rows16 + 8 * kh, x[0], x[1], x[2], x[3]); });
      } else {
        for_quads([&](int m, int kh, const float (&x)[4]) {
          const int i = i0 + (2 * m + (c >> 1)) * 8 + 2 * t + (c & 1), j = j0 + warp * 16 + (g & ~3) + 8 * kh;
          if (i < p.seq_q && j < p.seq_k) {
            write_dbias4(p, b * p.dbias_stride[0] + h * p.dbias_stride[1] + i * p.dbias_stride[2] + j, x, p.seq_k - j);
          }
        });
      }
    } else if (kMask && send && p.dbias != nullptr) {  // every (b, h, i, j) is visited once: a store, or an add over b / h
#pragma unroll
      for (int n = 0; n < QT; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int i = i0 + n * 8 + 2 * t + (e % 2), j = j0 + warp * 16 + g + 8 * (e / 2);
          if (i < p.seq_q && j < p.seq_k) {
            const int64_t idx = b * p.dbias_stride[0] + h * p.dbias_stride[1] + i * p.dbias_stride[2] + j * p.dbias_stride[3];
            write_dbias(p, idx, ds[n][e]);
          }
        }
    }

    // A operands over the queries (k = 16 per step), and dS^T to shared memory for dQ.
    uint32_t pa[QT / 2][4], da[QT / 2][4];
#pragma unroll
    for (int kk = 0; kk < QT / 2; ++kk) {
      pa[kk][0] = pack2<T>(acc_st[2 * kk][0], acc_st[2 * kk][1]);
      pa[kk][1] = pack2<T>(acc_st[2 * kk][2], acc_st[2 * kk][3]);
      pa[kk][2] = pack2<T>(acc_st[2 * kk + 1][0], acc_st[2 * kk + 1][1]);
      pa[kk][3] = pack2<T>(acc_st[2 * kk + 1][2], acc_st[2 * kk + 1][3]);
      da[kk][0] = pack2<T>(acc_dpt[2 * kk][0], acc_dpt[2 * kk][1]);
      da[kk][1] = pack2<T>(acc_dpt[2 * kk][2], acc_dpt[2 * kk][3]);
      da[kk][2] = pack2<T>(acc_dpt[2 * kk + 1][0], acc_dpt[2 * kk + 1][1]);
      da[kk][3] = pack2<T>(acc_dpt[2 * kk + 1][2], acc_dpt[2 * kk + 1][3]);
    }
#pragma unroll
    for (int n = 0; n < QT; ++n) {
      *reinterpret_cast<uint32_t*>(dst_s + (warp * 16 + g) * DS + n * 8 + 2 * t) = n % 2 == 0 ? da[n / 2][0] : da[n / 2][2];
      *reinterpret_cast<uint32_t*>(dst_s + (warp * 16 + g + 8) * DS + n * 8 + 2 * t) = n % 2 == 0 ? da[n / 2][1] : da[n / 2][3];
    }

    // dV += Pd^T dO, dK += dS^T Q (B operands transposed out of the row-major tiles).
#pragma unroll
    for (int kk = 0; kk < QT / 2; ++kk) {
#pragma unroll
      for (int dp = 0; dp < DT / 2; ++dp) {
        if (!kFull && dp >= v_steps) break;
        uint32_t bv[4];
        ldmatrix_x4_trans(bv, dob_s + swizzle<HD>(kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8, dp * 16 + (lane / 16) * 8));
        mma_16816<T>(acc_dv[2 * dp], pa[kk], bv[0], bv[1]);
        mma_16816<T>(acc_dv[2 * dp + 1], pa[kk], bv[2], bv[3]);
      }
#pragma unroll
      for (int dp = 0; dp < DT / 2; ++dp) {
        if (!kFull && dp >= qk_steps) break;
        uint32_t bq[4];
        ldmatrix_x4_trans(bq, qb_s + swizzle<HD>(kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8, dp * 16 + (lane / 16) * 8));
        mma_16816<T>(acc_dk[2 * dp], da[kk], bq[0], bq[1]);
        mma_16816<T>(acc_dk[2 * dp + 1], da[kk], bq[2], bq[3]);
      }
    }

    if (!p.deterministic) {
      __syncthreads();  // dS^T complete
      // dQ = dS K: warp (w % 2) takes 16 queries, (w / 2) a slice of kDqCols head-dim columns; fp32
      // atomics (red.global.add.f32: the result is unused).
      constexpr int DC = Tr::kDqCols;
      const int qh = warp % 2, c0 = (warp / 2) * DC;
      float acc_dq[DC / 8][4];
#pragma unroll
      for (int n = 0; n < DC / 8; ++n) acc_dq[n][0] = acc_dq[n][1] = acc_dq[n][2] = acc_dq[n][3] = 0.f;
#pragma unroll
      for (int kk = 0; kk < N / 16; ++kk) {
        uint32_t a[4];
        ldmatrix_x4_trans(a, dst_s + (kk * 16 + (lane % 8) + (lane / 16) * 8) * DS + qh * 16 + ((lane / 8) % 2) * 8);
#pragma unroll
        for (int dp = 0; dp < DC / 16; ++dp) {
          if (!kFull && c0 + dp * 16 >= p.head_dim) break;
          uint32_t bk[4];
          ldmatrix_x4_trans(bk, k_s + swizzle<HD>(kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8, c0 + dp * 16 + (lane / 16) * 8));
          mma_16816<T>(acc_dq[2 * dp], a, bk[0], bk[1]);
          mma_16816<T>(acc_dq[2 * dp + 1], a, bk[2], bk[3]);
        }
      }
      float* dq_rows = p.dq_accum + (static_cast<int64_t>(b) * p.heads_q + h) * p.seq_q * p.head_dim;
      // Columns 2t, 2t + 1 of each n8 tile as one vector reduction (head_dim is a multiple of 8 here,
      // so both are in range when the first is, and the address is 8-byte aligned).
#pragma unroll
      for (int n = 0; n < DC / 8; ++n)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int i = i0 + qh * 16 + g + 8 * r, d = c0 + n * 8 + 2 * t;
          if (i < p.seq_q && d < p.head_dim) {
            red_add_f32x2(dq_rows + static_cast<int64_t>(i) * p.head_dim + d, acc_dq[n][2 * r] * p.scale, acc_dq[n][2 * r + 1] * p.scale);
          }
        }
    }
  }
  cp_async_wait_all();

  // dK (scaled) and dV: rows g / g + 8 of this warp's keys, columns 2t, 2t + 1 of each n8 tile.
#pragma unroll
  for (int n = 0; n < DT; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int j = j0 + warp * 16 + g + 8 * (e / 2), d = n * 8 + 2 * t + (e % 2);
      if (j >= p.seq_k) continue;
      const float gk = acc_dk[n][e] * p.scale, gv = acc_dv[n][e];
      if (p.query_splits == 1) {
        if (d < p.head_dim) static_cast<T*>(p.dk)[b * p.dk_stride[0] + hk * p.dk_stride[1] + j * p.dk_stride[2] + d] = from_float<T>(gk);
        if (d < p.head_dim_v) static_cast<T*>(p.dv)[b * p.dv_stride[0] + hk * p.dv_stride[1] + j * p.dv_stride[2] + d] = from_float<T>(gv);
      } else {
        const int64_t row = ((static_cast<int64_t>(split) * p.batch + b) * p.heads_kv + hk) * p.seq_k + j;
        if (d < p.head_dim) p.dk_accum[row * p.head_dim + d] = gk;
        if (d < p.head_dim_v) p.dv_accum[row * p.head_dim_v + d] = gv;
      }
    }
#else
  __trap();  // built without sm80 code: the dispatcher never launches this kernel here
#endif
}

}  // namespace memeff
