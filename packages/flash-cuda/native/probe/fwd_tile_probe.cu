// The Hopper forward kernel (flash_fwd_sm90_ws_kernel.h) with its two producers side by side: K / V (and Q) by
// TMA from one thread, and by cp.async from the producer warpgroup (the path varlen and misaligned calls take), at
// the standard grid's points (bf16, B*S 16k tokens, H*D 2048, D 64 / 128 / 256, S 1k / 4k / 16k, causal or not),
// each timed alone (CUDA events around 20 launches after 5, the median of 5 such sets), two rounds; the TMA
// output compared with the cp.async one (max |diff|: the same tiles reach shared memory, so 0). Then odd shapes
// (S 1 / 17 / 1000, head dim 72 in the 128 bucket and 8 in the 64 one, GQA, lower-right causal) compared the same
// way. One JSON line per (producer, point).
//
//   nvcc -std=c++17 -O3 --expt-relaxed-constexpr -arch=sm_90a -I packages/flash-cuda/native/src \
//     -I packages/cuda/native/include -I packages/native/include -o fwd_tile_probe \
//     packages/flash-cuda/native/probe/fwd_tile_probe.cu
//   ./fwd_tile_probe [--grid | --odd | --tiles | --encode]
//     --grid: the TMA producer alone over the grid, for two builds side by side by time and by the outputs'
//     checksum; --odd: the odd shapes alone, one launch each, for compute-sanitizer; --tiles: one consumer
//     warpgroup of 64 rows per CTA and two CTAs per SM (D 64, and D 128 with 64-key tiles); --encode: the host's
//     cost of the kernel argument with and without its three tensor maps.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
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

struct Point {
  int batch, hq, hk, sq, sk, d;  // d: the real head dim (the tile's bucket may be larger)
  bool causal, lower_right;
};

// The standard grid's point: B*S 16k tokens, H*D 2048.
inline Point grid_point(int s, int d, bool causal) {
  return Point{16384 / s, 2048 / d, 2048 / d, s, s, d, causal, false};
}

// Launches per timed set and sets (5 x 20 after 5 warm-up launches; --odd: one launch, no timing worth reading).
static int g_warmup = 5, g_sets = 5, g_per_set = 20;

struct Buffers {
  E *q, *k, *v, *o, *ref;
  float* lse;
};

// Times Tr at pt with the TMA producer or the cp.async one; is_ref: its output becomes the reference the
// next calls are compared with (max |diff|), and every output's checksum is printed (the inputs are the same
// in every build).
template <typename Tr>
double time_variant(const char* name, const Point& pt, Buffers& bf, bool tma, bool is_ref) {
  FwdParams p =
      probe::dense_fwd_params(bf.q, bf.k, bf.v, bf.o, bf.lse, pt.batch, pt.hq, pt.hk, pt.sq, pt.sk, pt.d, pt.causal);
  p.lower_right = pt.lower_right;
  p.m_blocks = (pt.sq + Tr::kBlockM - 1) / Tr::kBlockM;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  check(cudaMemset(bf.o, 0xff, size_t(pt.batch) * pt.hq * pt.sq * pt.d * 2), "poison o");  // NaN: unwritten shows
  for (int i = 0; i < g_warmup; ++i) launch_fwd_sm90<Tr>(p, nullptr, 0, tma);
  check(cudaDeviceSynchronize(), name);
  std::vector<float> sets;
  for (int set = 0; set < g_sets; ++set) {
    cudaEventRecord(e0);
    for (int i = 0; i < g_per_set; ++i) launch_fwd_sm90<Tr>(p, nullptr, 0, tma);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    sets.push_back(ms * 1e3f / g_per_set);
  }
  check(cudaGetLastError(), name);
  std::sort(sets.begin(), sets.end());
  const float median = sets[sets.size() / 2];
  const size_t n = size_t(pt.batch) * pt.hq * pt.sq * pt.d;
  if (is_ref) check(cudaMemcpy(bf.ref, bf.o, n * 2, cudaMemcpyDeviceToDevice), "copy ref");
  std::vector<E> a(n), b(n);
  check(cudaMemcpy(a.data(), bf.o, n * 2, cudaMemcpyDeviceToHost), "copy o");
  check(cudaMemcpy(b.data(), bf.ref, n * 2, cudaMemcpyDeviceToHost), "copy ref");
  double worst = 0, checksum = 0;  // checksum: the same inputs in every build, so two builds' kernels compare by it
  size_t nan = 0;
  for (size_t i = 0; i < n; ++i) {
    const double x = __bfloat162float(a[i]);
    if (std::isnan(x)) ++nan;
    worst = std::max(worst, std::fabs(x - double(__bfloat162float(b[i]))));
    checksum += std::fabs(x) * double(1 + i % 7);
  }
  const double flops = 4.0 * pt.batch * pt.hq * double(pt.sq) * pt.sk * pt.d / (pt.causal ? 2 : 1);
  std::printf(
      "{\"producer\": \"%s\", \"B\": %d, \"Hq\": %d, \"Hk\": %d, \"Sq\": %d, \"Sk\": %d, \"D\": %d, \"bucket\": %d, "
      "\"causal\": %d, \"lowerRight\": %d, \"us\": %.1f, \"tflops\": %.1f, \"maxDiffVsCpAsync\": %.3g, \"nan\": %zu, "
      "\"checksum\": %.9g}\n",
      name, pt.batch, pt.hq, pt.hk, pt.sq, pt.sk, pt.d, Tr::kHeadDim, int(pt.causal), int(pt.lower_right), median,
      flops / median / 1e6, worst, nan, checksum);
  std::fflush(stdout);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return median;
}

template <typename Tr>
void both_producers(const Point& pt, Buffers& bf) {
  time_variant<Tr>("cp.async", pt, bf, false, true);
  time_variant<Tr>("tma", pt, bf, true, false);
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
  using D128 = FwdSm90Traits<128, 128, 128, 1, E, true>;
  using D256 = FwdSm90Traits<256, 128, 64, 1, E, true>;
  const std::string mode = argc > 1 ? argv[1] : "";
  const bool grid_only = mode == "--grid", odd_only = mode == "--odd";
  if (mode == "--encode") {  // host ns per kernel argument: the tiny shape and the grid's D 128 S 1k
    // cp.async: the parameters alone; tma: with the three maps, the same tensors every call (the maps' cache hits)
    // or two sets of tensors in alternation (every map encoded again).
    for (const Point& pt : {Point{1, 1, 1, 16, 16, 64, false, false}, grid_point(1024, 128, false)})
      for (int round = 0; round < 2; ++round)
        for (const char* how : {"cp.async", "tma same tensors", "tma alternating tensors"}) {
          const bool tma = how[0] == 't', alternate = how[4] == 'a';
          FwdParams p[2];
          for (int i = 0; i < 2; ++i)
            p[i] = probe::dense_fwd_params(bf.q + i * 64, bf.k + i * 64, bf.v + i * 64, bf.o, bf.lse, pt.batch, pt.hq,
                                           pt.hk, pt.sq, pt.sk, pt.d, false);
          constexpr int kCalls = 200000;
          unsigned sink = 0;
          const auto t0 = std::chrono::steady_clock::now();
          for (int i = 0; i < kCalls; ++i) {
            const FwdSm90Args a = fwd_sm90_args<D128>(p[alternate ? i & 1 : 0], tma);
            sink += reinterpret_cast<const unsigned char*>(&a.k)[i & 127];
          }
          const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
          std::printf("{\"encode\": \"%s\", \"S\": %d, \"D\": %d, \"nsPerArgument\": %.1f, \"sink\": %u}\n", how, pt.sq,
                      pt.d, ns / kCalls, sink & 1);
        }
    return 0;
  }
  if (mode == "--tiles") {  // one consumer warpgroup of 64 rows per CTA, two CTAs per SM (D 64; D 128 at 64 keys)
    for (int round = 0; round < 2; ++round)
      for (int s : {1024, 4096, 16384})
        for (bool causal : {false, true}) {
          const Point pt = grid_point(s, 64, causal);
          time_variant<D64>("tma n128", pt, bf, true, true);
          time_variant<FwdSm90Traits<64, 64, 128, 2, E, false>>("tma m64 2 CTAs/SM", pt, bf, true, false);
          // D 128 with 64 query rows and 64-key tiles: 2 stages fit two CTAs per SM (81 KB each).
          const Point p128 = grid_point(s, 128, causal);
          time_variant<D128>("tma n128", p128, bf, true, true);
          time_variant<FwdSm90Traits<128, 64, 64, 2, E, true>>("tma m64 n64 2 CTAs/SM", p128, bf, true, false);
        }
    return 0;
  }
  if (odd_only) g_warmup = 0, g_sets = 1, g_per_set = 1;
  for (int round = 0; round < (odd_only ? 0 : 2); ++round)
    for (int s : {1024, 4096, 16384})
      for (bool causal : {false, true}) {
        if (grid_only) {
          time_variant<D64>("tma", grid_point(s, 64, causal), bf, true, true);
          time_variant<D128>("tma", grid_point(s, 128, causal), bf, true, true);
          time_variant<D256>("tma", grid_point(s, 256, causal), bf, true, true);
        } else {
          both_producers<D64>(grid_point(s, 64, causal), bf);
          both_producers<D128>(grid_point(s, 128, causal), bf);
          both_producers<D256>(grid_point(s, 256, causal), bf);
        }
      }
  if (grid_only) return 0;
  // Odd shapes: rows and keys that end mid-tile, head dims below their bucket (zero-filled columns), GQA.
  for (const Point& pt : {Point{3, 6, 2, 1000, 1000, 72, false, false}, Point{3, 6, 2, 1000, 17, 72, true, true},
                          Point{2, 4, 1, 1, 1000, 72, true, true}, Point{2, 4, 4, 17, 1000, 8, false, false}})
    if (pt.d > 64) {
      both_producers<D128>(pt, bf);
    } else {
      both_producers<D64>(pt, bf);
    }
  both_producers<D256>(Point{2, 3, 1, 1000, 1000, 256, true, false}, bf);
  // The one-warpgroup tile (TMA only) against the generated D 64 tile on odd shapes.
  for (const Point& pt : {Point{2, 4, 4, 17, 1000, 8, false, false}, Point{3, 6, 2, 1000, 777, 40, true, true}}) {
    time_variant<D64>("cp.async", pt, bf, false, true);
    time_variant<FwdSm90Traits<64, 64, 128, 2, E, false>>("tma m64 2 CTAs/SM", pt, bf, true, false);
  }
  return 0;
}
