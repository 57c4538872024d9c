#include "varlen.h"

#include <cmath>
#include <cstring>

namespace attn_cpu {
namespace {

constexpr float kNegInf = -HUGE_VALF;

// The view moved `rows` tokens along its token dim (strides[2]); strides[0] is 0 for packed views.
View4 shifted(const View4& v, int64_t rows) {
  View4 s = v;
  s.data = static_cast<char*>(v.data) + rows * v.strides[2] * dtype_bytes(v.dtype);
  return s;
}

void seq_mods(ScoreMods& m, int64_t b, int64_t sq, int64_t sk) {
  m.align_offset = m.lower_right ? sk - sq : 0;
  m.drop_b0 = static_cast<uint32_t>(b);
  if (m.alibi) m.alibi += b * m.alibi_sb;
}

// Sets tokens [t0, t0 + n) of every head of a packed view to 0 (all-zero bits: 0 in every dtype).
void zero_rows(const View4& v, int64_t heads, int64_t t0, int64_t n, int64_t cols) {
  const int bytes = dtype_bytes(v.dtype);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = t0; i < t0 + n; ++i) {
      char* row = static_cast<char*>(v.data) + (h * v.strides[1] + i * v.strides[2]) * bytes;
      for (int64_t e = 0; e < cols; ++e) std::memset(row + e * v.strides[3] * bytes, 0, bytes);
    }
}

// Sequence b of a varlen call as a dense problem of batch 1: queries [q0, q0 + sq), keys [k0, k0 + sk);
// the views both passes share (Q, O, K, V, lse) moved there. The backward moves its gradients itself.
template <class Problem>
Problem sequence_problem(const Problem& p, int64_t b, int64_t q0, int64_t sq, int64_t k0, int64_t sk) {
  Problem s = p;
  s.varlen = Varlen{};
  s.dims.B = 1;
  s.dims.Sq = sq;
  s.dims.Sk = sk;
  s.q = shifted(p.q, q0);
  s.out = shifted(p.out, q0);
  s.k = shifted(p.k, k0);
  s.v = shifted(p.v, k0);
  s.lse = p.lse + q0;
  seq_mods(s.mods, b, sq, sk);
  return s;
}

}  // namespace

void run_forward(const KernelSet& ks, const FwdProblem& p) {
  if (!p.varlen.cu_q) return ks.forward(p);
  for (int64_t b = 0; b < p.dims.B; ++b) {
    const int64_t q0 = p.varlen.cu_q[b], sq = p.varlen.cu_q[b + 1] - q0;
    const int64_t k0 = p.varlen.cu_k[b], sk = p.varlen.cu_k[b + 1] - k0;
    if (sq == 0) continue;
    if (sk == 0) {  // no keys: output 0, logsumexp -inf
      zero_rows(p.out, p.dims.Hq, q0, sq, p.dims.Dv);
      for (int64_t h = 0; h < p.dims.Hq; ++h)
        for (int64_t i = 0; i < sq; ++i) p.lse[h * p.lse_sh + q0 + i] = kNegInf;
      continue;
    }
    ks.forward(sequence_problem(p, b, q0, sq, k0, sk));
  }
}

void run_backward(const KernelSet& ks, const BwdProblem& p) {
  if (!p.varlen.cu_q) return ks.backward(p);
  for (int64_t b = 0; b < p.dims.B; ++b) {
    const int64_t q0 = p.varlen.cu_q[b], sq = p.varlen.cu_q[b + 1] - q0;
    const int64_t k0 = p.varlen.cu_k[b], sk = p.varlen.cu_k[b + 1] - k0;
    if (sq == 0 || sk == 0) {  // nothing attends: the gradients of this sequence are 0
      zero_rows(p.dq, p.dims.Hq, q0, sq, p.dims.D);
      zero_rows(p.dk, p.dims.Hk, k0, sk, p.dims.D);
      zero_rows(p.dv, p.dims.Hk, k0, sk, p.dims.Dv);
      continue;
    }
    BwdProblem s = sequence_problem(p, b, q0, sq, k0, sk);
    s.dout = shifted(p.dout, q0);
    s.dq = shifted(p.dq, q0);
    s.dk = shifted(p.dk, k0);
    s.dv = shifted(p.dv, k0);
    ks.backward(s);
  }
}

}  // namespace attn_cpu
