// Per-row pieces shared by forward and backward: which keys a query row may see, turning dot
// products into logits (scale, softcap, ALiBi, mask, causal/window), and the online softmax step.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/convert.h"
#include "problem.h"

namespace attn_cpu {
namespace ATTN_ISA {

constexpr float kNegInf = -__builtin_inff();

// Keys lo..hi (inclusive) that query row i may see; lo > hi when none. Both are non-decreasing in i,
// so the keys of rows i0..i1 lie in [range(i0).lo, range(i1).hi].
struct RowRange {
  int64_t lo, hi;
};
inline RowRange key_range(const ScoreMods& m, int64_t Sk, int64_t i) {
  const int64_t diag = i + m.align_offset;
  RowRange r{0, Sk - 1};
  if (m.causal && diag < r.hi) r.hi = diag;
  if (m.window_left >= 0 && diag - m.window_left > r.lo) r.lo = diag - m.window_left;
  if (m.window_right >= 0 && diag + m.window_right < r.hi) r.hi = diag + m.window_right;
  return r;
}

// tanh(y) = (e^2y - 1) / (e^2y + 1), |y| clamped to 9 where tanh is 1 in fp32; below |y| = 0.3 an
// odd Taylor polynomial (its first dropped term is < 6e-8 relative there). The quotient alone has
// an absolute error of ~1e-7 near 0 (e^2y - 1 cancels), which softcap multiplies: at softcap 30 a
// logit was 1.7e-6 off, beyond the accuracy rule (issue 25's fuzz suite). NaN stays NaN, +-Inf gives
// +-1: the branch test reads min(|y|, 1e30), which is 1e30 for NaN (vmin's NaN-in-b rule), so NaN
// takes the quotient, which propagates it.
inline V vtanh(V y) {
  const V t = vmin(vset(9.f), vmax(vset(-9.f), y));
  const V e = vexp(vadd(t, t));
  const V quotient = vdiv(vsub(e, vset(1.f)), vadd(e, vset(1.f)));
  const V y2 = vmul(y, y);
  V p = vset(62.f / 2835.f);
  p = vfma(p, y2, vset(-17.f / 315.f));
  p = vfma(p, y2, vset(2.f / 15.f));
  p = vfma(p, y2, vset(-1.f / 3.f));
  const V series = vfma(vmul(p, y2), y, y);
  const V a = vmin(vabs(y), vset(1e30f));
  const V small = vkeep_range2(series, a, vzero(), vset(0.3f));
  const V large = vkeep_range2(quotient, a, vset(0.3f), vset(1e30f));
  return vmax(small, large);  // one of them is -inf (both at exactly 0.3: the same value within 1 ulp)
}

// The ScoreMods of one (batch, query head), resolved once per task.
struct HeadMods {
  const ScoreMods* m;
  int64_t Sk;
  float scale, softcap, inv_softcap, slope;
  bool has_alibi, has_mask, simple;  // simple: no softcap, ALiBi or mask
  const char* mask_row0;             // mask element (b, h, 0, 0)
  int64_t mask_si, mask_sj;
};

inline HeadMods head_mods(const ScoreMods& m, int64_t Sk, int64_t b, int64_t h) {
  HeadMods hm{};
  hm.m = &m;
  hm.Sk = Sk;
  hm.scale = m.scale;
  hm.softcap = m.softcap;
  hm.inv_softcap = m.softcap > 0.f ? 1.f / m.softcap : 0.f;
  hm.has_alibi = m.alibi != nullptr;
  hm.slope = hm.has_alibi ? m.alibi[b * m.alibi_sb + h * m.alibi_sh] : 0.f;
  hm.has_mask = m.has_mask;
  if (m.has_mask) {
    hm.mask_row0 = static_cast<const char*>(elem_ptr(m.mask, b, h, 0, 0));
    hm.mask_si = m.mask.strides[2];
    hm.mask_sj = m.mask.strides[3];
  }
  hm.simple = !(m.softcap > 0.f) && !hm.has_alibi && !hm.has_mask;
  return hm;
}

// maskbuf[c] = what the mask adds to logit (i, j0 + c): its value (additive) or 0 / -inf (bool),
// for c < n; 0 for n <= c < bn.
inline void mask_row(float* maskbuf, const HeadMods& hm, int64_t i, int64_t j0, int64_t n, int64_t bn) {
  const ScoreMods& m = *hm.m;
  const int64_t bytes = dtype_bytes(m.mask.dtype);
  const char* row = hm.mask_row0 + (i * hm.mask_si + j0 * hm.mask_sj) * bytes;
  if (m.mask_is_bool) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(row);
    for (int64_t c = 0; c < n; ++c) maskbuf[c] = p[c * hm.mask_sj] ? 0.f : kNegInf;
  } else {
    load_row(maskbuf, row, m.mask.dtype, n, hm.mask_sj);
  }
  for (int64_t c = n; c < bn; ++c) maskbuf[c] = 0.f;
}

// Turns the dot products s[0, bn) of query row i with keys j0.. into logits, in place, and returns
// their max. bn is a multiple of kLanes; keys past Sk and outside rr become -inf. When `tanh_out` is
// given it receives t = tanh(scale * s / softcap) itself, for the backward's derivative 1 - t^2: t
// recovered as softcap(scale * s) / softcap took two more roundings, which 1 - t^2 turns into a
// relative error of ~6 ulps / (1 - |t|) where the tanh saturates (softcap 30 at scale 7: dK 3x the
// naive error, beyond the accuracy rule).
inline float logits_row(float* s, int64_t bn, const HeadMods& hm, int64_t i, int64_t j0, RowRange rr, float* maskbuf,
                        float* tanh_out) {
  const int64_t n = hm.Sk - j0 < bn ? hm.Sk - j0 : bn;
  const int64_t lo_i = rr.lo - j0 < -1 ? -1 : rr.lo - j0;
  const int64_t hi_i = rr.hi - j0 > bn ? bn : rr.hi - j0;
  const bool ranged = lo_i > 0 || hi_i < bn - 1;
  const float lo = static_cast<float>(lo_i), hi = static_cast<float>(hi_i);
  const V vscale = vset(hm.scale);
  V vmx = vset(kNegInf);
  if (hm.simple && !ranged) {
    for (int64_t c = 0; c < bn; c += kLanes) {
      const V x = vmul(vload(s + c), vscale);
      vstore(s + c, x);
      vmx = vmax(x, vmx);
    }
    return hmax(vmx);
  }
  if (hm.has_mask) mask_row(maskbuf, hm, i, j0, n, bn);
  const bool cap = hm.softcap > 0.f;
  const bool bool_mask = hm.has_mask && hm.m->mask_is_bool;
  const V vcap = vset(hm.softcap), vinv = vset(hm.inv_softcap), vslope = vset(hm.slope);
  const V vdist0 = vset(static_cast<float>(i + hm.m->align_offset - j0));
  const V step = vset(static_cast<float>(kLanes));
  V col = viota();
  for (int64_t c = 0; c < bn; c += kLanes) {
    V x = vmul(vload(s + c), vscale);
    if (cap) {
      const V t = vtanh(vmul(x, vinv));
      if (tanh_out) vstore(tanh_out + c, t);
      x = vmul(vcap, t);
    }
    if (hm.has_alibi) x = vsub(x, vmul(vslope, vabs(vsub(vdist0, col))));
    // A bool mask selects (masked keys become -inf even where the logit is NaN); additive adds.
    if (hm.has_mask)
      x = bool_mask ? vkeep_range2(x, vload(maskbuf + c), vzero(), vzero()) : vadd(x, vload(maskbuf + c));
    if (ranged) x = vkeep_range(x, col, lo, hi);
    vstore(s + c, x);
    vmx = vmax(x, vmx);
    col = vadd(col, step);
  }
  return hmax(vmx);
}

// One online-softmax step (FlashAttention-2) for a row of logits s[0, bn) with max mx: s becomes
// exp(s - m_new), the running sum l absorbs it, and the output row o (dvp floats) is rescaled by
// exp(m_old - m_new). A row with no visible key so far stays at m = -inf, l = 0, p = 0.
inline void softmax_step(float* s, int64_t bn, float mx, float& m_run, float& l_run, float* o, int64_t dvp) {
  const float m_new = mx > m_run ? mx : m_run;
  if (m_new == kNegInf) {
    for (int64_t c = 0; c < bn; c += kLanes) vstore(s + c, vzero());
    return;
  }
  const V vm = vset(m_new);
  V vsum = vzero();
  for (int64_t c = 0; c < bn; c += kLanes) {
    const V p = vexp(vsub(vload(s + c), vm));
    vstore(s + c, p);
    vsum = vadd(vsum, p);
  }
  if (m_run != kNegInf && m_new != m_run) {
    const float alpha = std::exp(m_run - m_new);
    const V va = vset(alpha);
    for (int64_t c = 0; c < dvp; c += kLanes) vstore(o + c, vmul(vload(o + c), va));
    l_run *= alpha;
  }
  l_run += hsum(vsum);
  m_run = m_new;
}

// s[c] *= keep[c] (0 or 1), c in [0, bn).
inline void apply_keep(float* s, const uint8_t* keep, int64_t bn) {
  for (int64_t c = 0; c < bn; c += kLanes) vstore(s + c, vmul(vload(s + c), vfrom_u8(keep + c)));
}

}  // namespace ATTN_ISA
}  // namespace attn_cpu
