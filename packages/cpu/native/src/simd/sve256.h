// 8 x fp32 vectors on SVE with 256-bit registers (Neoverse V1: Graviton3). Included only by
// isa_sve256.cpp, compiled with -march=armv8.2-a+sve -msve-vector-bits=256: the vector length is
// fixed at build time (sizeless SVE types cannot be struct members; fixed-length ones can), so this
// code runs only where the kernel's vector length is 256 bits (dispatch.cpp checks PR_SVE_GET_VL).
// Each function keeps the semantics simd/avx2.h documents, as simd/neon.h does.
#pragma once
#include <arm_sve.h>

#include <cstdint>

#include "dropout.h"
#include "problem.h"

namespace attn_cpu {
namespace ATTN_ISA {

constexpr int kLanes = 8;
constexpr const char* kIsaName = "sve256";

typedef svfloat32_t f32x8 __attribute__((arm_sve_vector_bits(256)));
typedef svuint32_t u32x8 __attribute__((arm_sve_vector_bits(256)));
typedef svint32_t s32x8 __attribute__((arm_sve_vector_bits(256)));

struct V {
  f32x8 r;
};

inline svbool_t all() { return svptrue_b32(); }
inline V vzero() { return {svdup_n_f32(0.f)}; }
inline V vset(float x) { return {svdup_n_f32(x)}; }
inline V vload(const float* p) { return {svld1_f32(all(), p)}; }
inline void vstore(float* p, V a) { svst1_f32(all(), p, a.r); }
inline V vadd(V a, V b) { return {svadd_f32_x(all(), a.r, b.r)}; }
inline V vsub(V a, V b) { return {svsub_f32_x(all(), a.r, b.r)}; }
inline V vmul(V a, V b) { return {svmul_f32_x(all(), a.r, b.r)}; }
// a * b rounded to float and never fused into a following add (see simd/neon.h).
inline V vmul_round(V a, V b) {
  f32x8 r = svmul_f32_x(all(), a.r, b.r);
  __asm__("" : "+w"(r));
  return {r};
}
inline V vdiv(V a, V b) { return {svdiv_f32_x(all(), a.r, b.r)}; }
inline V vfma(V a, V b, V c) { return {svmla_f32_x(all(), c.r, a.r, b.r)}; }
// As x86's maxps / minps: the second operand when either is NaN.
inline V vmax(V a, V b) { return {svsel_f32(svcmpgt_f32(all(), a.r, b.r), a.r, b.r)}; }
inline V vmin(V a, V b) { return {svsel_f32(svcmplt_f32(all(), a.r, b.r), a.r, b.r)}; }
inline V vabs(V a) { return {svabs_f32_x(all(), a.r)}; }
inline float hmax(V a) { return svmaxv_f32(all(), a.r); }
inline float hsum(V a) { return svaddv_f32(all(), a.r); }
inline V viota() { return {svcvt_f32_s32_x(all(), svindex_s32(0, 1))}; }
inline V vkeep_range2(V x, V c, V lo, V hi) {
  const svbool_t in = svand_b_z(all(), svcmpge_f32(all(), c.r, lo.r), svcmple_f32(all(), c.r, hi.r));
  return {svsel_f32(in, x.r, svdup_n_f32(-__builtin_inff()))};
}
inline V vkeep_range(V x, V c, float lo, float hi) { return vkeep_range2(x, c, vset(lo), vset(hi)); }
inline V vfrom_u8(const uint8_t* p) { return {svcvt_f32_u32_x(all(), svld1ub_u32(all(), p))}; }

// exp(x) as simd/avx2.h: Cephes' polynomial, 2^n in the exponent field; below x = -87 flushed to
// 0, so exp(-inf) = 0; NaN keeps the polynomial's NaN.
inline V vexp(V x) {
  const svbool_t pg = all();
  const f32x8 lo = svdup_n_f32(-87.f), hi = svdup_n_f32(88.3762626f);
  f32x8 t = svsel_f32(svcmpgt_f32(pg, lo, x.r), lo, x.r);
  t = svsel_f32(svcmplt_f32(pg, hi, t), hi, t);
  const f32x8 n = svrintn_f32_x(pg, svmul_n_f32_x(pg, t, 1.44269504088896341f));
  f32x8 r = svmls_f32_x(pg, t, n, svdup_n_f32(0.693359375f));
  r = svmls_f32_x(pg, r, n, svdup_n_f32(-2.12194440e-4f));
  f32x8 p = svdup_n_f32(1.9875691500e-4f);
  p = svmad_f32_x(pg, p, r, svdup_n_f32(1.3981999507e-3f));
  p = svmad_f32_x(pg, p, r, svdup_n_f32(8.3334519073e-3f));
  p = svmad_f32_x(pg, p, r, svdup_n_f32(4.1665795894e-2f));
  p = svmad_f32_x(pg, p, r, svdup_n_f32(1.6666665459e-1f));
  p = svmad_f32_x(pg, p, r, svdup_n_f32(5.0000001201e-1f));
  p = svmad_f32_x(pg, p, svmul_f32_x(pg, r, r), svadd_n_f32_x(pg, r, 1.f));
  const s32x8 e = svlsl_n_s32_x(pg, svadd_n_s32_x(pg, svcvt_s32_f32_x(pg, n), 127), 23);
  const f32x8 y = svmul_f32_x(pg, p, svreinterpret_f32_s32(e));
  return {svsel_f32(svcmplt_f32(pg, x.r, lo), svdup_n_f32(0.f), y)};
}

// 2^x as vexp; below x = -125 flushed to 0 (so 2^-inf = 0).
inline V vexp2(V x) {
  const svbool_t pg = all();
  const f32x8 lo = svdup_n_f32(-125.f), hi = svdup_n_f32(127.f);
  f32x8 t = svsel_f32(svcmpgt_f32(pg, lo, x.r), lo, x.r);
  t = svsel_f32(svcmplt_f32(pg, hi, t), hi, t);
  const f32x8 n = svrintn_f32_x(pg, t);
  const f32x8 f = svsub_f32_x(pg, t, n);
  f32x8 p = svdup_n_f32(1.535336188319500e-4f);
  p = svmad_f32_x(pg, p, f, svdup_n_f32(1.339887440266574e-3f));
  p = svmad_f32_x(pg, p, f, svdup_n_f32(9.618437357674640e-3f));
  p = svmad_f32_x(pg, p, f, svdup_n_f32(5.550332471162809e-2f));
  p = svmad_f32_x(pg, p, f, svdup_n_f32(2.402264791363012e-1f));
  p = svmad_f32_x(pg, p, f, svdup_n_f32(6.931472028550421e-1f));
  p = svmad_f32_x(pg, p, f, svdup_n_f32(1.f));
  const s32x8 e = svlsl_n_s32_x(pg, svadd_n_s32_x(pg, svcvt_s32_f32_x(pg, n), 127), 23);
  const f32x8 y = svmul_f32_x(pg, p, svreinterpret_f32_s32(e));
  return {svsel_f32(svcmplt_f32(pg, x.r, lo), svdup_n_f32(0.f), y)};
}
inline V vgather_stride(const float* p, int32_t stride) {
  return {svld1_gather_s32index_f32(all(), p, svindex_s32(0, stride))};
}
// 2^x for x <= 127 (see avx512.h); here the same as vexp2.
inline V vexp2_upto127(V x) { return vexp2(x); }
// One lane of vfma, rounded exactly as vfma rounds it (fmla is fused).
inline float fma1(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
inline bool vany_gt(V a, V b) { return svptest_any(all(), svcmpgt_f32(all(), a.r, b.r)); }

// Dropout keep bits of keys j0 .. j0+63 (scalar Philox, compiled once in dropout.cpp).
inline uint64_t keep_mask64(const ScoreMods& md, uint32_t bh, uint32_t i, int64_t j0) {
  return dropout_keep_mask64(md, bh, i, j0);
}

inline V vload_bf16(const uint16_t* p) {
  return {svreinterpret_f32_u32(svlsl_n_u32_x(all(), svld1uh_u32(all(), p), 16))};
}
// fcvt reads the fp16 in the low half of each 32-bit lane.
inline V vload_f16(const uint16_t* p) { return {svcvt_f32_f16_x(all(), svreinterpret_f16_u32(svld1uh_u32(all(), p)))}; }
// fcvt rounds to nearest even (FPCR's default mode) into the low half of each lane; NaN stays NaN.
inline void vstore_f16(uint16_t* p, V a) { svst1h_u32(all(), p, svreinterpret_u32_f16(svcvt_f16_f32_x(all(), a.r))); }
// Round to nearest even on the bits, as simd/avx2.h; NaN keeps its top bits with the quiet bit set.
inline void vstore_bf16(uint16_t* p, V a) {
  const svbool_t pg = all();
  const u32x8 u = svreinterpret_u32_f32(a.r);
  const u32x8 lsb = svand_n_u32_x(pg, svlsr_n_u32_x(pg, u, 16), 1);
  const u32x8 r = svlsr_n_u32_x(pg, svadd_u32_x(pg, svadd_n_u32_x(pg, u, 0x7fff), lsb), 16);
  const u32x8 q = svorr_n_u32_x(pg, svlsr_n_u32_x(pg, u, 16), 0x40);
  svst1h_u32(pg, p, svsel_u32(svcmpuo_f32(pg, a.r, a.r), q, r));
}

}  // namespace ATTN_ISA
}  // namespace attn_cpu
