// Standalone check and timing of the Hopper fp8 forward kernel (no JS, no ABI), built by
// tools/research/fp8-fwd-probe.sh for a GPU host:
//   fp8_fwd_probe check <sq> <sk> <causal 0|1> <hq> <hk> <d>   against float64 attention of the dequantized inputs
//   fp8_fwd_probe bench [iters]   fp8 against the bf16 Hopper kernel (head dim 128), B·S 16k, H 16, S 1k/4k/16k
// check prints the largest error of O (per unit of max(1, max |reference|)) and of the logsumexp, beside the
// error of a naive fp8 computation (float64, P rounded to e4m3 once against its row max), and exits 1 when the
// kernel's error exceeds twice the naive one plus bf16's rounding of O.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "dense_params.h"
#include "sm90/flash_fwd_sm90_fp8_launch.h"
#include "sm90/flash_fwd_sm90_launch.h"
#include "sm90/fwd_sm90_fp8_config.h"

using namespace attn::flash;
using Bf16Tile = FwdSm90Traits<128, 128, 128, 1, __nv_bfloat16, true>;

static void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(2);
  }
}

static uint8_t to_e4m3(float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); }
static double from_e4m3(uint8_t b) {
  __nv_fp8_e4m3 v;
  v.__x = b;
  return double(float(v));
}

// fp8 params over byte tensors [B, H, S, D] (strides in elements = bytes), bf16 out of the same shape.
static FwdParams fp8_params(const void* q, const void* k, const void* v, void* o, float* lse, int b, int hq, int hk,
                            int sq, int sk, int d, bool causal, double dq, double dk, double dv) {
  FwdParams p = probe::dense_fwd_params(q, k, v, o, lse, b, hq, hk, sq, sk, d, causal);
  p.score_mul = float(1.0 / std::sqrt(double(d)) * dq * dk * probe::kLog2e);
  p.out_scale = float(dv);
  p.m_blocks = (sq + Fp8FwdTile::kBlockM - 1) / Fp8FwdTile::kBlockM;
  return p;
}

static int run_check(int sq, int sk, bool causal, int hq, int hk, int d) {
  const int B = 2;
  const size_t nq = size_t(B) * hq * sq * d, nk = size_t(B) * hk * sk * d;
  uint32_t state = 777u + sq * 31u + sk * 17u + d;
  auto uniform = [&] {
    state ^= state << 13, state ^= state >> 17, state ^= state << 5;
    return float(state >> 8) / float(1 << 23) - 1.f;
  };
  // Values of a few units, quantized with per-tensor scales as a user would (amax / 448).
  std::vector<uint8_t> hq8(nq), hk8(nk), hv8(nk);
  const double amp_q = 3.0, amp_k = 2.0, amp_v = 1.5;
  const double dq = amp_q / 448, dk = amp_k / 448, dv = amp_v / 448;
  for (auto& x : hq8) x = to_e4m3(float(amp_q * uniform() / dq));
  for (auto& x : hk8) x = to_e4m3(float(amp_k * uniform() / dk));
  for (auto& x : hv8) x = to_e4m3(float(amp_v * uniform() / dv));
  uint8_t *q, *k, *v;
  __nv_bfloat16* o;
  float* lse;
  check(cudaMalloc(&q, nq), "malloc q");
  check(cudaMalloc(&k, nk), "malloc k");
  check(cudaMalloc(&v, nk), "malloc v");
  check(cudaMalloc(&o, nq * 2), "malloc o");
  check(cudaMalloc(&lse, size_t(B) * hq * sq * 4), "malloc lse");
  check(cudaMemcpy(q, hq8.data(), nq, cudaMemcpyHostToDevice), "copy q");
  check(cudaMemcpy(k, hk8.data(), nk, cudaMemcpyHostToDevice), "copy k");
  check(cudaMemcpy(v, hv8.data(), nk, cudaMemcpyHostToDevice), "copy v");
  check(cudaMemset(o, 0xff, nq * 2), "poison o");  // NaN: rows the kernel misses show
  FwdParams p = fp8_params(q, k, v, o, lse, B, hq, hk, sq, sk, d, causal, dq, dk, dv);
  run_fwd_sm90_fp8<Fp8FwdTile>(p, nullptr, 0);
  check(cudaDeviceSynchronize(), "kernel");
  std::vector<__nv_bfloat16> ho(nq);
  std::vector<float> hl(size_t(B) * hq * sq);
  check(cudaMemcpy(ho.data(), o, nq * 2, cudaMemcpyDeviceToHost), "copy o");
  check(cudaMemcpy(hl.data(), lse, hl.size() * 4, cudaMemcpyDeviceToHost), "copy lse");

  const double scale = 1.0 / std::sqrt(double(d));
  double err = 0, naive_err = 0, lse_err = 0, ref_max = 0, bf16_round = 0;
  std::vector<double> sc(sk), ref(d), nai(d);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < hq; ++h)
      for (int i = 0; i < sq; ++i) {
        const int hk_i = h / (hq / hk);
        const uint8_t* qr = &hq8[((size_t(b) * hq + h) * sq + i) * d];
        double mx = -INFINITY;
        const int last = causal ? std::min(sk - 1, i) : sk - 1;
        for (int j = 0; j <= last; ++j) {
          const uint8_t* kr = &hk8[((size_t(b) * hk + hk_i) * sk + j) * d];
          double acc = 0;
          for (int c = 0; c < d; ++c) acc += from_e4m3(qr[c]) * dq * from_e4m3(kr[c]) * dk;
          sc[j] = acc * scale;
          mx = std::max(mx, sc[j]);
        }
        double sum = 0;
        std::fill(ref.begin(), ref.end(), 0.0);
        std::fill(nai.begin(), nai.end(), 0.0);
        for (int j = 0; j <= last; ++j) {
          const double pj = std::exp(sc[j] - mx);
          const double pj8 = from_e4m3(to_e4m3(float(pj)));
          sum += pj;
          const uint8_t* vr = &hv8[((size_t(b) * hk + hk_i) * sk + j) * d];
          for (int c = 0; c < d; ++c) {
            ref[c] += pj * from_e4m3(vr[c]) * dv;
            nai[c] += pj8 * from_e4m3(vr[c]) * dv;
          }
        }
        const size_t row = (size_t(b) * hq + h) * sq + i;
        for (int c = 0; c < d; ++c) {
          const double r = ref[c] / sum, n = nai[c] / sum, got = double(__bfloat162float(ho[row * d + c]));
          ref_max = std::max(ref_max, std::fabs(r));
          const double e = std::fabs(got - r);
          err = std::isnan(got) ? INFINITY : std::max(err, e);
          naive_err = std::max(naive_err, std::fabs(n - r));
          bf16_round = std::max(bf16_round, std::fabs(double(__bfloat162float(__float2bfloat16(float(r)))) - r));
        }
        const double lse_ref = mx + std::log(sum);
        lse_err = std::max(lse_err, std::fabs(double(hl[row]) - lse_ref));
      }
  const double unit = std::max(1.0, ref_max);
  const double bound = 2 * naive_err + 2 * bf16_round;
  const bool ok = err <= bound && lse_err <= 1e-3 * std::max(1.0, std::fabs(std::log(double(sk)))) + 1e-3;
  std::printf(
      "fp8 check sq %d sk %d causal %d hq %d hk %d d %d: O err %.3e (naive fp8 %.3e, bound %.3e, per unit %.3e) lse "
      "err %.3e %s\n",
      sq, sk, int(causal), hq, hk, d, err, naive_err, bound, err / unit, lse_err, ok ? "OK" : "FAIL");
  cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(o), cudaFree(lse);
  return ok ? 0 : 1;
}

__global__ void fill_bytes(uint8_t* dst, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint64_t z = (i + uint64_t(seed) * 0x1000000007ull) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z ^= z >> 31;
    const float x = float(uint32_t(z) >> 8) * (4.0f / 16777216.0f) - 2.0f;  // [-2, 2)
    dst[i] = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
  }
}

static void run_bench(int iters) {
  const int H = 16, D = 128;
  for (int S : {1024, 4096, 16384})
    for (int causal = 0; causal < 2; ++causal) {
      const int B = 16384 / S;
      const size_t n = size_t(B) * H * S * D;
      uint8_t *q8, *k8, *v8;
      __nv_bfloat16 *q, *k, *v, *o;
      float* lse;
      check(cudaMalloc(&q8, n), "malloc"), check(cudaMalloc(&k8, n), "malloc"), check(cudaMalloc(&v8, n), "malloc");
      check(cudaMalloc(&q, 2 * n), "malloc"), check(cudaMalloc(&k, 2 * n), "malloc"),
          check(cudaMalloc(&v, 2 * n), "malloc");
      check(cudaMalloc(&o, 2 * n), "malloc"), check(cudaMalloc(&lse, size_t(B) * H * S * 4), "malloc");
      fill_bytes<<<1024, 256>>>(q8, n, 1), fill_bytes<<<1024, 256>>>(k8, n, 2), fill_bytes<<<1024, 256>>>(v8, n, 3);
      fill_bytes<<<1024, 256>>>(reinterpret_cast<uint8_t*>(q), 2 * n, 4);  // any bits: timing only
      fill_bytes<<<1024, 256>>>(reinterpret_cast<uint8_t*>(k), 2 * n, 5);
      fill_bytes<<<1024, 256>>>(reinterpret_cast<uint8_t*>(v), 2 * n, 6);
      FwdParams p8 = fp8_params(q8, k8, v8, o, lse, B, H, H, S, S, D, causal, 0.01, 0.01, 0.01);
      FwdParams p16 = probe::dense_fwd_params(q, k, v, o, lse, B, H, H, S, S, D, causal);
      p16.m_blocks = (S + 127) / 128;
      cudaEvent_t e0, e1;
      cudaEventCreate(&e0), cudaEventCreate(&e1);
      auto time = [&](auto launch) {
        for (int w = 0; w < 3; ++w) launch();
        cudaEventRecord(e0);
        for (int it = 0; it < iters; ++it) launch();
        cudaEventRecord(e1);
        check(cudaEventSynchronize(e1), "bench");
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        return double(ms) * 1e3 / iters;
      };
      const double flops = 4.0 * B * H * double(S) * S * D * (causal ? 0.5 : 1.0);
      const double t16a = time([&] { run_fwd_sm90<Bf16Tile>(p16, nullptr, 0); });
      const double t8a = time([&] { run_fwd_sm90_fp8<Fp8FwdTile>(p8, nullptr, 0); });
      const double t16b = time([&] { run_fwd_sm90<Bf16Tile>(p16, nullptr, 0); });
      const double t8b = time([&] { run_fwd_sm90_fp8<Fp8FwdTile>(p8, nullptr, 0); });
      const double t16 = std::min(t16a, t16b), t8 = std::min(t8a, t8b);
      std::printf(
          "bench S %5d causal %d B %2d: bf16 %8.1f us (%5.0f TFLOP/s, rounds %.1f/%.1f)  fp8 %8.1f us (%5.0f TFLOP/s, "
          "rounds %.1f/%.1f)  fp8 speedup %.2fx\n",
          S, causal, B, t16, flops / t16 * 1e-6, t16a, t16b, t8, flops / t8 * 1e-6, t8a, t8b, t16 / t8);
      cudaFree(q8), cudaFree(k8), cudaFree(v8), cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(o), cudaFree(lse);
    }
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "check";
  if (mode == "bench") {
    run_bench(argc > 2 ? std::atoi(argv[2]) : 20);
    return 0;
  }
  const int sq = argc > 2 ? std::atoi(argv[2]) : 300, sk = argc > 3 ? std::atoi(argv[3]) : 300;
  const bool causal = argc > 4 && std::atoi(argv[4]) != 0;
  const int hq = argc > 5 ? std::atoi(argv[5]) : 4, hk = argc > 6 ? std::atoi(argv[6]) : 2;
  const int d = argc > 7 ? std::atoi(argv[7]) : 128;
  return run_check(sq, sk, causal, hq, hk, d);
}
