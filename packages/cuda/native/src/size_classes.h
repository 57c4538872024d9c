// The size classes of the caching allocator. A request is rounded up to its class and a freed block
// is reused only for a request of the same class, so reuse is exact and waste is bounded:
//   below 1 MiB: multiples of 512 bytes (waste < 512 B);
//   from 1 MiB: four classes per power of two, 2^k * {1, 1.25, 1.5, 1.75} (waste < 25%).
#pragma once
#include <cstddef>

namespace attn {

constexpr std::size_t kMinBlockBytes = 512;  // also the alignment every block has (gpuMalloc gives 256+)
constexpr std::size_t kSmallLimitBytes = std::size_t{1} << 20;
constexpr int kClassesPerOctave = 4;

// Largest request the allocator rounds without overflowing size_t: a quarter below the top octave.
constexpr std::size_t kMaxRequestBytes = (~std::size_t{0} >> 2);

inline std::size_t round_up(std::size_t n, std::size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// Caller guarantees 0 < bytes <= kMaxRequestBytes.
inline std::size_t size_class(std::size_t bytes) {
  if (bytes < kSmallLimitBytes) return round_up(bytes, kMinBlockBytes);
  std::size_t octave = kSmallLimitBytes;
  while (octave <= bytes / 2) octave <<= 1;  // largest power of two <= bytes
  return round_up(bytes, octave / kClassesPerOctave);
}

}  // namespace attn
