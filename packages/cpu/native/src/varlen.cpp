#include "varlen.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace attn_cpu {
namespace {

constexpr float kNegInf = -HUGE_VALF;

// One dense problem of a split call: batch rows [b0, b0 + n) (varlen: n = 1 and b0 the sequence),
// queries [q0, q0 + sq) and keys [k0, k0 + sk) of their token dim (dense: q0 = k0 = 0). The rows
// hold nk >= sk keys; with sequsedK only the first sk are used.
struct Part {
  int64_t b0, n, q0, sq, k0, sk, nk;
};

// The view moved to batch row b and token t. Packed views have strides[0] = 0, so b moves them
// nowhere; dense parts start at token 0.
View4 moved(const View4& v, int64_t b, int64_t t) {
  View4 s = v;
  s.data = static_cast<char*>(v.data) + (b * v.strides[0] + t * v.strides[2]) * dtype_bytes(v.dtype);
  return s;
}

// Sets elements [0, n0) x [0, n1) x [0, n2) x [0, n3) of v to 0 (all-zero bits: 0 in every dtype).
void zero_view(const View4& v, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
  const int bytes = dtype_bytes(v.dtype);
  for (int64_t a = 0; a < n0; ++a)
    for (int64_t h = 0; h < n1; ++h)
      for (int64_t i = 0; i < n2; ++i) {
        char* row = static_cast<char*>(v.data) + (a * v.strides[0] + h * v.strides[1] + i * v.strides[2]) * bytes;
        if (v.strides[3] == 1) {
          std::memset(row, 0, static_cast<size_t>(n3 * bytes));
        } else {
          for (int64_t e = 0; e < n3; ++e) std::memset(row + e * v.strides[3] * bytes, 0, bytes);
        }
      }
}

// Calls f(part) for every dense problem of p: one per varlen sequence (its key count, or its
// sequsedK count), or one per run of consecutive dense rows with the same sequsedK count.
template <class Problem, class F>
void for_each_part(const Problem& p, F&& f) {
  const Dims& d = p.dims;
  const int32_t* used = p.seqused.used_k;
  if (p.varlen.cu_q) {
    for (int64_t b = 0; b < d.B; ++b) {
      const int64_t q0 = p.varlen.cu_q[b], k0 = p.varlen.cu_k[b];
      const int64_t nk = p.varlen.cu_k[b + 1] - k0;
      f(Part{b, 1, q0, p.varlen.cu_q[b + 1] - q0, k0, used ? used[b] : nk, nk});
    }
    return;
  }
  for (int64_t b0 = 0; b0 < d.B;) {
    int64_t b1 = b0 + 1;
    while (b1 < d.B && used[b1] == used[b0]) ++b1;
    f(Part{b0, b1 - b0, 0, d.Sq, 0, used[b0], d.Sk});
    b0 = b1;
  }
}

// K and V of part r: paged pools stay where they are and the table moves to the part's sequence;
// plain views move to its first key. (Only the forward is ever paged.)
void move_kv(FwdProblem& s, const FwdProblem& p, const Part& r) {
  if (!p.paged.table) {
    s.k = moved(p.k, r.b0, r.k0);
    s.v = moved(p.v, r.b0, r.k0);
    return;
  }
  s.paged.table = p.paged.table + r.b0 * p.paged.table_stride;
  if (p.paged.key_start) s.paged.key_start = p.paged.key_start + r.b0;
}
void move_kv(BwdProblem& s, const BwdProblem& p, const Part& r) {
  s.k = moved(p.k, r.b0, r.k0);
  s.v = moved(p.v, r.b0, r.k0);
}

// Part r of p as a dense problem of batch r.n: the views both passes share (Q, O, K, V, lse, mask)
// moved to it, its lengths, its causal/window alignment, its ALiBi slopes and its first batch index
// in the Philox counter. The backward moves its gradients itself.
template <class Problem>
Problem part_problem(const Problem& p, const Part& r) {
  Problem s = p;
  s.varlen = Varlen{};
  s.seqused = SequsedK{};
  s.dims.B = r.n;
  s.dims.Sq = r.sq;
  s.dims.Sk = r.sk;
  s.q = moved(p.q, r.b0, r.q0);
  s.out = moved(p.out, r.b0, r.q0);
  move_kv(s, p, r);
  s.lse = p.lse + r.b0 * p.lse_sb + r.q0;
  ScoreMods& m = s.mods;
  m.align_offset = m.lower_right ? r.sk - r.sq : 0;
  m.drop_b0 = static_cast<uint32_t>(r.b0);
  if (m.alibi) m.alibi += r.b0 * m.alibi_sb;
  if (m.has_mask) m.mask = moved(p.mods.mask, r.b0, 0);
  return s;
}

void forward_part(const KernelSet& ks, const FwdProblem& p, const Part& r) {
  if (r.sq == 0) return;
  if (r.sk == 0) {  // no keys: output 0, logsumexp -inf
    zero_view(moved(p.out, r.b0, r.q0), r.n, p.dims.Hq, r.sq, p.dims.Dv);
    for (int64_t b = r.b0; b < r.b0 + r.n; ++b)
      for (int64_t h = 0; h < p.dims.Hq; ++h)
        for (int64_t i = 0; i < r.sq; ++i) p.lse[b * p.lse_sb + h * p.lse_sh + r.q0 + i] = kNegInf;
    return;
  }
  ks.forward(part_problem(p, r));
}

// dbias of a dense call split by sequsedK: each part writes its own [n or 1, dh, di, sk or 1] sums,
// added here into p.dbias (zeroed first), whose keys past sk stay 0.
struct BiasParts {
  const BwdProblem& p;
  std::vector<float> sums;

  void run(const KernelSet& ks, BwdProblem& s, const Part& r) {
    const int64_t* od = p.dbias_dims;
    const int64_t sd[4] = {od[0] == 1 ? 1 : r.n, od[1], od[2], od[3] == 1 ? 1 : r.sk};
    sums.assign(static_cast<size_t>(sd[0] * sd[1] * sd[2] * sd[3]), 0.f);
    s.dbias = sums.data();
    for (int k = 0; k < 4; ++k) s.dbias_dims[k] = sd[k];
    ks.backward(s);
    const int64_t a0 = od[0] == 1 ? 0 : r.b0;
    const float* src = sums.data();
    for (int64_t a = 0; a < sd[0]; ++a)
      for (int64_t h = 0; h < sd[1]; ++h)
        for (int64_t i = 0; i < sd[2]; ++i) {
          float* dst = p.dbias + (((a0 + a) * od[1] + h) * od[2] + i) * od[3];
          for (int64_t j = 0; j < sd[3]; ++j) dst[j] += *src++;
        }
  }
};

void backward_part(const KernelSet& ks, const BwdProblem& p, const Part& r, BiasParts* bias) {
  const Dims& d = p.dims;
  const int64_t sk = r.sq == 0 ? 0 : r.sk;  // keys that get a gradient from some query
  // Unused keys (and every key of a part without queries or used keys) get exactly 0.
  zero_view(moved(p.dk, r.b0, r.k0 + sk), r.n, d.Hk, r.nk - sk, d.D);
  zero_view(moved(p.dv, r.b0, r.k0 + sk), r.n, d.Hk, r.nk - sk, d.Dv);
  if (r.sq == 0 || r.sk == 0) {
    zero_view(moved(p.dq, r.b0, r.q0), r.n, d.Hq, r.sq, d.D);
    return;  // nothing attends: dbias keeps its zeros
  }
  BwdProblem s = part_problem(p, r);
  s.dout = moved(p.dout, r.b0, r.q0);
  s.dq = moved(p.dq, r.b0, r.q0);
  s.dk = moved(p.dk, r.b0, r.k0);
  s.dv = moved(p.dv, r.b0, r.k0);
  if (bias) return bias->run(ks, s, r);
  ks.backward(s);
}

}  // namespace

void run_forward(const KernelSet& ks, const FwdProblem& p) {
  if (!p.varlen.cu_q && !p.seqused.used_k) return ks.forward(p);
  for_each_part(p, [&](const Part& r) { forward_part(ks, p, r); });
}

void run_backward(const KernelSet& ks, const BwdProblem& p) {
  if (!p.varlen.cu_q && !p.seqused.used_k) return ks.backward(p);
  BiasParts bias{p, {}};
  if (p.dbias) {  // only dense calls take a mask
    const int64_t* od = p.dbias_dims;
    std::fill_n(p.dbias, od[0] * od[1] * od[2] * od[3], 0.f);
  }
  for_each_part(p, [&](const Part& r) { backward_part(ks, p, r, p.dbias ? &bias : nullptr); });
}

}  // namespace attn_cpu
