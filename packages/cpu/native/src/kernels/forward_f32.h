// The fp32 forward kernel (FlashAttention-2 on the CPU), computed transposed: one task = one
// (batch, query head, block of kQB query rows), and per block of kKB keys
//   S^T = K_blk . Q^T      [keys x rows]  (register-blocked micro-kernel, K read in place)
//   online softmax down the columns: one vector holds kLanes query rows, so the running max, the
//                                     running sum and the rescale of O are plain vector ops (no
//                                     horizontal reductions on the critical path)
//   O^T += V_blk^T . P^T    [Dv x rows]   (V read in place)
// Q^T is built once per task; fp32 K and V are read where they are (any strides). Other dtypes
// (fp16, and bf16 where no bf16 unit is used) are converted once per call to fp32 rows.
#pragma once
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "dropout.h"
#include "kernels/order.h"
#include "kernels/rows.h"
#include "memory.h"
#include "problem.h"
#include "thread_pool.h"

namespace attn_cpu {
namespace ATTN_ISA {

// kQB (query rows per task, a multiple of kNV * kLanes) and kKB (keys per block) come from the TU.
static_assert(kQB % (kNV * kLanes) == 0, "query block must fill whole micro-kernel panels");
static_assert(kKB % 4 == 0, "key blocks start at a Philox counter boundary (4 keys per counter)");
constexpr int64_t kGroups = kQB / kLanes;  // vectors across one row of S^T

// Where the rows of K (or V) of one (batch, kv head) live: element (j, e) at base[j*rs + e*es], of
// dtype dt (fp32, or bf16/fp16 read as they are when no conversion pass ran). Paged pools (table
// non-null) hold key j at base[table[j / bs] * block_stride + (j % bs) * rs + e * es] instead:
// rows are contiguous (rs apart) only within a block, so every product walks them by runs.
struct Rows {
  const void* base;
  int64_t rs, es;
  DType dt;
  const int32_t* table = nullptr;  // the sequence's row of the block table; null = plain rows
  int64_t bs = 0, block_stride = 0;
  int64_t first = 0;  // position of key 0 in the row's blocks (sdpaKvCache's leftpadK)
  template <class F>
  void with_elements(const F& f) const {  // f(const T* base) with T the element type
    switch (dt) {
      case DType::kBFloat16:
        return f(static_cast<const Bf16Bits*>(base));
      case DType::kFloat16:
        return f(static_cast<const F16Bits*>(base));
      default:
        return f(static_cast<const float*>(base));
    }
  }
  // f(c0, len, rows) for each run of keys [j0 + c0, j0 + c0 + len) that are rs apart, covering
  // [j0, j0 + n): one run for plain rows (the dense path is the call it always was), one per block
  // touched for paged ones. rows is a const T* to key j0 + c0.
  template <class F>
  void for_runs(int64_t j0, int64_t n, const F& f) const {
    with_elements([&](auto* b) {
      if (!table) {
        f(int64_t{0}, n, b + j0 * rs);
        return;
      }
      for (int64_t c0 = 0; c0 < n;) {
        const int64_t j = first + j0 + c0, blk = j / bs, r = j - blk * bs;
        const int64_t len = n - c0 < bs - r ? n - c0 : bs - r;
        f(c0, len, b + table[blk] * block_stride + r * rs);
        c0 += len;
      }
    });
  }
  // f(rows, rs, es) with the keys [j0, j0 + n) as one run: these rows themselves for plain views,
  // else their `len` elements each copied, in order, into buf as contiguous rows (rs = len, es = 1).
  // For blocks shorter than a key tile: one product call per tile instead of one per block.
  template <class F>
  void as_one_run(int64_t j0, int64_t n, int64_t len, void* buf, const F& f) const {
    if (!table) return with_elements([&](auto* b) { f(b + j0 * rs, rs, es); });
    with_elements([&](auto* b) {
      using T = std::remove_const_t<std::remove_pointer_t<decltype(b)>>;
      T* dst = static_cast<T*>(buf);
      for (int64_t c = 0; c < n; ++c) {
        const int64_t j = first + j0 + c;
        const T* row = b + table[j / bs] * block_stride + (j % bs) * rs;
        if (es == 1) {
          std::memcpy(dst + c * len, row, static_cast<size_t>(len) * sizeof(T));
        } else {
          for (int64_t e = 0; e < len; ++e) dst[c * len + e] = row[e * es];
        }
      }
      f(static_cast<const T*>(dst), len, int64_t{1});
    });
  }
};

// The rows of head h of batch row b of a K or V view, paged or not.
inline Rows view_rows(const View4& v, const PagedKv& pg, int64_t b, int64_t h) {
  if (!pg.table) return {elem_ptr(v, b, h, 0, 0), v.strides[2], v.strides[3], v.dtype};
  return {elem_ptr(v, 0, h, 0, 0),        v.strides[2],  v.strides[3], v.dtype,
          pg.table + b * pg.table_stride, pg.block_size, v.strides[0], pg.key_start ? pg.key_start[b] : 0};
}

struct FwdF32Ctx {
  const FwdProblem* p;
  int64_t G, nqb;
  bool grouped = false;  // one task per (batch, kv head) holding all G x Sq query rows (decode, GQA)
  const int64_t* order;
  int64_t pair0 = 0, npairs = 0;  // chunk of (batch, kv head) pairs converted in kconv / vconv
  float* kconv = nullptr;         // [npairs][Sk][D] when K is not fp32
  float* vconv = nullptr;         // [npairs][Sk][Dv] when V is not fp32
  // Split-KV (key_splits): task t runs key range t % splits (split_blocks key blocks each) of the task
  // t / splits would be unsplit, and writes its rows to `part` (out and lse of [splits * B, Hq, Sq], fp32).
  int64_t splits = 1, split_blocks = 0;
  const FwdProblem* part = nullptr;

  Rows k_rows(int64_t b, int64_t hk) const {
    const Dims& d = p->dims;
    if (!kconv) return view_rows(p->k, p->paged, b, hk);
    return {kconv + (b * d.Hk + hk - pair0) * d.Sk * d.D, d.D, 1, DType::kFloat32};
  }
  Rows v_rows(int64_t b, int64_t hk) const {
    const Dims& d = p->dims;
    if (!vconv) return view_rows(p->v, p->paged, b, hk);
    return {vconv + (b * d.Hk + hk - pair0) * d.Sk * d.Dv, d.Dv, 1, DType::kFloat32};
  }
};

// Converts 64 rows of K and V of one pair to fp32 (only for non-fp32 inputs).
inline void fwd_f32_convert_task(const FwdF32Ctx& cx, int64_t t) {
  const FwdProblem& p = *cx.p;
  const Dims& d = p.dims;
  const int64_t nrb = (d.Sk + 63) / 64;
  const int64_t lp = t / nrb, j0 = (t % nrb) * 64, j1 = d.Sk < j0 + 64 ? d.Sk : j0 + 64;
  const int64_t pair = cx.pair0 + lp, b = pair / d.Hk, hk = pair % d.Hk;
  for (int64_t j = j0; j < j1; ++j) {
    if (cx.kconv)
      load_row(cx.kconv + (lp * d.Sk + j) * d.D, kv_row(p.k, p.paged, b, hk, j), p.k.dtype, d.D, p.k.strides[3]);
    if (cx.vconv)
      load_row(cx.vconv + (lp * d.Sk + j) * d.Dv, kv_row(p.v, p.paged, b, hk, j), p.v.dtype, d.Dv, p.v.strides[3]);
  }
}

// Prefetches rows [j0, j0 + n) of `len` elements towards L2.
inline void prefetch_rows(const Rows& r, int64_t j0, int64_t n, int64_t len) {
  const int64_t bytes = dtype_bytes(r.dt);
  const int64_t span = ((len - 1) * r.es + 1) * bytes;  // bytes a row covers
  r.for_runs(j0, n, [&](int64_t, int64_t m, auto* rows) {
    const char* base = reinterpret_cast<const char*>(rows);
    for (int64_t j = 0; j < m; ++j)
      for (int64_t e = 0; e < span; e += 64) __builtin_prefetch(base + j * r.rs * bytes + e, 0, 2);
  });
}

// The scratch of one task, carved from the thread's scratch area.
struct F32Tile {
  float *qt, *st, *ot, *m, *l, *lo, *hi, *ipos, *slope, *cmax, *tmp;
  int64_t *rlo, *rhi;
  int64_t *rh, *ri;  // query head and position of each row (rows of one head, or of a GQA group)
  uint8_t* keep;
  void* kvg;                // a key tile of K and of V rows gathered from blocks shorter than it (paged K/V)
  int ng = kGroups;         // vector groups in use: ceil(rows / kLanes); columns past them are not computed
  bool cmax_ready = false;  // cmax holds the column max of the raw S^T of this block
  // tmp holds a row of Q, of O, of the mask, or kQB alphas.
  static int64_t tmp_len(const Dims& d) {
    int64_t n = d.D > d.Dv ? d.D : d.Dv;
    n = n > kKB ? n : kKB;
    return (n > kQB ? n : kQB) + 16;
  }
  static size_t bytes(const Dims& d) {
    const size_t f = static_cast<size_t>(d.D * kQB + kKB * kQB + d.Dv * kQB + 7 * kQB + tmp_len(d));
    return f * 4 + 4 * kQB * 8 + kKB + 256 + static_cast<size_t>(kKB * (d.D + d.Dv)) * 4 + 64;
  }
  static F32Tile carve(void* base, const Dims& d) {
    F32Tile t;
    t.qt = static_cast<float*>(base);
    t.st = t.qt + d.D * kQB;
    t.ot = t.st + kKB * kQB;
    t.m = t.ot + d.Dv * kQB;
    t.l = t.m + kQB;
    t.lo = t.l + kQB;
    t.hi = t.lo + kQB;
    t.ipos = t.hi + kQB;
    t.slope = t.ipos + kQB;
    t.cmax = t.slope + kQB;
    t.tmp = t.cmax + kQB;
    t.rlo = reinterpret_cast<int64_t*>(round_up(reinterpret_cast<uintptr_t>(t.tmp + tmp_len(d)), 64));
    t.rhi = t.rlo + kQB;
    t.rh = t.rhi + kQB;
    t.ri = t.rh + kQB;
    t.keep = reinterpret_cast<uint8_t*>(t.ri + kQB);
    t.kvg = reinterpret_cast<void*>(round_up(reinterpret_cast<uintptr_t>(t.keep + kKB), 64));
    return t;
  }
};

// Rows r < m of a task are (query head t.rh[r], position t.ri[r]); fills what the softmax reads
// per row (visible keys, ALiBi distance base and slope) and resets the running max and sum.
// Padding rows up to kQB see nothing.
inline void setup_rows(const FwdProblem& p, const F32Tile& t, int64_t b, int64_t m) {
  const ScoreMods& md = p.mods;
  for (int64_t r = 0; r < kQB; ++r) {
    t.m[r] = kNegInf;
    t.l[r] = 0.f;
    const bool real = r < m;
    const int64_t i = real ? t.ri[r] : 0, h = real ? t.rh[r] : t.rh[0];
    t.ipos[r] = static_cast<float>(i + md.align_offset);
    t.slope[r] = md.alibi ? md.alibi[b * md.alibi_sb + h * md.alibi_sh] : 0.f;
    const RowRange rr = real ? key_range(md, p.dims.Sk, i) : RowRange{1, 0};
    t.rlo[r] = rr.lo;
    t.rhi[r] = rr.hi;
  }
}

// Applies the mask of the task's rows (one head: hm's) x keys [j0, j0+n) to S^T (st[c * kQB + r]):
// an additive mask adds; a bool mask replaces masked logits with -inf (adding -inf would keep a
// NaN logit NaN, where the reference drops the masked key whatever its score).
inline void add_mask_t(float* st, const HeadMods& hm, const int64_t* ri, int64_t m, int64_t j0, int64_t n, float* tmp) {
  const bool is_bool = hm.m->mask_is_bool;
  for (int64_t r = 0; r < m; ++r) {
    mask_row(tmp, hm, ri[r], j0, n, n);
    if (is_bool) {
      for (int64_t c = 0; c < n; ++c)
        if (tmp[c] != 0.f) st[c * kQB + r] = kNegInf;
    } else {
      for (int64_t c = 0; c < n; ++c) st[c * kQB + r] += tmp[c];
    }
  }
}

// Lazy rescaling (as FlashAttention-4): the running max m of a row moves only when the block's max
// exceeds it by more than kRescaleLog2, so most blocks skip the rescale of O; probabilities are
// then at most 2^kRescaleLog2, far from fp32 overflow. m and l are in log2 units.
constexpr float kRescaleLog2 = 8.f;
constexpr float kLog2e = 1.44269504088896341f;

// The per-group maxima of the two passes below live in a local array of NG (a constant) vectors:
// GCC then keeps them in registers. Indexed by a run-time count (NG = 0: `ng` groups) they live on
// the stack, a store-to-load chain per vector (~8% of the bf16 kernel, whose max pass is separate).
template <int NG>
inline void column_max(const float* st, int64_t n, int ng_rt, V* mx) {
  constexpr int kMax = NG > 0 ? NG : kGroups;
  const int ng = NG > 0 ? NG : ng_rt;
  V a[kMax];
  for (int g = 0; g < kMax; ++g) a[g] = vset(kNegInf);
  for (int64_t c = 0; c < n; ++c) {
    const float* row = st + c * kQB;
    for (int g = 0; g < ng; ++g) a[g] = vmax(vload(row + g * kLanes), a[g]);
  }
  for (int g = 0; g < ng; ++g) mx[g] = a[g];
}

// S^T *= vs, minus ALiBi, -inf outside each row's visible keys; mx = the column maxima.
template <int NG>
inline void logits_t(const F32Tile& t, bool alibi, V vs, int64_t j0, int64_t n, int ng_rt, V* mx) {
  constexpr int kMax = NG > 0 ? NG : kGroups;
  const int ng = NG > 0 ? NG : ng_rt;
  V a[kMax];
  for (int g = 0; g < kMax; ++g) a[g] = vset(kNegInf);
  for (int64_t c = 0; c < n; ++c) {
    float* row = t.st + c * kQB;
    const V vc = vset(static_cast<float>(c)), vj = vset(static_cast<float>(j0 + c));
    for (int g = 0; g < ng; ++g) {
      V x = vmul(vload(row + g * kLanes), vs);
      if (alibi)  // slope per row: a task may hold several heads
        x = vsub(x, vmul(vload(t.slope + g * kLanes), vabs(vsub(vload(t.ipos + g * kLanes), vj))));
      x = vkeep_range2(x, vc, vload(t.lo + g * kLanes), vload(t.hi + g * kLanes));
      vstore(row + g * kLanes, x);
      a[g] = vmax(x, a[g]);
    }
  }
  for (int g = 0; g < ng; ++g) mx[g] = a[g];
}

// The first half of an online-softmax step on the S^T tile of n keys: logits and their block max,
// and the move of the running max m (rescaling l and O^T where it moves). Returns, per group of
// lanes, the shift and the unit such that P^T = exp2(S^T * unit - shift).
inline float softmax_begin_t(const FwdF32Ctx& cx, const HeadMods& hm, const F32Tile& t, int64_t m, int64_t j0,
                             int64_t n, bool full, V* shift) {
  const FwdProblem& p = *cx.p;
  float* st = t.st;
  V mx[kGroups];
  for (int g = 0; g < kGroups; ++g) mx[g] = vset(kNegInf);
  // After this pass S^T holds values whose product with `unit` is the logit in log2 units.
  float unit;
  if (full) {
    // Every key visible to every row, nothing added, scale > 0: the max of the raw dot products
    // gives the max logit; the scale is applied inside the exponent below.
    unit = hm.scale * kLog2e;
    if (t.cmax_ready) {
      for (int g = 0; g < t.ng; ++g) mx[g] = vload(t.cmax + g * kLanes);  // from the S^T micro-kernel
    } else if (t.ng == kGroups) {
      column_max<kGroups>(st, n, kGroups, mx);
    } else {
      column_max<0>(st, n, t.ng, mx);
    }
  } else {
    unit = kLog2e;
    const V vscale = vset(hm.scale);
    const bool cap = hm.softcap > 0.f;
    const V vcap = vset(hm.softcap), vinv = vset(hm.inv_softcap);
    // Visible keys of each row, relative to j0 (clamped so they stay exact in fp32).
    for (int64_t r = 0; r < kQB; ++r) {
      const int64_t lo = t.rlo[r] - j0, hi = t.rhi[r] - j0;
      t.lo[r] = static_cast<float>(lo < -1 ? -1 : lo > n ? n : lo);
      t.hi[r] = static_cast<float>(hi < -1 ? -1 : hi > n ? n : hi);
    }
    if (cap) {
      for (int64_t e = 0; e < n * kQB; e += kLanes)
        vstore(st + e, vmul(vcap, vtanh(vmul(vmul(vload(st + e), vscale), vinv))));
    }
    if (hm.has_mask) {
      if (!cap)
        for (int64_t e = 0; e < n * kQB; e += kLanes) vstore(st + e, vmul(vload(st + e), vscale));
      add_mask_t(st, hm, t.ri, m, j0, n, t.tmp);
    }
    const V vs = cap || hm.has_mask ? vset(1.f) : vscale;
    if (t.ng == kGroups)
      logits_t<kGroups>(t, hm.has_alibi, vs, j0, n, kGroups, mx);
    else
      logits_t<0>(t, hm.has_alibi, vs, j0, n, t.ng, mx);
  }
  // Move m where the block's max exceeds it by more than the threshold (or m is still -inf).
  // shift = max(m, -FLT_MAX) keeps exp2(-inf - shift) = 0 for rows with nothing visible yet.
  const V vunit = vset(unit), th = vset(kRescaleLog2);
  V alpha[kGroups];
  bool rescale = false;
  for (int g = 0; g < kGroups; ++g) {
    const V mold = vload(t.m + g * kLanes);
    const V mblk = vmul(mx[g], vunit);
    alpha[g] = vset(1.f);
    if (vany_gt(mblk, vadd(mold, th))) {
      const V mnew = vmax(mblk, mold);
      alpha[g] = vexp2(vsub(mold, vmax(vset(-FLT_MAX), mnew)));
      vstore(t.m + g * kLanes, mnew);
      vstore(t.l + g * kLanes, vmul(vload(t.l + g * kLanes), alpha[g]));
      rescale = true;
    }
    shift[g] = vmax(vset(-FLT_MAX), vload(t.m + g * kLanes));
  }
  if (rescale && t.ng == kGroups) {
    for (int64_t e = 0; e < p.dims.Dv; ++e) {
      float* row = t.ot + e * kQB;
#pragma GCC unroll 8
      for (int g = 0; g < kGroups; ++g) vstore(row + g * kLanes, vmul(vload(row + g * kLanes), alpha[g]));
    }
  } else if (rescale) {  // a short task: O^T holds its first ng groups of columns only (fwd_f32_task)
    for (int64_t e = 0; e < p.dims.Dv; ++e) {
      float* row = t.ot + e * kQB;
      for (int g = 0; g < t.ng; ++g) vstore(row + g * kLanes, vmul(vload(row + g * kLanes), alpha[g]));
    }
  }
  return unit;
}
// The exponent of P = 2^(s * unit - shift), shift = the row's running max m = max(s) * unit rounded.
// Fused (the default), s * unit is exact before the subtraction, so the row's max gets the rounding
// residual of m instead of 0: harmless while |m| < kFusedShiftMax (the residual is at most half an
// ulp of m, <= 0.5), but for logits beyond that (planted 1e12 .. 1e20) it reaches +-100 and more,
// and P of the max becomes 0 (l = 0, out Inf or NaN) or Inf. kRounded forms the product rounded,
// as m was, so the max gets exactly 2^0; blocks take it only when some |shift| is that large.
constexpr float kFusedShiftMax = 16777216.f;  // 2^24

template <bool kRounded>
inline V exp_arg(V s, V vunit, V neg) {
  return kRounded ? vadd(vmul_round(s, vunit), neg) : vfma(s, vunit, neg);
}

inline bool needs_rounded_exp(const V* shift) {
  const V th = vset(kFusedShiftMax);
  bool huge = false;
  for (int g = 0; g < kGroups; ++g) huge |= vany_gt(vabs(shift[g]), th);
  return huge;
}

// P^T = exp2(S^T * unit - shift) in place over n keys, and l += its column sums.
template <bool kRounded>
inline void softmax_exp_t_as(const F32Tile& t, int64_t n, float unit, const V* shift) {
  const V vunit = vset(unit);
  V sum[kGroups], neg[kGroups];
  for (int g = 0; g < kGroups; ++g) {
    sum[g] = vzero();
    neg[g] = vsub(vzero(), shift[g]);
  }
  for (int64_t c = 0; c < n; ++c) {
    float* row = t.st + c * kQB;
    for (int g = 0; g < t.ng; ++g) {
      // Exponents are at most kRescaleLog2 (lazy rescaling), so the overflow clamp is not needed.
      const V pv = vexp2_upto127(exp_arg<kRounded>(vload(row + g * kLanes), vunit, neg[g]));
      vstore(row + g * kLanes, pv);
      sum[g] = vadd(sum[g], pv);
    }
  }
  for (int g = 0; g < kGroups; ++g) vstore(t.l + g * kLanes, vadd(vload(t.l + g * kLanes), sum[g]));
}

inline void softmax_exp_t(const F32Tile& t, int64_t n, float unit, const V* shift) {
  if (needs_rounded_exp(shift))
    softmax_exp_t_as<true>(t, n, unit, shift);
  else
    softmax_exp_t_as<false>(t, n, unit, shift);
}

// Dropout on P^T (after l took the undropped sums): element (row r, key j0 + c) is zeroed unless kept.
inline void dropout_t(const FwdProblem& p, const F32Tile& t, int64_t b, int64_t m, int64_t j0, int64_t n) {
  for (int64_t c0 = 0; c0 < n; c0 += 64) {
    const int64_t len = n - c0 < 64 ? n - c0 : 64;
    const uint64_t valid = len == 64 ? ~uint64_t{0} : (uint64_t{1} << len) - 1;
    for (int64_t r = 0; r < m; ++r) {
      const uint32_t bh = static_cast<uint32_t>((b + p.mods.drop_b0) * p.dims.Hq + t.rh[r]);
      // Zero the dropped ones: walk the clear bits of the keep mask.
      for (uint64_t z = ~keep_mask64(p.mods, bh, static_cast<uint32_t>(t.ri[r]), j0 + c0) & valid; z; z &= z - 1)
        t.st[(c0 + __builtin_ctzll(z)) * kQB + r] = 0.f;
    }
  }
}

// One online-softmax step on the S^T tile of n keys: S^T becomes P^T; m, l and O^T are updated.
inline void softmax_block_t(const FwdF32Ctx& cx, const HeadMods& hm, const F32Tile& t, int64_t b, int64_t m, int64_t j0,
                            int64_t n, bool full) {
  V shift[kGroups];
  const float unit = softmax_begin_t(cx, hm, t, m, j0, n, full, shift);
  softmax_exp_t(t, n, unit, shift);
  if (cx.p->mods.has_dropout) dropout_t(*cx.p, t, b, m, j0, n);
}

// The task's output rows from O^T [Dv][kQB]: out[i0 + r] = O^T[:, r] * keep_scale / l[r], and
// lse = (m + log2 l) ln 2. Rows that saw no key: 0 and -inf. A row whose logits were all NaN keeps
// m = -inf (the max drops NaN) but its sum l is NaN: it is not empty, and gives NaN out and lse.
inline void store_out_t(const FwdProblem& p, const F32Tile& t, int64_t b, int64_t m) {
  const Dims& d = p.dims;
  // Dense rows of one head: their span is this task's alone; fault its pages in with one call.
  const int64_t eb = dtype_bytes(p.out.dtype);
  if (m > 1 && t.rh[0] == t.rh[m - 1] && p.out.strides[3] == 1 && p.out.strides[2] == d.Dv) {
    char* first = static_cast<char*>(elem_ptr(p.out, b, t.rh[0], t.ri[0], 0));
    prefault_for_write(first, first + m * d.Dv * eb);
  }
  for (int64_t r = 0; r < m; ++r) {
    const int64_t i = t.ri[r], h = t.rh[r];
    const bool empty = t.m[r] == kNegInf && t.l[r] == 0.f;
    const float inv = empty ? 0.f : p.mods.keep_scale / t.l[r];
    const V vinv = vset(inv);
    int64_t e = 0;
    for (; e + kLanes <= d.Dv; e += kLanes)
      vstore(t.tmp + e, vmul(vgather_stride(t.ot + e * kQB + r, static_cast<int32_t>(kQB)), vinv));
    for (; e < d.Dv; ++e) t.tmp[e] = t.ot[e * kQB + r] * inv;
    store_row(elem_ptr(p.out, b, h, i, 0), p.out.dtype, t.tmp, d.Dv, p.out.strides[3]);
    p.lse[b * p.lse_sb + h * p.lse_sh + i] = empty ? kNegInf : (t.m[r] + std::log2(t.l[r])) * 0.693147180559945309f;
  }
}

inline void fwd_f32_task(const FwdF32Ctx& cx, int64_t task_split) {
  const FwdProblem& p = *cx.p;
  const Dims& d = p.dims;
  const ScoreMods& md = p.mods;
  F32Tile t = F32Tile::carve(thread_scratch(F32Tile::bytes(d)), d);
  const int64_t task = task_split / cx.splits, split = task_split % cx.splits;
  int64_t pair, m, ifirst, ilast;
  if (cx.grouped) {
    // One task per (batch, kv head): its G query heads x Sq rows share one pass over K and V.
    pair = cx.pair0 + task;
    m = cx.G * d.Sq;
    for (int64_t r = 0; r < m; ++r) {
      t.rh[r] = (pair % d.Hk) * cx.G + r / d.Sq;
      t.ri[r] = r % d.Sq;
    }
    ifirst = 0;
    ilast = d.Sq - 1;
  } else {
    // Head-major: consecutive tasks share a head, so its K and V stay in this core's L2; within a
    // head the query blocks come by decreasing work.
    const int64_t head = task / cx.nqb, qb = cx.order[task % cx.nqb];
    pair = cx.pair0 + head / cx.G;
    const int64_t h = (pair % d.Hk) * cx.G + head % cx.G, i0 = qb * kQB;
    m = d.Sq - i0 < kQB ? d.Sq - i0 : kQB;
    for (int64_t r = 0; r < m; ++r) {
      t.rh[r] = h;
      t.ri[r] = i0 + r;
    }
    ifirst = i0;
    ilast = i0 + m - 1;
  }
  const int64_t b = pair / d.Hk, hk = pair % d.Hk;
  t.ng = static_cast<int>((m + kLanes - 1) / kLanes);  // short blocks (decode, tails) compute only their rows

  // Q^T [D][kQB] and O^T [Dv][kQB] in the columns the products compute (nc: rows up to the last vector group),
  // Q^T zero past row m. The columns past nc are never read (a decode task's m is a few rows: writing all kQB
  // columns of both was most of a short split task's time).
  const int64_t nc = t.ng * kLanes;
  for (int64_t r = 0; r < nc; ++r) {
    if (r < m) load_row(t.tmp, elem_ptr(p.q, b, t.rh[r], t.ri[r], 0), p.q.dtype, d.D, p.q.strides[3]);
    for (int64_t e = 0; e < d.D; ++e) t.qt[e * kQB + r] = r < m ? t.tmp[e] : 0.f;
  }
  for (int64_t e = 0; e < d.Dv; ++e)
    for (int64_t r = 0; r < nc; ++r) t.ot[e * kQB + r] = 0.f;
  setup_rows(p, t, b, m);
  const HeadMods hm = head_mods(md, d.Sk, b, t.rh[0]);  // per-head parts (mask) only when ungrouped
  const RowRange first = key_range(md, d.Sk, ifirst), last = key_range(md, d.Sk, ilast);
  const Rows kr = cx.k_rows(b, hk), vr = cx.v_rows(b, hk);
  const bool stream = d.Sk * (d.D + d.Dv) * 4 > (int64_t{1} << 20);
  const bool small_blocks = kr.table && kr.bs < kKB;  // both K and V come paged, or neither
  // The key blocks the rows see, within this task's key range when split.
  int64_t kb_lo = first.lo / kKB, kb_hi = last.hi / kKB;
  if (cx.splits > 1) {
    kb_lo = kb_lo > split * cx.split_blocks ? kb_lo : split * cx.split_blocks;
    kb_hi = kb_hi < (split + 1) * cx.split_blocks - 1 ? kb_hi : (split + 1) * cx.split_blocks - 1;
  }
  if (first.lo <= last.hi) {
    for (int64_t kb = kb_lo; kb <= kb_hi; ++kb) {
      const int64_t j0 = kb * kKB, n = d.Sk - j0 < kKB ? d.Sk - j0 : kKB;
      if (stream) {
        // K and V of a head larger than L2 stream from memory: fetch the next block's rows while
        // this one computes (the broadcast loads of the micro-kernel cannot hide that latency).
        const int64_t j1 = j0 + kKB, n1 = d.Sk - j1 < kKB ? d.Sk - j1 : kKB;
        prefetch_rows(kr, j1, n1, d.D);
        prefetch_rows(vr, j1, n1, d.Dv);
      }
      // S^T[c][r] = sum_e K[j0+c][e] Q[row r][e]; the block max comes out of the micro-kernel.
      const bool full = hm.simple && hm.scale > 0.f && last.lo <= j0 && first.hi >= j0 + n - 1;
      if (full)
        for (int64_t r = 0; r < kQB; ++r) t.cmax[r] = kNegInf;
      if (small_blocks) {
        // Blocks shorter than the tile: each product runs once on the tile's rows gathered together.
        char* kg = static_cast<char*>(t.kvg);
        kr.as_one_run(j0, n, d.D, kg, [&](auto* k, int64_t rs, int64_t es) {
          gemm<false>(n, t.ng * kLanes, d.D, k, rs, es, t.qt, kQB, t.st, kQB, full ? t.cmax : nullptr);
        });
        t.cmax_ready = full;
        softmax_block_t(cx, hm, t, b, m, j0, n, full);
        vr.as_one_run(j0, n, d.Dv, kg + kKB * d.D * 4, [&](auto* v, int64_t rs, int64_t es) {
          gemm<true>(d.Dv, t.ng * kLanes, n, v, es, rs, t.st, kQB, t.ot, kQB);
        });
        continue;
      }
      kr.for_runs(j0, n, [&](int64_t c0, int64_t len, auto* k) {
        gemm<false>(len, t.ng * kLanes, d.D, k, kr.rs, kr.es, t.qt, kQB, t.st + c0 * kQB, kQB, full ? t.cmax : nullptr);
      });
      t.cmax_ready = full;
      softmax_block_t(cx, hm, t, b, m, j0, n, full);
      // O^T[e][r] += sum_c V[j0+c][e] P^T[c][r]
      vr.for_runs(j0, n, [&](int64_t c0, int64_t len, auto* v) {
        gemm<true>(d.Dv, t.ng * kLanes, len, v, vr.es, vr.rs, t.st + c0 * kQB, kQB, t.ot, kQB);
      });
    }
  }
  // A split's rows go to its own batch rows of the partials: [split * B + b].
  if (cx.splits > 1)
    store_out_t(*cx.part, t, split * d.B + b, m);
  else
    store_out_t(p, t, b, m);
}

// Merges the split partials of query head h of batch row b (rows i of Sq) into p's out and lse: out = the
// partials weighted by exp(lse_s - lse), lse = log sum exp(lse_s). Splits whose keys the row never sees have
// lse_s = -inf (weight 0); a row no split saw gives 0 and -inf, as the unsplit kernel; a NaN lse_s (NaN logits)
// gives NaN out and lse.
inline void merge_splits_task(const FwdF32Ctx& cx, int64_t bh, float* w) {
  const FwdProblem& p = *cx.p;
  const FwdProblem& part = *cx.part;
  const Dims& d = p.dims;
  const int64_t b = bh / d.Hq, h = bh % d.Hq;
  for (int64_t i = 0; i < d.Sq; ++i) {
    float mx = kNegInf;
    bool nan = false;
    for (int64_t s = 0; s < cx.splits; ++s) {
      const float l = part.lse[(s * d.B + b) * part.lse_sb + h * part.lse_sh + i];
      nan = nan || l != l;
      mx = l > mx ? l : mx;
    }
    float sum = 0.f;
    for (int64_t s = 0; s < cx.splits; ++s) {
      const float l = part.lse[(s * d.B + b) * part.lse_sb + h * part.lse_sh + i];
      w[s] = l == kNegInf ? 0.f : std::exp(l - mx);
      sum += w[s];
    }
    float* acc = w + cx.splits;
    for (int64_t e = 0; e < d.Dv; ++e) acc[e] = 0.f;
    if (nan) {
      for (int64_t e = 0; e < d.Dv; ++e) acc[e] = NAN;
    } else if (mx != kNegInf) {
      for (int64_t s = 0; s < cx.splits; ++s) {
        if (w[s] == 0.f) continue;  // a range the row never saw: its partial row is 0
        const float ws = w[s] / sum;
        const float* o = static_cast<const float*>(elem_ptr(part.out, s * d.B + b, h, i, 0));
        for (int64_t e = 0; e < d.Dv; ++e) acc[e] += ws * o[e];
      }
    }
    store_row(elem_ptr(p.out, b, h, i, 0), p.out.dtype, acc, d.Dv, p.out.strides[3]);
    p.lse[b * p.lse_sb + h * p.lse_sh + i] = nan ? NAN : mx == kNegInf ? kNegInf : mx + std::log(sum);
  }
}

// Each K/V element serves at most kQB query rows (decode and other short queries): a conversion
// or packing pass over K and V would cost as much as the attention itself.
inline bool short_queries(const FwdProblem& p) { return (p.dims.Hq / p.dims.Hk) * p.dims.Sq <= kQB; }

// Split-KV for short queries over few (batch, kv head) pairs (decode of one or a few sequences): the keys go in
// up to kMaxKeySplits ranges of at least kSplitMinKeys, enough for about kSplitTasks tasks, each range's rows
// merged by logsumexp after (merge_splits_task). From the shape alone, never the thread count: a call gives the
// same bits at every thread count.
constexpr int64_t kSplitTasks = 64;
constexpr int64_t kSplitMinKeys = 512;
constexpr int64_t kMaxKeySplits = 32;
inline int64_t key_splits(const FwdProblem& p) {
  const Dims& d = p.dims;
  if (!short_queries(p)) return 1;
  const int64_t pairs = d.B * d.Hk;
  int64_t s = (kSplitTasks + pairs - 1) / pairs;
  const int64_t by_keys = d.Sk / kSplitMinKeys;
  s = s < by_keys ? s : by_keys;
  s = s < kMaxKeySplits ? s : kMaxKeySplits;
  return s < 2 ? 1 : s;
}

// Short queries under GQA: the G heads of a kv head go into one task and read K and V once,
// together, when there are enough tasks (pairs x key ranges) to keep the threads busy.
inline bool groups_queries(const FwdProblem& p, int64_t splits) {
  const Dims& d = p.dims;
  return d.Hq > d.Hk && !p.mods.has_mask && short_queries(p) && 2 * d.B * d.Hk * splits >= p.threads;
}

// Converted K/V bytes allowed per chunk of (batch, kv head) pairs.
constexpr int64_t kConvertBudget = int64_t{256} << 20;

inline void forward_f32(const FwdProblem& p) {
  const Dims& d = p.dims;
  FwdF32Ctx cx;
  cx.p = &p;
  cx.G = d.Hq / d.Hk;
  cx.nqb = (d.Sq + kQB - 1) / kQB;
  Buffer<int64_t> order(static_cast<size_t>(cx.nqb)), work(static_cast<size_t>(cx.nqb));
  order_query_blocks(p.mods, d, kQB, kKB, order.get(), work.get());
  cx.order = order.get();
  cx.splits = key_splits(p);
  cx.grouped = groups_queries(p, cx.splits);
  // fp16/bf16 K and V: converted to fp32 rows once per call when many query rows reuse them;
  // short queries (decode) read each element about once: convert it as it is broadcast.
  const bool conv_k = p.k.dtype != DType::kFloat32 && !short_queries(p);
  const bool conv_v = p.v.dtype != DType::kFloat32 && !short_queries(p);
  const int64_t pairs = d.B * d.Hk;
  const int64_t pair_bytes = d.Sk * ((conv_k ? d.D : 0) + (conv_v ? d.Dv : 0)) * 4;
  int64_t chunk = pair_bytes > 0 ? kConvertBudget / pair_bytes : pairs;
  chunk = chunk < 1 ? 1 : chunk > pairs ? pairs : chunk;
  CallBuffer<float> kc(conv_k ? static_cast<size_t>(chunk * d.Sk * d.D) : 0);
  CallBuffer<float> vc(conv_v ? static_cast<size_t>(chunk * d.Sk * d.Dv) : 0);
  cx.kconv = kc.get();
  cx.vconv = vc.get();
  // Split partials (short queries convert nothing, so the pairs are one chunk): out and lse of each key range.
  const int64_t rows = d.B * d.Hq * d.Sq;
  CallBuffer<float> parts(cx.splits > 1 ? static_cast<size_t>(cx.splits * rows * (d.Dv + 1)) : 0);
  FwdProblem part;
  if (cx.splits > 1) {
    const int64_t blocks = (d.Sk + kKB - 1) / kKB;
    cx.split_blocks = (blocks + cx.splits - 1) / cx.splits;
    part = p;
    part.out = View4{parts.get(), DType::kFloat32, {d.Hq * d.Sq * d.Dv, d.Sq * d.Dv, d.Dv, 1}};
    part.lse = parts.get() + cx.splits * rows * d.Dv;
    part.lse_sb = d.Hq * d.Sq;
    part.lse_sh = d.Sq;
    cx.part = &part;
  }
  for (int64_t pair0 = 0; pair0 < pairs; pair0 += chunk) {
    cx.pair0 = pair0;
    cx.npairs = pairs - pair0 < chunk ? pairs - pair0 : chunk;
    if (conv_k || conv_v)
      parallel_for_each(cx.npairs * ((d.Sk + 63) / 64), p.threads, [&](int64_t t) { fwd_f32_convert_task(cx, t); });
    const int64_t tasks = cx.grouped ? cx.npairs : cx.npairs * cx.G * cx.nqb;
    parallel_for_each(tasks * cx.splits, p.threads, [&](int64_t t) { fwd_f32_task(cx, t); }, Claim::kRanges);
  }
  if (cx.splits > 1)
    parallel_for_each(d.B * d.Hq, p.threads, [&](int64_t bh) {
      float* w = static_cast<float*>(thread_scratch(static_cast<size_t>(cx.splits + d.Dv) * sizeof(float)));
      merge_splits_task(cx, bh, w);
    });
}

}  // namespace ATTN_ISA
}  // namespace attn_cpu
