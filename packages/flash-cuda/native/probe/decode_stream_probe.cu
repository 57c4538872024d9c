// How fast a decode-shaped kernel can stream K and V, by load path: the decode shape (B 8, Hk 8, Sk 8192, D 128,
// bf16, K and V [B, S, Hk, D]: 268 MB) read by a grid of (splits, Hk, B) CTAs, each walking its split's keys in
// 64-key stages (32 KB of K+V) through a ring of `stages` shared-memory buffers, by one of two load paths:
//  - "tma": one producer thread issues tensor-map boxes (128-byte swizzle, [64 keys x 64 dims] per box, 4 per
//    stage; paged: one box per 16-key page and 64 dims) that complete on the stage's mbarrier; 4 consumer warps
//    wait on it and hand the buffer back through a second mbarrier;
//  - "cpasync": the 4 warps issue 16-byte cp.async copies into the same swizzled layout, a classic multi-stage
//    ring (wait_group + barrier);
//  - "ws-cpasync" (--deep only): 4 more warps issue those copies and signal each stage's mbarrier, the 4 consumer
//    warps never wait on a CTA barrier (warp specialization on cp.async).
// With `math` the consumers do the decode's tensor-core work on each stage (each warp S = Q.K^T and O += P.V on
// its 16 keys with mma.sync, exp2 on the scores), otherwise they only touch the buffer. Dense, or paged with
// 16-key pages in a shuffled block table; K and V zero, or with --random bf16 values like a real cache's. CUDA
// events around 100 back-to-back launches after 20; one JSON line per configuration. Answers: which path and ring
// depth reaches the read ceiling (scripts/read-ceiling.cu). --kernels: flash-cuda's decode-shaped kernels alone
// beside it; --deep: the decode kernel at ring depths 3-6 and the rings with the math, all-warps or
// warp-specialized, in two rounds.
//
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -I packages/flash-cuda/native/src \
//     -I packages/cuda/native/include -I packages/native/include -o decode-stream-probe \
//     packages/flash-cuda/native/probe/decode_stream_probe.cu && ./decode-stream-probe [--one | --kernels | --deep] [--random]
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "attn/barriers.h"
#include "fill_random.cuh"
#include "fwd/combine.cu"
#include "fwd/flash_fwd_decode_kernel.h"
#include "fwd/flash_fwd_kernel.h"
#include "launch/flash_fwd_decode_launch.h"
#include "attn/ptx.h"
#include "sm90/tensor_maps.h"
#include "sm90/tma_ops.h"

using namespace attn;
using namespace attn::sm90;
using namespace attn::flash::sm90;
using E = __nv_bfloat16;

constexpr int kB = 8, kHk = 8, kS = 8192, kD = 128, kN = 64, kPage = 16;
constexpr int kStageBytes = 2 * kN * kD * 2;  // K and V
constexpr int kConsumers = 4;

struct Args {
  const E* k;
  const E* v;
  const int* table;  // paged: [B][S / kPage], else null
  int splits;
  unsigned* sink;
};

// Byte offset of 16-byte chunk c (0..15) of row r in a stage half-tile pair: dims [64h, 64h + 64) of the
// kN rows are one 128-byte-swizzled block of kN * 128 bytes (the TMA's SWIZZLE_128B layout).
__device__ __forceinline__ uint32_t chunk_off(int r, int c) {
  return (c >> 3) * (kN * 128) + r * 128 + (((c & 7) ^ (r & 7)) << 4);
}

// The decode math of one stage for one warp: keys [16w, 16w + 16) of the stage against a 16-row Q held in
// registers. Returns a value that depends on every product so nothing is dropped.
__device__ __forceinline__ float stage_math(uint32_t sk, uint32_t sv, const uint32_t (&q)[8][4], float (&o)[16][4],
                                            int warp, int lane) {
  float s[2][4] = {};
  const int kr = warp * 16 + (lane & 7) + ((lane >> 4) << 3), kc = (lane >> 3) & 1;
#pragma unroll
  for (int ks = 0; ks < 8; ++ks) {
    uint32_t b[4];
    ldmatrix_x4(b, sk + chunk_off(kr, ks * 2 + kc));
    mma_16816<E>(s[0], q[ks], b[0], b[1]);
    mma_16816<E>(s[1], q[ks], b[2], b[3]);
  }
  uint32_t pa[4];
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
    const float e0 = exp2f(s[nt][0]), e1 = exp2f(s[nt][1]), e2 = exp2f(s[nt][2]), e3 = exp2f(s[nt][3]);
    __nv_bfloat162 lo = __floats2bfloat162_rn(e0, e1), hi = __floats2bfloat162_rn(e2, e3);
    pa[nt * 2] = *reinterpret_cast<uint32_t*>(&lo);
    pa[nt * 2 + 1] = *reinterpret_cast<uint32_t*>(&hi);
  }
  const uint32_t a[4] = {pa[0], pa[1], pa[2], pa[3]};
  const int vr = warp * 16 + (lane & 7) + (((lane >> 3) & 1) << 3), vc = lane >> 4;
#pragma unroll
  for (int dp = 0; dp < 8; ++dp) {
    uint32_t b[4];
    ldmatrix_x4_trans(b, sv + chunk_off(vr, dp * 2 + vc));
    mma_16816<E>(o[dp * 2], a, b[0], b[1]);
    mma_16816<E>(o[dp * 2 + 1], a, b[2], b[3]);
  }
  return s[0][0];
}

// A Q tile's A fragments of arbitrary bf16 bits (the probe times the math, not its values).
__device__ __forceinline__ void probe_q(uint32_t (&q)[8][4], int lane) {
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) q[i][j] = 0x3c003c00u ^ (lane * 8 + i + j);
}

struct Range {
  int b, hk, key0, stages_n;
};
__device__ __forceinline__ Range cta_range(int splits) {
  const int per = (kS / kN + splits - 1) / splits;
  const int n0 = blockIdx.x * per, n1 = min(kS / kN, n0 + per);
  return {int(blockIdx.z), int(blockIdx.y), n0 * kN, max(0, n1 - n0)};
}

// The consumer warps of the mbarrier rings (TMA, warp-specialized cp.async): wait for each stage's 'full'
// mbarrier, do the stage's work, hand it back on its 'empty' mbarrier (one arrival per warp).
template <int kStages, bool kMath>
__device__ __forceinline__ void consume_stages(const unsigned char* smem, uint64_t* full, uint64_t* empty,
                                               const Range& rg, const Args& a, int warp, int lane) {
  uint32_t q[8][4];
  probe_q(q, lane);
  float o[16][4] = {};
  float acc = 0.f;
  for (int i = 0; i < rg.stages_n; ++i) {
    const int s = i % kStages;
    mbar_wait(smem_addr(&full[s]), (i / kStages) & 1);
    const uint32_t sk = smem_addr(smem + s * kStageBytes), sv = sk + kStageBytes / 2;
    if constexpr (kMath) {
      acc += stage_math(sk, sv, q, o, warp, lane);
    } else {
      acc += __uint_as_float(*reinterpret_cast<const uint32_t*>(smem + s * kStageBytes + threadIdx.x * 4));
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(smem_addr(&empty[s]));
  }
#pragma unroll
  for (int i = 0; i < 16; ++i) acc += o[i][0] + o[i][3];
  if (acc == 1234.5f) atomicAdd(a.sink, 1u);
}

// ---- TMA ring: warp kConsumers is the producer.
template <int kStages, bool kMath, bool kPaged>
__global__ void __launch_bounds__((kConsumers + 1) * 32)
    tma_kernel(const __grid_constant__ CUtensorMap mk, const __grid_constant__ CUtensorMap mv, Args a) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem =
      reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  __shared__ __align__(8) uint64_t full[kStages], empty[kStages];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const Range rg = cta_range(a.splits);
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(smem_addr(&full[s]), 1);
      mbar_init(smem_addr(&empty[s]), kConsumers);
    }
    fence_mbarrier_init();
  }
  __syncthreads();
  if (warp == kConsumers) {
    if (lane == 0) {
      prefetch_tensormap(&mk);
      prefetch_tensormap(&mv);
      const int* trow = kPaged ? a.table + rg.b * (kS / kPage) : nullptr;
      for (int i = 0; i < rg.stages_n; ++i) {
        const int s = i % kStages;
        mbar_wait(smem_addr(&empty[s]), ((i / kStages) & 1) ^ 1);
        const uint32_t bar = smem_addr(&full[s]);
        mbar_arrive_expect_tx(bar, kStageBytes);
        const uint32_t sk = smem_addr(smem + s * kStageBytes), sv = sk + kStageBytes / 2;
        const int key0 = rg.key0 + i * kN;
        if constexpr (kPaged) {
#pragma unroll
          for (int pg = 0; pg < kN / kPage; ++pg) {
            const int blk = __ldg(trow + key0 / kPage + pg);
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const uint32_t off = h * (kN * 128) + pg * kPage * 128;
              tma_load_4d(sk + off, &mk, bar, h * 64, rg.hk, 0, blk);
              tma_load_4d(sv + off, &mv, bar, h * 64, rg.hk, 0, blk);
            }
          }
        } else {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            tma_load_4d(sk + h * (kN * 128), &mk, bar, h * 64, rg.hk, key0, rg.b);
            tma_load_4d(sv + h * (kN * 128), &mv, bar, h * 64, rg.hk, key0, rg.b);
          }
        }
      }
    }
    return;
  }
  consume_stages<kStages, kMath>(smem, full, empty, rg, a, warp, lane);
}

// ---- cp.async ring: the 4 warps load and compute.
template <int kStages, bool kMath, bool kPaged>
__global__ void __launch_bounds__(kConsumers * 32) cpasync_kernel(Args a) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem =
      reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const Range rg = cta_range(a.splits);
  const int* trow = kPaged ? a.table + rg.b * (kS / kPage) : nullptr;
  // Thread tid copies chunk tid % 16 of rows tid / 16 + 8 r (r < 8) of K and of V.
  const int c = tid & 15, r0 = tid >> 4;
  const int64_t rs = int64_t(kHk) * kD;
  auto issue = [&](int i) {
    if (i < rg.stages_n) {
      const uint32_t sk = smem_addr(smem + (i % kStages) * kStageBytes), sv = sk + kStageBytes / 2;
      const int key0 = rg.key0 + i * kN;
#pragma unroll
      for (int r = 0; r < kN / 8; ++r) {
        const int row = r0 + 8 * r, key = key0 + row;
        int64_t off;
        if constexpr (kPaged) {
          off = (int64_t(__ldg(trow + key / kPage)) * kPage + key % kPage) * rs;
        } else {
          off = (int64_t(rg.b) * kS + key) * rs;
        }
        off += rg.hk * kD + c * 8;
        cp_async_16(sk + chunk_off(row, c), a.k + off, 16);
        cp_async_16(sv + chunk_off(row, c), a.v + off, 16);
      }
    }
    cp_async_commit();
  };
  for (int i = 0; i < kStages - 1; ++i) issue(i);
  uint32_t q[8][4];
  probe_q(q, lane);
  float o[16][4] = {};
  float acc = 0.f;
  for (int i = 0; i < rg.stages_n; ++i) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // stage i landed for every thread; every warp is done with stage i - 1
    issue(i + kStages - 1);
    const int s = i % kStages;
    const uint32_t sk = smem_addr(smem + s * kStageBytes), sv = sk + kStageBytes / 2;
    if constexpr (kMath) {
      acc += stage_math(sk, sv, q, o, warp, lane);
    } else {
      acc += __uint_as_float(*reinterpret_cast<const uint32_t*>(smem + s * kStageBytes + tid * 4));
    }
  }
#pragma unroll
  for (int i = 0; i < 16; ++i) acc += o[i][0] + o[i][3];
  if (acc == 1234.5f) atomicAdd(a.sink, 1u);
}

// ---- warp-specialized cp.async ring: warps kConsumers.. (kConsumers producers) issue every stage's copies
// and signal the stage's full mbarrier by cp.async.mbarrier.arrive; the consumer warps wait on it, compute and
// release the stage on its empty mbarrier. No CTA barrier: the copies never wait on a warp's math.
template <int kStages, bool kMath>
__global__ void __launch_bounds__(2 * kConsumers * 32) ws_cpasync_kernel(Args a) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem =
      reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  __shared__ __align__(8) uint64_t full[kStages], empty[kStages];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const Range rg = cta_range(a.splits);
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(smem_addr(&full[s]), kConsumers * 32);
      mbar_init(smem_addr(&empty[s]), kConsumers);
    }
    fence_mbarrier_init();
  }
  __syncthreads();
  if (warp >= kConsumers) {
    const int ptid = tid - kConsumers * 32, c = ptid & 15, r0 = ptid >> 4;
    const int64_t rs = int64_t(kHk) * kD;
    for (int i = 0; i < rg.stages_n; ++i) {
      const int s = i % kStages;
      mbar_wait(smem_addr(&empty[s]), ((i / kStages) & 1) ^ 1);
      const uint32_t sk = smem_addr(smem + s * kStageBytes), sv = sk + kStageBytes / 2;
      const int key0 = rg.key0 + i * kN;
#pragma unroll
      for (int r = 0; r < kN / 8; ++r) {
        const int row = r0 + 8 * r, key = key0 + row;
        const int64_t off = (int64_t(rg.b) * kS + key) * rs + rg.hk * kD + c * 8;
        cp_async_16(sk + chunk_off(row, c), a.k + off, 16);
        cp_async_16(sv + chunk_off(row, c), a.v + off, 16);
      }
      cp_async_mbar_arrive(smem_addr(&full[s]));
    }
    cp_async_wait<0>();
    return;
  }
  consume_stages<kStages, kMath>(smem, full, empty, rg, a, warp, lane);
}

struct Ctx {
  Args a;
  CUtensorMap mk, mv, pk, pv;
  cudaEvent_t e0, e1;
  bool first = true;
};

// Microseconds per launch: CUDA events around 100 launches after 20; err is the first error they raised.
template <typename Launch>
double launch_us(Ctx& cx, Launch launch, cudaError_t& err) {
  for (int i = 0; i < 20; ++i) launch();
  cudaEventRecord(cx.e0);
  for (int i = 0; i < 100; ++i) launch();
  cudaEventRecord(cx.e1);
  cudaEventSynchronize(cx.e1);
  err = cudaGetLastError();
  float ms = 0;
  cudaEventElapsedTime(&ms, cx.e0, cx.e1);
  return ms * 1e3 / 100;
}

template <typename Launch>
void time_it(Ctx& cx, const char* path, int stages, bool math, bool paged, int splits, int smem, Launch launch) {
  const std::string pth(path);
  const int threads = pth == "tma"          ? (kConsumers + 1) * 32
                      : pth == "ws-cpasync" ? 2 * kConsumers * 32
                                            : kConsumers * 32;
  int per_sm = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, launch(true), threads, smem);
  cudaError_t err;
  const double us = launch_us(cx, [&] { launch(false); }, err), bytes = 2.0 * kB * kS * kHk * kD * 2;
  printf(
      "{\"path\": \"%s\", \"stages\": %d, \"math\": %d, \"paged\": %d, \"splits\": %d, \"ctas\": %d, "
      "\"ctasPerSm\": %d, \"us\": %.2f, \"TBs\": %.3f, \"error\": \"%s\"}\n",
      path, stages, int(math), int(paged), splits, splits * kB * kHk, per_sm, us, bytes / us / 1e6,
      err == cudaSuccess ? "" : cudaGetErrorString(err));
  fflush(stdout);
}

template <int kStages, bool kMath, bool kPaged>
void run_config(Ctx& cx, int splits) {
  const dim3 grid(splits, kHk, kB);
  const int smem = kStages * kStageBytes + 1024;
  Args a = cx.a;
  a.splits = splits;
  {
    auto kern = tma_kernel<kStages, kMath, kPaged>;
    cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    const CUtensorMap& mk = kPaged ? cx.pk : cx.mk;
    const CUtensorMap& mv = kPaged ? cx.pv : cx.mv;
    time_it(cx, "tma", kStages, kMath, kPaged, splits, smem, [&](bool query) -> const void* {
      if (!query) kern<<<grid, (kConsumers + 1) * 32, smem>>>(mk, mv, a);
      return reinterpret_cast<const void*>(kern);
    });
  }
  {
    auto kern = cpasync_kernel<kStages, kMath, kPaged>;
    cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    time_it(cx, "cpasync", kStages, kMath, kPaged, splits, smem, [&](bool query) -> const void* {
      if (!query) kern<<<grid, kConsumers * 32, smem>>>(a);
      return reinterpret_cast<const void*>(kern);
    });
  }
}

template <int kStages>
void run_stages(Ctx& cx) {
  for (int splits : {2, 3, 4, 6, 8}) {
    run_config<kStages, false, false>(cx, splits);
    run_config<kStages, true, false>(cx, splits);
    run_config<kStages, true, true>(cx, splits);
  }
}

// --kernels: flash-cuda's two decode-shaped forward kernels launched alone on the same K/V (packed GQA, Hq 32,
// split-KV partials, no combine, plain launches), beside the cp.async ring above: what the kernel itself costs.
template <typename Tr, typename Kernel>
void time_forward(Ctx& cx, const char* name, Kernel kernel, int smem, attn::flash::FwdParams p, int splits) {
  p.num_splits = splits;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  const dim3 grid(splits, kHk, kB);
  cudaError_t err;
  const double us = launch_us(cx, [&] { kernel<<<grid, Tr::kNThreads, smem>>>(p); }, err);
  printf("{\"path\": \"%s\", \"splits\": %d, \"us\": %.2f, \"error\": \"%s\"}\n", name, splits, us,
         err == cudaSuccess ? "" : cudaGetErrorString(err));
  fflush(stdout);
}

// The decode kernel as a call launches it (launch/flash_fwd_decode_launch.h: programmatic dependent launches), its
// splits merged by the partials and the combine kernel, or (a pair) in a cluster.
// `batch` batch rows of the shape (B * Hk row tiles), the tile `Tr` (keys per stage, stages, warps).
template <typename Tr>
void time_merges(Ctx& cx, attn::flash::FwdParams p, int splits, int batch) {
  using namespace attn::flash;
  p.num_splits = splits;
  p.batch = batch;
  p.accum_rows = int64_t(batch) * p.heads_q;
  auto report = [&](const char* path, double us, cudaError_t err) {
    printf(
        "{\"path\": \"%s\", \"blockN\": %d, \"stages\": %d, \"warps\": %d, \"batch\": %d, \"splits\": %d, "
        "\"ctas\": %d, \"us\": %.2f, \"error\": \"%s\"}\n",
        path, Tr::kBlockN, Tr::kStages, Tr::kNWarps, batch, splits, splits * kHk * batch, us,
        err == cudaSuccess ? "" : cudaGetErrorString(err));
    fflush(stdout);
  };
  cudaError_t err;
  p.cluster_splits = false;
  report("decode+combine",
         launch_us(cx, [&] { run_fwd_decode<Tr>(p, nullptr, 0), run_combine(p, true, nullptr, 0); }, err), err);
  if (splits > kMaxClusterSplits) return;
  p.cluster_splits = true;
  report("decode-cluster", launch_us(cx, [&] { run_fwd_decode<Tr>(p, nullptr, 0); }, err), err);
}

template <int kStages, bool kMath>
void run_ws(Ctx& cx, int splits) {
  const dim3 grid(splits, kHk, kB);
  const int smem = kStages * kStageBytes + 1024;
  Args a = cx.a;
  a.splits = splits;
  auto kern = ws_cpasync_kernel<kStages, kMath>;
  cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  time_it(cx, "ws-cpasync", kStages, kMath, false, splits, smem, [&](bool query) -> const void* {
    if (!query) kern<<<grid, 2 * kConsumers * 32, smem>>>(a);
    return reinterpret_cast<const void*>(kern);
  });
}

// --deep: the decode kernel with deeper rings (64-key tiles, 4 warps) at the decode shape's split counts, in
// rounds, beside the cp.async rings with the decode math (all warps issuing, or warp-specialized).
void run_deep(Ctx& cx, attn::flash::FwdParams p) {
  using namespace attn::flash;
  for (int round = 0; round < 2; ++round) {
    for (int splits : {2, 4}) {
      time_merges<DecodeTraits<128, 64, 3, E>>(cx, p, splits, kB);
      time_merges<DecodeTraits<128, 64, 4, E>>(cx, p, splits, kB);
      time_merges<DecodeTraits<128, 64, 5, E>>(cx, p, splits, kB);
      time_merges<DecodeTraits<128, 64, 6, E>>(cx, p, splits, kB);
      run_config<3, true, false>(cx, splits);
      run_config<5, true, false>(cx, splits);
      run_ws<3, true>(cx, splits);
      run_ws<4, true>(cx, splits);
      run_ws<5, true>(cx, splits);
      run_ws<4, false>(cx, splits);
    }
  }
}

void run_kernels(Ctx& cx, bool deep) {
  using namespace attn::flash;
  constexpr int kHq = 32;
  E *q, *o;
  float *lse, *oacc, *lacc;
  cudaMalloc(&q, size_t(kB) * kHq * kD * 2);
  cudaMalloc(&o, size_t(kB) * kHq * kD * 2);
  cudaMalloc(&lse, size_t(kB) * kHq * 4);
  cudaMalloc(&oacc, size_t(16) * kB * kHq * kD * 4);
  cudaMalloc(&lacc, size_t(16) * kB * kHq * 4);
  cudaMemset(q, 0, size_t(kB) * kHq * kD * 2);
  FwdParams p{};
  p.q = q, p.k = cx.a.k, p.v = cx.a.v, p.o = o, p.lse = lse;
  p.q_batch_stride = int64_t(kHq) * kD, p.q_head_stride = kD, p.q_row_stride = kD;
  p.k_batch_stride = p.v_batch_stride = int64_t(kS) * kHk * kD;
  p.k_head_stride = p.v_head_stride = kD;
  p.k_row_stride = p.v_row_stride = int64_t(kHk) * kD;
  p.o_batch_stride = int64_t(kHq) * kD, p.o_head_stride = kD, p.o_row_stride = kD;
  p.lse_batch_stride = kHq, p.lse_head_stride = 1;
  p.batch = kB, p.heads_q = kHq, p.heads_k = kHk, p.group = kHq / kHk;
  p.seqlen_q = 1, p.seqlen_k = kS, p.head_dim = kD;
  p.score_mul = float(1.4426950408889634 / std::sqrt(double(kD)));
  p.window_left = -1, p.window_right = -1;
  p.aligned16 = true;
  p.pack_gqa = true, p.m_blocks = 1;
  p.oaccum = oacc, p.lse_accum = lacc, p.oaccum_stride = kD, p.accum_rows = int64_t(kB) * kHq;
  if (deep) {
    run_deep(cx, p);
    return;
  }
  using Dec = DecodeTraits<128, 64, 3, E>;
  using Lean = FwdTraits<128, 64, 128, 4, false, E, false>;
  for (int batch : {1, 2, 4, 8})
    for (int splits : {2, 4, 8, 16}) time_merges<Dec>(cx, p, splits, batch);
  for (int splits : {2, 4, 8}) {
    time_forward<Dec>(cx, "decode", flash_fwd_decode_kernel<Dec>, Dec::kSmemBytes, p, splits);
    time_forward<Lean>(cx, "lean_small", flash_fwd_kernel<Lean>, Lean::kSmemBytes, p, splits);
    run_config<3, true, false>(cx, splits);
  }
}

int main(int argc, char** argv) {
  const size_t elems = size_t(kB) * kS * kHk * kD;
  E *k, *v;
  int* table;
  unsigned* sink;
  cudaMalloc(&k, elems * 2);
  cudaMalloc(&v, elems * 2);
  cudaMalloc(&sink, 4);
  const bool random = argc > 1 && std::string(argv[argc - 1]) == "--random";
  if (random) {  // bf16 in [-2, 2), like a real cache (a constant fill toggles fewer HBM data lines)
    fill_random<<<1024, 256>>>(reinterpret_cast<uint16_t*>(k), elems, 1);
    fill_random<<<1024, 256>>>(reinterpret_cast<uint16_t*>(v), elems, 2);
  } else {
    cudaMemset(k, 0, elems * 2);
    cudaMemset(v, 0, elems * 2);
  }
  // Paged: the same pools read as [B * S / kPage blocks, kPage, Hk, D], each batch row's pages shuffled.
  const int blocks = kB * kS / kPage;
  std::vector<int> perm(blocks);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(7));
  cudaMalloc(&table, blocks * 4);
  cudaMemcpy(table, perm.data(), blocks * 4, cudaMemcpyHostToDevice);
  Ctx cx;
  cx.a = {k, v, table, 0, sink};
  const uint32_t box[4] = {64, 1, kN, 1}, pbox[4] = {64, 1, kPage, 1};
  const uint64_t dims[4] = {kD, kHk, kS, kB}, pdims[4] = {kD, kHk, kPage, uint64_t(blocks)};
  const int64_t strides[3] = {kD, int64_t(kHk) * kD, int64_t(kS) * kHk * kD};
  const int64_t pstrides[3] = {kD, int64_t(kHk) * kD, int64_t(kPage) * kHk * kD};
  cx.mk = tiled_map_4d(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, k, dims, strides, box, "K");
  cx.mv = tiled_map_4d(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, v, dims, strides, box, "V");
  cx.pk = tiled_map_4d(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, k, pdims, pstrides, pbox, "K pages");
  cx.pv = tiled_map_4d(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, v, pdims, pstrides, pbox, "V pages");
  cudaEventCreate(&cx.e0);
  cudaEventCreate(&cx.e1);
  if (argc > 1 && (std::string(argv[1]) == "--kernels" || std::string(argv[1]) == "--deep")) {
    run_kernels(cx, std::string(argv[1]) == "--deep");
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "--one") {  // one configuration (3 stages, math, 4 splits), for ncu
    run_config<3, true, false>(cx, 4);
    run_config<3, true, true>(cx, 4);
    return 0;
  }
  run_stages<2>(cx);
  run_stages<3>(cx);
  run_stages<4>(cx);
  run_stages<6>(cx);
  return 0;
}
