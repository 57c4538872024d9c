#include "dropout.h"

#include "attn/philox.h"

namespace attn_cpu {

void dropout_keep_row(const ScoreMods& m, uint32_t bh, uint32_t i, int64_t j0, int64_t n, uint8_t* keep) {
  int64_t c = 0;
  while (c < n) {
    const uint32_t j = static_cast<uint32_t>(j0 + c);
    // One Philox call yields the words of four consecutive keys 4*(j>>2) .. 4*(j>>2)+3.
    const attn::Philox4 r = attn::dropout_words(m.seed, m.rng_offset, bh, i, j >> 2);
    for (uint32_t w = j & 3u; w < 4 && c < n; ++w, ++c) {
      keep[c] = attn::philox_word(r, w) >= m.threshold ? 1 : 0;
    }
  }
}

uint64_t dropout_keep_mask64(const ScoreMods& m, uint32_t bh, uint32_t i, int64_t j0) {
  uint8_t keep[64];
  dropout_keep_row(m, bh, i, j0, 64, keep);
  uint64_t bits = 0;
  for (int c = 0; c < 64; ++c) bits |= static_cast<uint64_t>(keep[c]) << c;
  return bits;
}

}  // namespace attn_cpu
