// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) and the one
// element-to-counter mapping of attn's dropout. Bit-identical to packages/core/src/philox.ts.
#pragma once
#include <cstdint>

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>  // __host__, __device__, __forceinline__, __umulhi (nvcc includes its own)
#endif

#if defined(__CUDACC__) || defined(__HIPCC__)
#define ATTN_HD __host__ __device__ __forceinline__
#else
#define ATTN_HD inline
#endif

namespace attn {

struct Philox4 {
  uint32_t x, y, z, w;
};

ATTN_HD uint32_t mulhi32(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}

// Ten rounds; the key is bumped between rounds.
ATTN_HD Philox4 philox4x32_10(Philox4 ctr, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#if defined(__CUDACC__) || defined(__HIPCC__)  // host compilers warn on an unknown pragma
#pragma unroll
#endif
  for (int round = 0; round < 10; ++round) {
    const uint32_t lo0 = kM0 * ctr.x, hi0 = mulhi32(kM0, ctr.x);
    const uint32_t lo1 = kM1 * ctr.z, hi1 = mulhi32(kM1, ctr.z);
    ctr = Philox4{hi1 ^ ctr.y ^ k0, lo1, hi0 ^ ctr.w ^ k1, lo0};
    k0 += kW0;
    k1 += kW1;
  }
  return ctr;
}

// The four words for keys 4*(j>>2) .. 4*(j>>2)+3 of row i, head bh = b*Hq + h.
ATTN_HD Philox4 dropout_words(uint64_t seed, uint32_t offset, uint32_t bh, uint32_t i, uint32_t j_div4) {
  return philox4x32_10(Philox4{j_div4, i, bh, offset}, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

ATTN_HD uint32_t philox_word(const Philox4& r, uint32_t w) { return w == 0 ? r.x : w == 1 ? r.y : w == 2 ? r.z : r.w; }

// True when element (b, h, i, j) is kept. threshold = min(2^32-1, floor(p * 2^32)), from core.
ATTN_HD bool dropout_keep(uint64_t seed, uint32_t offset, uint32_t bh, uint32_t i, uint32_t j, uint32_t threshold) {
  return philox_word(dropout_words(seed, offset, bh, i, j >> 2), j & 3u) >= threshold;
}

// The keep decisions of keys j and j + 1 (j even, so both are in one group of four) from one Philox call: the
// two columns a thread holds in an mma.sync accumulator fragment.
ATTN_HD void dropout_keep_pair(uint64_t seed, uint32_t offset, uint32_t bh, uint32_t i, uint32_t j, uint32_t threshold,
                               bool& keep0, bool& keep1) {
  const Philox4 r = dropout_words(seed, offset, bh, i, j >> 2);
  const bool lo = (j & 3u) == 0;
  keep0 = (lo ? r.x : r.z) >= threshold;
  keep1 = (lo ? r.y : r.w) >= threshold;
}

}  // namespace attn
