// Test-only: attn's dropout Philox evaluated on the device, so a test can compare it bit for bit with
// core's TypeScript philox (packages/core/src/philox.ts) and with philox.h on the host.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace attn {

// Largest output the test kernels produce, to keep a mistaken call from exhausting memory.
constexpr std::size_t kMaxPhiloxFillElements = std::size_t{1} << 26;

// inputs: 6 words per item (counter x, y, z, w, key k0, k1); returns 4 output words per item.
std::vector<std::uint32_t> philox_raw_on_device(int device, const std::vector<std::uint32_t>& inputs);

struct DropoutWords {
  std::vector<std::uint32_t> words;  // [bh][i][j]: the Philox word that decides element (bh, i, j)
  std::vector<std::uint8_t> keep;    // [bh][i][j]: 1 when kept at `threshold`
};
// Every element of a [bh_count, seq_q, seq_k] score tensor (bh = b * Hq + h).
DropoutWords dropout_words_on_device(int device, std::uint64_t seed, std::uint32_t offset, std::uint32_t bh_count,
                                     std::uint32_t seq_q, std::uint32_t seq_k, std::uint32_t threshold);

}  // namespace attn
