// Dropout masks through core's one Philox mapping (packages/native/include/attn/philox.h).
// Compiled once with baseline flags: SIMD translation units call it rather than inline philox.h.
#pragma once
#include <cstdint>

#include "problem.h"

namespace attn_cpu {

// keep[c] = 1 when element (bh, i, j0 + c) of the [B*Hq, Sq, Sk] score matrix is kept, else 0,
// for c in [0, n). bh = b * Hq + h (h the query head).
void dropout_keep_row(const ScoreMods& m, uint32_t bh, uint32_t i, int64_t j0, int64_t n, uint8_t* keep);

// Bit c set when key j0 + c (c < 64) of row i is kept; j0 a multiple of 4. (Scalar; the SIMD
// levels compute the same bits 16 or 8 Philox counters at a time: simd/*.h, keep_mask64.)
uint64_t dropout_keep_mask64(const ScoreMods& m, uint32_t bh, uint32_t i, int64_t j0);

}  // namespace attn_cpu
