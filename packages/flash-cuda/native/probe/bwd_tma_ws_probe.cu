// A standalone launch of the Hopper backward (bf16, D 64 or 128) on either dK/dV kernel, for compute-sanitizer and
// for hangs: racecheck on the addon runs every kernel of a call through Node, and a deadlocked kernel there
// says nothing of where it waits. Built by tools/research/bwd-tma-ws-probe.sh, also with
// ATTN_BWD_TMA_WS_WATCHDOG (the TMA kernel's mbarrier waits give up, print which wait it was, and trap). It
// computes the forward's out and lse and the gradients in float64 on the host and checks dQ, dK and dV.
//
//   bwd_tma_ws_probe <seq_q> <seq_k> <causal 0|1> <heads_q> <heads_k> <deterministic 0|1> <kernel tma|cp> <D 64|128>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "launch/flash_bwd_launch.h"
#include "dense_params.h"

using namespace attn::flash;
using E = __nv_bfloat16;

// The kernels of each head dim, as scripts/generate-bwd-instantiations.mjs instantiates them.
template <int D>
struct ProbeKernels;
template <>
struct ProbeKernels<64> {
  using Tma = BwdSm90TmaWsTraits<64, 128, E>;
  using Cp = BwdSm90Traits<64, 64, E>;
  using Dq = DqTraits<64, 64, 4, E>;
};
template <>
struct ProbeKernels<128> {
  using Tma = BwdSm90TmaWsTraits<128, 64, E>;
  using Cp = BwdSm90Traits<128, 64, E>;
  using Dq = DqTraits<128, 64, 4, E>;
};

static void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(2);
  }
}

template <typename T>
static T* upload(const std::vector<T>& h) {
  T* d;
  check(cudaMalloc(&d, std::max<size_t>(h.size(), 1) * sizeof(T)), "malloc");
  check(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), "copy in");
  return d;
}

static std::vector<float> download(const E* d, size_t n) {
  std::vector<E> h(n);
  check(cudaMemcpy(h.data(), d, n * sizeof(E), cudaMemcpyDeviceToHost), "copy out");
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) f[i] = __bfloat162float(h[i]);
  return f;
}

template <int D>
int run_probe(int sq, int sk, bool causal, int hq, int hk, bool deterministic, bool tma) {
  using TmaTr = typename ProbeKernels<D>::Tma;
  using CpTr = typename ProbeKernels<D>::Cp;
  using DqTr = typename ProbeKernels<D>::Dq;
  constexpr int B = 1;
  const int group = hq / hk;
  const size_t nq = size_t(B) * hq * sq * D, nk = size_t(B) * hk * sk * D;
  uint32_t state = 12345;
  auto uniform = [&] {  // xorshift: reproducible inputs in [-1, 1)
    state ^= state << 13, state ^= state >> 17, state ^= state << 5;
    return float(state >> 8) / float(1 << 23) - 1.f;
  };
  auto rounded = [&](size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = __bfloat162float(__float2bfloat16(uniform()));
    return v;
  };
  const std::vector<float> q = rounded(nq), k = rounded(nk), v = rounded(nk), dout = rounded(nq);
  const double scale = 1.0 / std::sqrt(double(D));

  // Forward and backward in float64 (rows i of query head h see keys j <= i when causal, upper-left).
  std::vector<double> out(nq), lse(size_t(hq) * sq), dq(nq, 0.0), dk(nk, 0.0), dv(nk, 0.0);
  std::vector<double> p(sk), dp(sk);
  for (int h = 0; h < hq; ++h) {
    const int g = h / group;
    for (int i = 0; i < sq; ++i) {
      const float* qi = &q[(size_t(h) * sq + i) * D];
      const int visible = causal ? std::min(sk, i + 1) : sk;
      double m = -INFINITY, l = 0;
      for (int j = 0; j < visible; ++j) {
        double s = 0;
        for (int d = 0; d < D; ++d) s += double(qi[d]) * k[(size_t(g) * sk + j) * D + d];
        p[j] = s * scale;
        m = std::max(m, p[j]);
      }
      for (int j = 0; j < visible; ++j) l += std::exp(p[j] - m);
      lse[size_t(h) * sq + i] = visible > 0 ? m + std::log(l) : -INFINITY;
      for (int j = 0; j < visible; ++j) p[j] = std::exp(p[j] - m) / l;
      double* oi = &out[(size_t(h) * sq + i) * D];
      for (int d = 0; d < D; ++d) {
        double o = 0;
        for (int j = 0; j < visible; ++j) o += p[j] * v[(size_t(g) * sk + j) * D + d];
        oi[d] = o;
      }
      const float* gi = &dout[(size_t(h) * sq + i) * D];
      double dsum = 0;
      for (int d = 0; d < D; ++d) dsum += double(gi[d]) * double(__bfloat162float(__float2bfloat16(float(oi[d]))));
      for (int j = 0; j < visible; ++j) {
        double x = 0;
        for (int d = 0; d < D; ++d) x += double(gi[d]) * v[(size_t(g) * sk + j) * D + d];
        dp[j] = p[j] * (x - dsum);  // dS
      }
      for (int j = 0; j < visible; ++j)
        for (int d = 0; d < D; ++d) {
          dq[(size_t(h) * sq + i) * D + d] += scale * dp[j] * k[(size_t(g) * sk + j) * D + d];
          dk[(size_t(g) * sk + j) * D + d] += scale * dp[j] * qi[d];
          dv[(size_t(g) * sk + j) * D + d] += p[j] * gi[d];
        }
    }
  }

  auto to_bf16 = [](const std::vector<float>& f) {
    std::vector<E> h(f.size());
    for (size_t i = 0; i < f.size(); ++i) h[i] = __float2bfloat16(f[i]);
    return h;
  };
  std::vector<float> out_f(nq), lse_f(lse.size());
  for (size_t i = 0; i < nq; ++i) out_f[i] = float(out[i]);
  for (size_t i = 0; i < lse.size(); ++i) lse_f[i] = float(lse[i]);
  E *d_q = upload(to_bf16(q)), *d_k = upload(to_bf16(k)), *d_v = upload(to_bf16(v)), *d_o = upload(to_bf16(out_f)),
    *d_do = upload(to_bf16(dout));
  float* d_lse = upload(lse_f);
  E *d_dq, *d_dk, *d_dv;
  float *d_dsum, *d_acc;
  check(cudaMalloc(&d_dq, nq * 2), "malloc dq");
  check(cudaMalloc(&d_dk, nk * 2), "malloc dk");
  check(cudaMalloc(&d_dv, nk * 2), "malloc dv");
  check(cudaMalloc(&d_dsum, size_t(hq) * sq * 4), "malloc dsum");
  check(cudaMalloc(&d_acc, size_t(hq) * sq * D * 4), "malloc dq workspace");
  check(cudaMemset(d_dq, 0xff, nq * 2), "poison dq");  // NaN: an unwritten element fails the check
  check(cudaMemset(d_dk, 0xff, nk * 2), "poison dk");
  check(cudaMemset(d_dv, 0xff, nk * 2), "poison dv");

  BwdParams bp{};
  bp.f = probe::dense_fwd_params(d_q, d_k, d_v, d_o, d_lse, B, hq, hk, sq, sk, D, causal);
  const FwdParams& f = bp.f;
  bp.dout = d_do, bp.dq = d_dq, bp.dk = d_dk, bp.dv = d_dv, bp.dsum = d_dsum;
  // The TMA kernel adds dQ into the workspace in both modes, in deterministic mode in turns (one counter per
  // query block of its rows); the cp.async kernel's deterministic mode leaves dQ to the dQ kernel.
  const int turn_blocks = (sq + TmaTr::kBlockM - 1) / TmaTr::kBlockM;
  int* d_turns;
  check(cudaMalloc(&d_turns, size_t(B) * hq * turn_blocks * sizeof(int)), "malloc dq turns");
  bp.dq_accum = deterministic && !tma ? nullptr : d_acc;
  bp.dq_turns = deterministic && tma ? d_turns : nullptr;
  bp.dq_turn_rows = TmaTr::kBlockM;
  bp.dq_accum_stride = D;
  bp.do_batch_stride = f.q_batch_stride, bp.do_head_stride = f.q_head_stride, bp.do_row_stride = D;
  bp.dq_batch_stride = f.q_batch_stride, bp.dq_head_stride = f.q_head_stride, bp.dq_row_stride = D;
  bp.dk_batch_stride = bp.dv_batch_stride = f.k_batch_stride;
  bp.dk_head_stride = bp.dv_head_stride = f.k_head_stride;
  bp.dk_row_stride = bp.dv_row_stride = D;
  bp.scale = float(scale);
  bp.deterministic = deterministic;
  bp.plain_tiles = true;
  bp.stages = 2;
  static_assert(TmaTr::kBlockN == CpTr::kBlockN, "both kernels step the same key blocks");
  bp.n_blocks = (sk + TmaTr::kBlockN - 1) / TmaTr::kBlockN;
  bp.m_blocks = (sq + DqTr::kBlockM - 1) / DqTr::kBlockM;
  auto backward = [&] {
    if (tma)
      run_bwd<TmaTr, DqTr>(bp, nullptr, 0);
    else
      run_bwd<CpTr, DqTr>(bp, nullptr, 0);
    check(cudaDeviceSynchronize(), "backward");
  };
  // Deterministic mode: the gradients of two runs must be the same bits.
  bool same = true;
  if (deterministic) {
    backward();
    std::vector<E> first(nq);
    check(cudaMemcpy(first.data(), d_dq, nq * 2, cudaMemcpyDeviceToHost), "copy dq");
    backward();
    std::vector<E> again(nq);
    check(cudaMemcpy(again.data(), d_dq, nq * 2, cudaMemcpyDeviceToHost), "copy dq");
    same = std::memcmp(first.data(), again.data(), nq * 2) == 0;
  } else {
    backward();
  }

  auto err = [&](const E* d, const std::vector<double>& ref) -> double {
    const std::vector<float> got = download(d, ref.size());
    double worst = 0, big = 1e-30;
    for (size_t i = 0; i < ref.size(); ++i) {
      if (!std::isfinite(got[i])) return double(INFINITY);
      worst = std::max(worst, std::fabs(got[i] - ref[i]));
      big = std::max(big, std::fabs(ref[i]));
    }
    // Floored at 0.1: where dS is 0 analytically (S 1: Dsum = dP) the reference is rounding noise.
    return worst / std::max(big, 0.1);
  };
  const double eq = err(d_dq, dq), ek = err(d_dk, dk), ev = err(d_dv, dv);
  const bool ok = eq < 2e-2 && ek < 2e-2 && ev < 2e-2 && same;  // bf16 gradients (max |err| / max |ref|)
  std::printf("bwd probe %s D=%d sq=%d sk=%d causal=%d hq=%d hk=%d det=%d: dq %.2e dk %.2e dv %.2e%s %s\n",
              tma ? "tma_ws" : "cp.async", D, sq, sk, int(causal), hq, hk, int(deterministic), eq, ek, ev,
              same ? "" : " (dq not reproducible)", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

int main(int argc, char** argv) {
  const int sq = argc > 1 ? std::atoi(argv[1]) : 300, sk = argc > 2 ? std::atoi(argv[2]) : 300;
  const bool causal = argc > 3 && std::atoi(argv[3]) != 0;
  const int hq = argc > 4 ? std::atoi(argv[4]) : 4, hk = argc > 5 ? std::atoi(argv[5]) : 2;
  const bool deterministic = argc > 6 && std::atoi(argv[6]) != 0;
  const bool tma = argc <= 7 || std::string(argv[7]) != "cp";
  const int d = argc > 8 ? std::atoi(argv[8]) : 128;
  if (d == 64) return run_probe<64>(sq, sk, causal, hq, hk, deterministic, tma);
  if (d == 128) return run_probe<128>(sq, sk, causal, hq, hk, deterministic, tma);
  std::fprintf(stderr, "head dim %d: the probe builds D 64 and 128\n", d);
  return 2;
}
