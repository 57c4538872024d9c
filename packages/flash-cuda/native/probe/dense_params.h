// The forward parameters of dense, contiguous [B, H, S, D] bf16 tensors for the standalone probes (no JS, no
// ABI): softmax scale 1/sqrt(D), upper-left causal or no mask, 16-byte aligned, no split-KV. A probe sets what
// only its kernel needs (m_blocks, the backward's fields) on top.
#pragma once
#include <cmath>
#include <cstdint>

#include "common/fwd_params.h"

namespace attn::flash::probe {

inline constexpr double kLog2e = 1.4426950408889634;

inline FwdParams dense_fwd_params(const void* q, const void* k, const void* v, void* o, float* lse, int batch, int hq,
                                  int hk, int sq, int sk, int d, bool causal) {
  FwdParams f{};
  f.q = q, f.k = k, f.v = v, f.o = o, f.lse = lse;
  f.q_batch_stride = int64_t(hq) * sq * d, f.q_head_stride = int64_t(sq) * d, f.q_row_stride = d;
  f.k_batch_stride = f.v_batch_stride = int64_t(hk) * sk * d;
  f.k_head_stride = f.v_head_stride = int64_t(sk) * d;
  f.k_row_stride = f.v_row_stride = d;
  f.o_batch_stride = f.q_batch_stride, f.o_head_stride = f.q_head_stride, f.o_row_stride = d;
  f.lse_batch_stride = int64_t(hq) * sq, f.lse_head_stride = sq;
  f.batch = batch, f.heads_q = hq, f.heads_k = hk, f.group = hq / hk;
  f.seqlen_q = sq, f.seqlen_k = sk, f.head_dim = d;
  f.score_mul = float(1.0 / std::sqrt(double(d)) * kLog2e);
  f.causal = causal, f.lower_right = false;
  f.window_left = -1, f.window_right = causal ? 0 : -1;
  f.alibi_mul = float(kLog2e);
  f.aligned16 = true;
  f.tma_loads = sq > 0 && sk > 0;  // dense, 16-byte aligned, positive strides: what the plan would find
  f.num_splits = 1;
  return f;
}

}  // namespace attn::flash::probe
