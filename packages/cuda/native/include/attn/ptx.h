// Inline-PTX wrappers of the sm80+ instructions attn's CUDA kernels are built from (flash-cuda's and
// memeff-cuda's alike): shared-memory addresses, cp.async, ldmatrix, mma.sync m16n8k16 (fp16/bf16 -> fp32),
// vector shared stores and fp32 reductions.
//
// The bodies compile only for sm80+ (ATTN_SM80): memeff-cuda builds the same sources for sm50+, where the
// kernels that use them trap and are never launched (its dispatcher checks the kernel's PTX version).
//
// Kernels name these unqualified: inside namespace attn (flash-cuda) through the inline namespace, elsewhere
// with `using namespace attn::ptx;`.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define ATTN_SM80 1
#endif

namespace attn {
inline namespace ptx {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// An opaque copy: stops the compiler from hoisting address arithmetic that depends on x out of a loop
// (keeping dozens of precomputed shared-memory addresses live costs more registers than recomputing).
__device__ __forceinline__ uint32_t opaque(uint32_t x) {
  uint32_t y;
  asm volatile("mov.b32 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}

// One 16-byte shared store (NVVM splits some uint4 stores into four 32-bit ones).
__device__ __forceinline__ void st_shared_v4(uint32_t* p, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
#ifdef ATTN_SM80
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_addr(p)), "r"(a), "r"(b), "r"(c), "r"(d)
               : "memory");
#endif
}

// 16 bytes global -> shared, bypassing L1: the first src_bytes (0..16) are read, the rest zero-filled
// (0: nothing is read; src must still be a valid address).
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
#ifdef ATTN_SM80
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
#endif
}
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, int src_bytes) {
  cp_async_16(smem_addr(dst), src, src_bytes);
}
// 4 bytes global -> shared (flash-cuda: the block-table entries of a paged K/V tile).
__device__ __forceinline__ void cp_async_4(uint32_t dst, const void* src) {
#ifdef ATTN_SM80
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src));
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#ifdef ATTN_SM80
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
// Waits until at most N committed groups are in flight. Not a compiler memory barrier: the __syncthreads
// (or named barrier) that publishes the tile to the other threads is.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#ifdef ATTN_SM80
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}
// Waits for every committed group, and is a compiler memory barrier (the thread's own shared reads after it
// are not moved before it).
__device__ __forceinline__ void cp_async_wait_all() {
#ifdef ATTN_SM80
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
}

// One thread's 16-byte column of a tile load: kIters copies from src, src + step, ... (rows first_row,
// first_row + kRowStep, ...) to dst, dst + kDstStep, ...; a copy reads only where col_ok and its row is below
// `rows`, and zero-fills otherwise (reading `fallback`, which is in bounds). One 64-bit source, then an add
// per copy, instead of one precomputed source and shared address per copy (register pressure).
template <int kIters, int kRowStep, int kDstStep, typename T>
__device__ __forceinline__ void cp_async_column(T* dst, const T* src, int64_t step, const T* fallback, bool col_ok,
                                                int first_row, int rows) {
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const bool ok = col_ok && first_row + it * kRowStep < rows;
    cp_async_16(dst + it * kDstStep, ok ? src : fallback, ok ? 16 : 0);
    src += step;
  }
}

// Four 8x8 b16 matrices; lanes 8m..8m+7 give the row addresses of matrix m; register m holds matrix m.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
#ifdef ATTN_SM80
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
#endif
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
#ifdef ATTN_SM80
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
#endif
}
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* smem) { ldmatrix_x4(r, smem_addr(smem)); }
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* smem) {
  ldmatrix_x4_trans(r, smem_addr(smem));
}

// D = A * B + D, m16n8k16, fp32 accumulators. A row-major 16x16, B "col" 16x8 (the PTX ISA's fragment
// layouts: a0..a3 = rows g/g+8 x cols 2t..2t+1 / +8; b0, b1 = rows 2t..2t+1 / +8 x col g; c0..c3 = rows g/g+8
// x cols 2t..2t+1, with g = lane / 4, t = lane % 4).
template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);
template <>
__device__ __forceinline__ void mma_16816<__half>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#ifdef ATTN_SM80
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}
template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                                         uint32_t b1) {
#ifdef ATTN_SM80
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// *addr += a, *(addr + 1) += b with fp32 reductions (no return value: RED, not ATOM). sm90 has a vector form
// that sends both in one request; addr must be 8-byte aligned.
__device__ __forceinline__ void red_add_f32x2(float* addr, float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(addr), "f"(a), "f"(b) : "memory");
#else
  atomicAdd(addr, a);
  atomicAdd(addr + 1, b);
#endif
}
// addr[0..3] += a, b, c, d: one sm90 vector reduction (16-byte aligned addr; each element is its own fp32
// add, as four scalar REDs). Before sm90, four scalar REDs.
__device__ __forceinline__ void red_add_f32x4(float* addr, float a, float b, float c, float d) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(addr), "f"(a), "f"(b), "f"(c), "f"(d)
               : "memory");
#else
  atomicAdd(addr, a);
  atomicAdd(addr + 1, b);
  atomicAdd(addr + 2, c);
  atomicAdd(addr + 3, d);
#endif
}

}  // namespace ptx
}  // namespace attn
