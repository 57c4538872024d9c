// The products of forward_bf16_pairs.h (and of the backward, backward_bf16_pairs.h) on AMX:
// TDPBF16PS (16x16 fp32 += 16x32 bf16 . 32x16 bf16) on 2x2 C tiles at a time: tiles 0-3 accumulate,
// 4-5 hold A, 6-7 hold B, all 16 rows x 64 bytes.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace attn_cpu {
namespace ATTN_ISA {

// The 64-byte tile configuration: palette 1, tiles 0-7 all 16 rows x 64 bytes, every other byte 0
// (LDTILECFG raises #GP, SIGSEGV, on a nonzero reserved byte or a nonzero shape for tiles 8-15).
struct alignas(64) TileConfig {
  uint8_t palette, start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
static_assert(sizeof(TileConfig) == 64, "LDTILECFG reads 64 bytes");
constexpr TileConfig amx_tile_config() {
  TileConfig c{};
  c.palette = 1;
  for (int i = 0; i < 8; ++i) {
    c.colsb[i] = 64;
    c.rows[i] = 16;
  }
  return c;
}
// A constant in read-only data, never built on the stack: see AmxProducts::begin.
static constexpr TileConfig kAmxTileConfig = amx_tile_config();

// Orders the C++ stores before it (packed operands, P~, dS, zeroed sums) before the tile loads after it:
// GCC's _tile_loadd is an asm that names no memory operand, so without this the compiler may sink a
// store of a tile's source past the TILELOADD that reads it. TILESTORED's asm clobbers memory (the
// reads after a product see its stores).
inline void tile_operands_ready() { __asm__ __volatile__("" ::: "memory"); }

// Tile state is per thread and per task: every task that runs products (forward_bf16_pairs.h's bf16_task,
// backward.h's group, dQ, dK/dV and Delta tasks) calls begin() before its first product and end() after its
// last, on the thread that runs it (a pool thread, the calling thread, or a libuv worker for the async
// calls); nothing between them uses tiles in another shape. The process's permission for the tile data
// (arch_prctl ARCH_REQ_XCOMP_PERM) is asked for in dispatch.cpp before any AMX kernel is picked; it covers
// every thread of the process, those started before included.
struct AmxProducts {
  static constexpr const char* kName = "bf16-amx";

  // Not _tile_loadconfig(&a_local_config): GCC's (12.2's amxtileintrin.h) tells the compiler that LDTILECFG
  // reads 8 bytes ("m" (*(const void **)cfg)), so stores to the other 56 bytes of a config on the stack
  // are dead to it; GCC 12 -O3 dropped the zeroing of colsb[8..15] in backward.h's bwd_delta_task (the
  // slot then shared with the task's HeadMods), and LDTILECFG read the previous task's bytes there. Here
  // the operand is the whole 64-byte constant.
  static void begin() { __asm__ __volatile__("ldtilecfg %0" : : "m"(kAmxTileConfig) : "memory"); }
  static void end() { _tile_release(); }

  // C[M x N] (+)= A[M x K] . B[K x N] (kAcc: +=): A bf16 rows lda elements apart (K contiguous), B
  // pair-packed (row kp holds N pairs (B[2kp][n], B[2kp+1][n]), ldb pairs apart), C fp32 rows ldc apart; M,
  // N and K multiples of 32, 2x2 C tiles at a time. The forward's two products (qk, pv below) and the backward's
  // five (backward_bf16_pairs.h).
  template <bool kAcc>
  static void mm(int64_t M, int64_t N, int64_t K, const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb,
                 float* c, int64_t ldc) {
    tile_operands_ready();
    const int64_t cs = ldc * 4, as = lda * 2, bs = ldb * 4;
    for (int64_t m0 = 0; m0 < M; m0 += 32) {
      for (int64_t n0 = 0; n0 < N; n0 += 32) {
        float* o = c + m0 * ldc + n0;
        if (kAcc) {
          _tile_loadd(0, o, cs);
          _tile_loadd(1, o + 16, cs);
          _tile_loadd(2, o + 16 * ldc, cs);
          _tile_loadd(3, o + 16 * ldc + 16, cs);
        } else {
          _tile_zero(0);
          _tile_zero(1);
          _tile_zero(2);
          _tile_zero(3);
        }
        for (int64_t k0 = 0; k0 < K; k0 += 32) {
          _tile_loadd(4, a + m0 * lda + k0, as);
          _tile_loadd(5, a + (m0 + 16) * lda + k0, as);
          _tile_loadd(6, b + ((k0 / 2) * ldb + n0) * 2, bs);
          _tile_loadd(7, b + ((k0 / 2) * ldb + n0 + 16) * 2, bs);
          _tile_dpbf16ps(0, 4, 6);
          _tile_dpbf16ps(1, 4, 7);
          _tile_dpbf16ps(2, 5, 6);
          _tile_dpbf16ps(3, 5, 7);
        }
        _tile_stored(0, o, cs);
        _tile_stored(1, o + 16, cs);
        _tile_stored(2, o + 16 * ldc, cs);
        _tile_stored(3, o + 16 * ldc + 16, cs);
      }
    }
  }

  // st[c][r] (row stride 64) = sum_e K[c][e] Q[r][e] for the kKB keys of the block (all computed:
  // the packed K is zero past Sk). k: bf16 rows of dp elements; qv: Q^T pairs [dp/2][64][2].
  static void qk(float* st, const uint16_t* k, int64_t dp, const uint16_t* qv, int64_t) {
    mm<false>(kKB, 64, dp, k, dp, qv, 64, st, 64);
  }

  // ot[e][r] (row stride 64) += sum_c V[c][e] P[r][c] over the n keys of the block, rounded up to 32 (P^T
  // is zero there). vt: V^T rows (vld elements apart) from the block's first key; pb: P^T pairs [kKB/2][64][2].
  static void pv(float* ot, const uint16_t* vt, int64_t vld, int64_t, int64_t dvp, const uint16_t* pb, int64_t n) {
    mm<true>(dvp, 64, (n + 31) / 32 * 32, vt, vld, pb, 64, ot, 64);
  }
};

}  // namespace ATTN_ISA
}  // namespace attn_cpu
