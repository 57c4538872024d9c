// The fp32 lane operations that read the same at every x86 vector width, written once. Included by
// avx2.h and avx512.h inside their ISA namespace, after each has defined its vector type V (one register
// member r) and ATTN_X86_PS(op), which names the width's intrinsic (_mm256_<op>_ps or _mm512_<op>_ps).
// Not a standalone header: it has no include guard on purpose (each ISA namespace gets its own copy).

inline V vzero() { return {ATTN_X86_PS(setzero)()}; }
inline V vset(float x) { return {ATTN_X86_PS(set1)(x)}; }
inline V vload(const float* p) { return {ATTN_X86_PS(loadu)(p)}; }
inline void vstore(float* p, V a) { ATTN_X86_PS(storeu)(p, a.r); }
inline V vadd(V a, V b) { return {ATTN_X86_PS(add)(a.r, b.r)}; }
inline V vsub(V a, V b) { return {ATTN_X86_PS(sub)(a.r, b.r)}; }
inline V vmul(V a, V b) { return {ATTN_X86_PS(mul)(a.r, b.r)}; }
// a * b rounded to float and never fused into a following add (GCC's default -ffp-contract=fast
// would make vadd(vmul(a, b), c) one FMA): for a product that must equal the same product computed
// elsewhere, bit for bit. ("v": any vector register the width can encode.)
inline V vmul_round(V a, V b) {
  auto r = ATTN_X86_PS(mul)(a.r, b.r);
  __asm__("" : "+v"(r));
  return {r};
}
inline V vdiv(V a, V b) { return {ATTN_X86_PS(div)(a.r, b.r)}; }
inline V vfma(V a, V b, V c) { return {ATTN_X86_PS(fmadd)(a.r, b.r, c.r)}; }  // a*b + c
// max(a, b) / min(a, b); NaN in b wins (vmaxps / vminps return the second operand when either is NaN).
inline V vmax(V a, V b) { return {ATTN_X86_PS(max)(a.r, b.r)}; }
inline V vmin(V a, V b) { return {ATTN_X86_PS(min)(a.r, b.r)}; }
