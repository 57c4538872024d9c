// Tensor-core and async-copy primitives of sm80+ (mma.sync m16n8k16, ldmatrix, cp.async), behind
// ATTN_MEMEFF_SM80 so the same sources compile for older archs, where the kernels that use them trap
// (the dispatcher never launches them there: it checks the kernel's PTX version at run time).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define ATTN_MEMEFF_SM80 1
#endif

namespace memeff {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// One 16-byte shared store (the fp32 forwards' split passes): NVVM split some uint4 stores of the parts into 4 STS.32.
__device__ __forceinline__ void st_shared_v4(uint32_t* p, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
#ifdef ATTN_MEMEFF_SM80
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_addr(p)), "r"(a), "r"(b), "r"(c), "r"(d)
               : "memory");
#endif
}

// 16 bytes global -> shared; zero-filled when !pred (the source is then not read).
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, bool pred) {
#ifdef ATTN_MEMEFF_SM80
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem), "r"(pred ? 16 : 0));
#endif
}
// 16 bytes global -> shared of which the first `src_bytes` (0..16) are read, the rest zero-filled.
__device__ __forceinline__ void cp_async_16_partial(void* smem, const void* gmem, int src_bytes) {
#ifdef ATTN_MEMEFF_SM80
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem), "r"(src_bytes));
#endif
}
// One thread's 16-byte column of a tile load (common/smem_tile.cuh, common/tf32_tile.cuh): kIters copies
// from src, src + step, ... (rows first_row, first_row + kRowStep, ...) to dst, dst + kDstStep, ...; a copy
// reads only where col_ok and its row is below `rows`, and zero-fills otherwise (reading `fallback`, which
// is in bounds). One 64-bit source, then an add per copy.
template <int kIters, int kRowStep, int kDstStep, typename T>
__device__ __forceinline__ void cp_async_column(T* dst, const T* src, int64_t step, const T* fallback, bool col_ok,
                                                int first_row, int rows) {
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const bool ok = col_ok && first_row + it * kRowStep < rows;
    cp_async_16(dst + it * kDstStep, ok ? src : fallback, ok);
    src += step;
  }
}
// A barrier of `threads` threads (a multiple of 32) under `id` (1..15; 0 is __syncthreads's); orders
// their shared-memory accesses as __syncthreads does for the block.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
#ifdef ATTN_MEMEFF_SM80
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#ifdef ATTN_MEMEFF_SM80
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
__device__ __forceinline__ void cp_async_wait_all() {
#ifdef ATTN_MEMEFF_SM80
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* smem) {
#ifdef ATTN_MEMEFF_SM80
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(smem)));
#endif
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* smem) {
#ifdef ATTN_MEMEFF_SM80
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(smem)));
#endif
}

// D = A * B + D, m16n8k16, fp32 accumulators. A row-major 16x16, B "col" 16x8 (see the PTX ISA's
// fragment layouts: a0..a3 = rows g/g+8 x cols 2t..2t+1 / +8; b0, b1 = rows 2t..2t+1 / +8 x col g;
// c0..c3 = rows g/g+8 x cols 2t..2t+1, with g = lane / 4, t = lane % 4).
template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);
template <>
__device__ __forceinline__ void mma_16816<__half>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#ifdef ATTN_MEMEFF_SM80
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
#ifdef ATTN_MEMEFF_SM80
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// *addr += a, *(addr + 1) += b with fp32 reductions (no return value: RED, not ATOM). sm90 has a
// vector form that sends both in one request; addr must be 8-byte aligned.
__device__ __forceinline__ void red_add_f32x2(float* addr, float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(addr), "f"(a), "f"(b) : "memory");
#else
  atomicAdd(addr, a);
  atomicAdd(addr + 1, b);
#endif
}

// addr[0..3] += a, b, c, d: one sm90 vector reduction (16-byte aligned addr; each element is its own
// fp32 add, as four scalar REDs). Before sm90, four scalar REDs.
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

// Two floats as one 32-bit register of two 16-bit elements (x in the low half: the lower column).
template <typename T>
__device__ __forceinline__ uint32_t pack2(float x, float y);
template <>
__device__ __forceinline__ uint32_t pack2<__half>(float x, float y) {
  __half2 v = __floats2half2_rn(x, y);
  return *reinterpret_cast<uint32_t*>(&v);
}
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float x, float y) {
  __nv_bfloat162 v = __floats2bfloat162_rn(x, y);
  return *reinterpret_cast<uint32_t*>(&v);
}

}  // namespace memeff
