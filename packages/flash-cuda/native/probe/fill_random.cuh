// bf16 values uniform in [-2, 2) from a splitmix64 hash of the element index and a seed: the bits a real K/V
// cache holds, for the bandwidth probes (scripts/read-ceiling.cu, native/probe/decode_stream_probe.cu). A
// constant fill toggles far fewer HBM data lines; on an H200 the two read alike (61.0-61.1 us).
#pragma once
#include <cstddef>
#include <cstdint>

__global__ void fill_random(uint16_t* dst, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint64_t z = (i + uint64_t(seed) * 0x1000000007ull) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const float x = float(uint32_t(z) >> 8) * (4.0f / 16777216.0f) - 2.0f;
    dst[i] = uint16_t(__float_as_uint(x) >> 16);
  }
}
