// Tile variants of the Hopper forward kernel (flash_fwd_sm90_ws_kernel.h) at the standard grid's points (bf16,
// B*S 16k tokens, H*D 2048, S 1k and 4k, causal or not): key tiles of 64 or 128 and ring depths beside the
// generated configurations, each timed alone (CUDA events around 20 launches after 5, the median of 5 such sets)
// and its output compared with the generated configuration's at the same point (max |diff|). Answers whether a
// shorter key tile (a shorter pipeline fill and drain per CTA) or a deeper ring helps where a CTA has few key
// tiles (S 1k: 8 of 128 keys). One JSON line per (variant, point).
//
//   nvcc -std=c++17 -O3 -arch=sm_90a -I packages/flash-cuda/native/src -I packages/cuda/native/include \
//     -I packages/native/include -o fwd_tile_probe packages/flash-cuda/native/probe/fwd_tile_probe.cu
//   ./fwd_tile_probe [--grid]
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "dense_params.h"
#include "fill_random.cuh"
#include "sm90/flash_fwd_sm90_launch.h"

using namespace attn::flash;
using E = __nv_bfloat16;

static void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// A generated configuration with another ring depth.
template <typename Base, int kStages_>
struct RingDepth : Base {
  static constexpr int kStages = kStages_;
  static constexpr int kSmemBytes = Base::bytes_for(kStages_);
  static_assert(kSmemBytes <= Base::kMaxSmemBytes, "the ring must fit an sm90 CTA");
};

struct Point {
  int s, d;
  bool causal;
};

struct Buffers {
  E *q, *k, *v, *o, *ref;
  float* lse;
};

template <typename Tr>
double time_variant(const char* name, const Point& pt, Buffers& bf, bool is_ref) {
  const int sq = pt.s, d = Tr::kHeadDim, batch = 16384 / pt.s, heads = 2048 / d;
  FwdParams p = probe::dense_fwd_params(bf.q, bf.k, bf.v, bf.o, bf.lse, batch, heads, heads, sq, sq, d, pt.causal);
  p.m_blocks = (sq + Tr::kBlockM - 1) / Tr::kBlockM;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (int i = 0; i < 5; ++i) run_fwd_sm90<Tr>(p, nullptr, 0);
  check(cudaDeviceSynchronize(), name);
  std::vector<float> sets;
  for (int set = 0; set < 5; ++set) {
    cudaEventRecord(e0);
    for (int i = 0; i < 20; ++i) run_fwd_sm90<Tr>(p, nullptr, 0);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    sets.push_back(ms * 1e3f / 20);
  }
  check(cudaGetLastError(), name);
  std::sort(sets.begin(), sets.end());
  const size_t n = size_t(batch) * heads * sq * d;
  if (is_ref) check(cudaMemcpy(bf.ref, bf.o, n * 2, cudaMemcpyDeviceToDevice), "copy ref");
  std::vector<E> a(n), b(n);
  check(cudaMemcpy(a.data(), bf.o, n * 2, cudaMemcpyDeviceToHost), "copy o");
  check(cudaMemcpy(b.data(), bf.ref, n * 2, cudaMemcpyDeviceToHost), "copy ref");
  double worst = 0, checksum = 0;  // checksum: the same inputs in every build, so two builds' kernels compare by it
  for (size_t i = 0; i < n; ++i) {
    const double x = __bfloat162float(a[i]);
    worst = std::max(worst, std::fabs(x - double(__bfloat162float(b[i]))));
    checksum += std::fabs(x) * double(1 + i % 7);
  }
  const double flops = 4.0 * batch * heads * double(sq) * sq * d / (pt.causal ? 2 : 1);
  std::printf(
      "{\"variant\": \"%s\", \"D\": %d, \"S\": %d, \"causal\": %d, \"blockN\": %d, \"stages\": %d, \"split\": %d, "
      "\"us\": %.1f, \"tflops\": %.1f, \"maxDiffVsGenerated\": %.3g, \"checksum\": %.9g}\n",
      name, d, sq, int(pt.causal), Tr::kBlockN, Tr::kStages, int(Tr::kSplitRelease), sets[2], flops / sets[2] / 1e6,
      worst, checksum);
  std::fflush(stdout);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return sets[2];
}

// --grid: the generated configurations alone over the standard grid (D 64 / 128 / 256, S 1k / 4k / 16k, causal or
// not), in two rounds: two builds of the kernel side by side, by time and by the outputs' checksum.
template <typename D64, typename D128, typename D256>
void run_grid(Buffers& bf) {
  for (int round = 0; round < 2; ++round)
    for (int s : {1024, 4096, 16384})
      for (bool causal : {false, true}) {
        time_variant<D64>("generated", Point{s, 64, causal}, bf, true);
        time_variant<D128>("generated", Point{s, 128, causal}, bf, true);
        time_variant<D256>("generated", Point{s, 256, causal}, bf, true);
      }
}

int main(int argc, char** argv) {
  const size_t n = size_t(16384) * 2048;
  Buffers bf;
  check(cudaMalloc(&bf.q, n * 2), "q");
  check(cudaMalloc(&bf.k, n * 2), "k");
  check(cudaMalloc(&bf.v, n * 2), "v");
  check(cudaMalloc(&bf.o, n * 2), "o");
  check(cudaMalloc(&bf.ref, n * 2), "ref");
  check(cudaMalloc(&bf.lse, size_t(16384) * 32 * 4), "lse");
  fill_random<<<1024, 256>>>(reinterpret_cast<uint16_t*>(bf.q), n, 1);
  fill_random<<<1024, 256>>>(reinterpret_cast<uint16_t*>(bf.k), n, 2);
  fill_random<<<1024, 256>>>(reinterpret_cast<uint16_t*>(bf.v), n, 3);
  check(cudaDeviceSynchronize(), "fill");
  using D64 = FwdSm90Traits<64, 128, 128, 1, E, false>;
  using D64n64 = FwdSm90Traits<64, 128, 64, 1, E, false>;
  using D64n64s = FwdSm90Traits<64, 128, 64, 1, E, true>;
  using D128 = FwdSm90Traits<128, 128, 128, 1, E, true>;
  using D128n64 = FwdSm90Traits<128, 128, 64, 1, E, true>;
  if (argc > 1 && std::string(argv[1]) == "--grid") {
    run_grid<D64, D128, FwdSm90Traits<256, 128, 64, 1, E, true>>(bf);
    return 0;
  }
  for (int round = 0; round < 2; ++round) {
    for (int s : {1024, 4096}) {
      for (bool causal : {false, true}) {
        const Point p64{s, 64, causal}, p128{s, 128, causal};
        time_variant<D64>("generated", p64, bf, true);
        time_variant<D64n64>("n64-3st", p64, bf, false);
        time_variant<RingDepth<D64n64, 5>>("n64-5st", p64, bf, false);
        time_variant<RingDepth<D64n64s, 5>>("n64-5st-split", p64, bf, false);
        time_variant<D128>("generated", p128, bf, true);
        time_variant<D128n64>("n64-3st", p128, bf, false);
        time_variant<RingDepth<D128n64, 4>>("n64-4st", p128, bf, false);
        time_variant<RingDepth<D128n64, 5>>("n64-5st", p128, bf, false);
      }
    }
  }
  return 0;
}
