// A standalone launch of the Hopper forward kernel (bf16, the generated configurations: D=64 and D=128 at
// 128 x 128 with 3 stages, the first with the joint K/V release; D=256 at 128 x 64 with 2 stages) for
// compute-sanitizer: racecheck on the addon runs every kernel of a call through Node, which is slow and
// cannot switch the kernel's barriers. Built twice by tools/research/ws-race-probe.sh, with and without
// ATTN_SM90_WS_NO_TURNS (the consumers' turn-taking compiled out), so that a hazard the tool reports can be
// pinned on the named-barrier hand-offs or not. It checks its output against a float64 reference too.
//
//   ws_race_probe <seq_q> <seq_k> <causal 0|1> [head dim 64|128|256, default 128]
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "dense_params.h"
#include "sm90/flash_fwd_sm90_launch.h"

using namespace attn::flash;

static void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

template <typename Tr>
static int run_probe(int sq, int sk, bool causal) {
  constexpr int B = 1, H = 2, D = Tr::kHeadDim;
  const size_t nq = size_t(B) * H * sq * D, nk = size_t(B) * H * sk * D;
  std::vector<__nv_bfloat16> hq(nq), hk(nk), hv(nk);
  uint32_t state = 12345;
  auto uniform = [&] {  // xorshift: reproducible inputs in [-1, 1)
    state ^= state << 13, state ^= state >> 17, state ^= state << 5;
    return float(state >> 8) / float(1 << 23) - 1.f;
  };
  for (auto& x : hq) x = __float2bfloat16(uniform());
  for (auto& x : hk) x = __float2bfloat16(uniform());
  for (auto& x : hv) x = __float2bfloat16(uniform());

  __nv_bfloat16 *q, *k, *v, *o;
  float* lse;
  check(cudaMalloc(&q, nq * 2), "malloc q");
  check(cudaMalloc(&k, nk * 2), "malloc k");
  check(cudaMalloc(&v, nk * 2), "malloc v");
  check(cudaMalloc(&o, nq * 2), "malloc o");
  check(cudaMalloc(&lse, size_t(B) * H * sq * 4), "malloc lse");
  check(cudaMemcpy(q, hq.data(), nq * 2, cudaMemcpyHostToDevice), "copy q");
  check(cudaMemcpy(k, hk.data(), nk * 2, cudaMemcpyHostToDevice), "copy k");
  check(cudaMemcpy(v, hv.data(), nk * 2, cudaMemcpyHostToDevice), "copy v");

  FwdParams p = probe::dense_fwd_params(q, k, v, o, lse, B, H, H, sq, sk, D, causal);
  const double scale = 1.0 / std::sqrt(double(D));
  p.m_blocks = (sq + Tr::kBlockM - 1) / Tr::kBlockM;
  run_fwd_sm90<Tr>(p, nullptr, 0);
  check(cudaDeviceSynchronize(), "kernel");

  std::vector<__nv_bfloat16> ho(nq);
  check(cudaMemcpy(ho.data(), o, nq * 2, cudaMemcpyDeviceToHost), "copy o");
  double worst = 0;
  std::vector<double> s(sk);
  for (int h = 0; h < H; ++h) {
    for (int i = 0; i < sq; ++i) {
      const int visible = causal ? std::min(sk, i + 1) : sk;
      double m = -INFINITY, l = 0;
      for (int j = 0; j < visible; ++j) {
        double dot = 0;
        for (int d = 0; d < D; ++d)
          dot += double(__bfloat162float(hq[(size_t(h) * sq + i) * D + d])) *
                 double(__bfloat162float(hk[(size_t(h) * sk + j) * D + d]));
        s[j] = dot * scale;
        m = std::max(m, s[j]);
      }
      for (int j = 0; j < visible; ++j) l += std::exp(s[j] - m);
      for (int d = 0; d < D; ++d) {
        double ref = 0;
        for (int j = 0; j < visible; ++j)
          ref += std::exp(s[j] - m) / l * __bfloat162float(hv[(size_t(h) * sk + j) * D + d]);
        worst = std::max(worst, std::fabs(ref - double(__bfloat162float(ho[(size_t(h) * sq + i) * D + d]))));
      }
    }
  }
  // bf16 output of a convex combination of values in [-1, 1): a rounding of 2^-8 plus the P rounding.
  const bool ok = worst < 2e-2;
  std::printf("ws_race_probe D=%d sq=%d sk=%d causal=%d: max |out - ref| = %.3g %s\n", D, sq, sk, int(causal), worst,
              ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

int main(int argc, char** argv) {
  const int sq = argc > 1 ? std::atoi(argv[1]) : 200;
  const int sk = argc > 2 ? std::atoi(argv[2]) : 300;
  const bool causal = argc > 3 && std::atoi(argv[3]) != 0;
  const int d = argc > 4 ? std::atoi(argv[4]) : 128;
  if (d == 256) return run_probe<FwdSm90Traits<256, 128, 64, 1, __nv_bfloat16, true>>(sq, sk, causal);
  if (d == 128) return run_probe<FwdSm90Traits<128, 128, 128, 1, __nv_bfloat16, true>>(sq, sk, causal);
  if (d == 64) return run_probe<FwdSm90Traits<64, 128, 128, 1, __nv_bfloat16, false>>(sq, sk, causal);
  std::fprintf(stderr, "head dim %d: the probe is built for 64, 128 and 256\n", d);
  return 2;
}
