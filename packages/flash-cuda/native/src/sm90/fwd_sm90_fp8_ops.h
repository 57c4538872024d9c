// The fp8 forward's pieces apart from its schedule (flash_fwd_sm90_fp8_kernel.h): the two GEMMs of a key tile
// as e4m3 wgmma batches, P from the softmax's accumulators into 8-bit A fragments, and V's transpose.
//
// The key order inside V^T. wgmma's 8-bit A fragment (k32) gives a thread the bytes of columns 4t..4t+3 (and
// 16 + 4t..) per register, where the S accumulator gives it columns 2t, 2t+1 of each n8 group. Rather than
// exchange bytes between threads, the transpose stores the keys of every 16 in the order that makes the
// accumulator's pairs adjacent: position 4t + j of a 16-key chunk holds key 2t + j (j = 0, 1) or 8 + 2t + j - 2
// (j = 2, 3). P.V sums over keys, so any order of them gives the same O as long as P and V^T agree.
#pragma once
#include <cuda_fp8.h>

#include <cstdint>

#include "attn/ptx.h"
#include "sm90/fwd_sm90_fp8_traits.h"
#include "sm90/wgmma_ops.h"
#include "sm90/wgmma_sync.h"

namespace attn::flash::sm90 {

// The position, inside its 16-key chunk, of key k (0 <= k < 16) in V^T: the order described above.
__host__ __device__ constexpr int fp8_vt_position(int k) {
  return k < 8 ? 4 * (k >> 1) + (k & 1) : 4 * ((k - 8) >> 1) + 2 + (k & 1);
}
// What transpose_v_fp8 and pack_p_fp8 rely on: keys 2t, 2t + 1, 8 + 2t, 9 + 2t (a thread's accumulator columns in
// n8 groups 0 and 1 of a 16-key half) are positions 4t..4t + 3, and the order is a permutation of the 16.
constexpr bool fp8_vt_order_holds() {
  unsigned seen = 0;
  for (int k = 0; k < 16; ++k) seen |= 1u << fp8_vt_position(k);
  for (int t = 0; t < 4; ++t)
    if (fp8_vt_position(2 * t) != 4 * t || fp8_vt_position(2 * t + 1) != 4 * t + 1 ||
        fp8_vt_position(8 + 2 * t) != 4 * t + 2 || fp8_vt_position(9 + 2 * t) != 4 * t + 3)
      return false;
  return seen == 0xffffu;
}
static_assert(fp8_vt_order_holds(), "V^T's key order must match the A fragment's byte order");

// S = Q.K^T: kKSteps k32 steps of 32 bytes along the 128-byte rows of Q (warpgroup wg's 64) and K, both
// K-major; descriptor units are 16 bytes.
template <typename Tr>
__device__ __forceinline__ void issue_qk_fp8(float (&s)[Tr::kNTiles][4], uint64_t desc_q, uint64_t desc_k) {
#pragma unroll
  for (int ks = 0; ks < Tr::kKSteps; ++ks)
    Wgmma<__nv_fp8_e4m3, Tr::kBlockN>::ss(s, desc_q + ks * 2, desc_k + ks * 2, ks > 0);
}

// O += P.V: kPSteps k32 steps over the keys, B = V^T (head-dim rows of kBlockN key bytes, K-major).
template <typename Tr>
__device__ __forceinline__ void issue_pv_fp8(float (&acc_o)[Tr::kDTiles][4], const uint32_t (&pa)[Tr::kPSteps][4],
                                             uint64_t desc_vt) {
#pragma unroll
  for (int kk = 0; kk < Tr::kPSteps; ++kk) Wgmma<__nv_fp8_e4m3, Tr::kHeadDim>::rs(acc_o, pa[kk], desc_vt + kk * 2);
}

// Four floats as e4m3 bytes, x0 in the low byte (round to nearest even, saturating at +-448).
__device__ __forceinline__ uint32_t pack4_e4m3(float x0, float x1, float x2, float x3) {
  const uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(x0, x1), __NV_SATFINITE, __NV_E4M3);
  const uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(x2, x3), __NV_SATFINITE, __NV_E4M3);
  return lo | (hi << 16);
}
// P (fp32 accumulator layout: n8 group j holds columns 8j + 2t, 8j + 2t + 1 of rows g and g + 8) as k32 A
// fragments in V^T's key order: step kk covers groups 4kk..4kk + 3. The 16-bit kernel's softmax (row_state.h)
// computes P in place in S; this runs after the wait for the P.V that reads pa (a register an in-flight wgmma
// reads must not be redefined, or ptxas serializes every wgmma of the kernel).
template <typename Tr>
__device__ __forceinline__ void pack_p_fp8(const float (&s)[Tr::kNTiles][4], uint32_t (&pa)[Tr::kPSteps][4]) {
#pragma unroll
  for (int kk = 0; kk < Tr::kPSteps; ++kk) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float (&a)[4] = s[4 * kk + 2 * h];
      const float (&b)[4] = s[4 * kk + 2 * h + 1];
      pa[kk][2 * h] = pack4_e4m3(a[0], a[1], b[0], b[1]);      // row g
      pa[kk][2 * h + 1] = pack4_e4m3(a[2], a[3], b[2], b[3]);  // row g + 8
    }
  }
}

__device__ __forceinline__ uint32_t lds32(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ void sts32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}

// V^T from the staged V tile, by the producer warpgroup's 128 threads (ptid). Both tiles are 128 rows of 128
// bytes, 16-byte chunks XOR-swizzled with row % 8: staged row k (a key) holds head dims, V^T row d holds keys.
// A thread moves 4 dims x 4 keys per step (four 32-bit loads, a byte transpose, four 32-bit stores): dims
// 4d'..4d'+3 with d' = 4 * step + (lane & 3), keys 2t, 2t + 1, 8 + 2t, 9 + 2t of chunk c (t = lane >> 2 & 3,
// c = lane >> 4 | warp << 1), which are positions 4t..4t + 3 of V^T's chunk c. The lanes of a warp then hit
// each bank at most twice, loads and stores alike.
template <typename Tr>
__device__ __forceinline__ void transpose_v_fp8(uint32_t staged, uint32_t vt, int ptid) {
  static_assert(Tr::kBlockN == 128 && Tr::kHeadDim == 128, "one 128-byte swizzle atom per row, 8 steps");
  const int lane = ptid & 31, warp = ptid >> 5;
  const int dq = lane & 3, t = (lane >> 2) & 3, c = (lane >> 4) | (warp << 1);
  const int key0 = 16 * c + 2 * t;  // keys key0, key0 + 1, key0 + 8, key0 + 9; (key & 7) = 2t or 2t + 1
  const uint32_t src0 = staged + key0 * 128 + dq * 4, src1 = src0 + 128, src2 = src0 + 8 * 128, src3 = src1 + 8 * 128;
#pragma unroll
  for (int step = 0; step < 8; ++step) {
    // Chunk `step` of the staged rows (dims 16 * step ..), swizzled by the key's row % 8.
    const uint32_t w0 = lds32(src0 + ((step ^ (2 * t)) << 4));
    const uint32_t w1 = lds32(src1 + ((step ^ (2 * t + 1)) << 4));
    const uint32_t w2 = lds32(src2 + ((step ^ (2 * t)) << 4));
    const uint32_t w3 = lds32(src3 + ((step ^ (2 * t + 1)) << 4));
    const uint32_t x0 = __byte_perm(w0, w1, 0x5140), x1 = __byte_perm(w0, w1, 0x7362);
    const uint32_t y0 = __byte_perm(w2, w3, 0x5140), y1 = __byte_perm(w2, w3, 0x7362);
    const uint32_t out[4] = {__byte_perm(x0, y0, 0x5410), __byte_perm(x0, y0, 0x7632), __byte_perm(x1, y1, 0x5410),
                             __byte_perm(x1, y1, 0x7632)};
#pragma unroll
    for (int dd = 0; dd < 4; ++dd) {
      const int d = 4 * (4 * step + dq) + dd;
      sts32(vt + d * 128 + ((c ^ (d & 7)) << 4) + 4 * t, out[dd]);
    }
  }
}

}  // namespace attn::flash::sm90
