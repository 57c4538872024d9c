// cpu_flash_check: the conformance subset of cpu-flash's forward, run on its kernel entry points
// without Node.js, for builds where no Node runs (an arm64 cross build under qemu-user:
// packages/cpu/scripts/arm64-check.sh). Built with ATTN_CPU_CHECK_DRIVER=ON.
//
// Each case: fresh random N(0, 1) inputs (rounded to the dtype), dense [B, H, S, D] views, Hq != Hk,
// outputs poisoned with NaN before the call. Judged as test/conformance's accuracy rule: against a
// float64 reference, max |err| <= 2 x (max error of a naive implementation in the same precision:
// every intermediate rounded to the dtype, sums in fp32) + slack x max(1, max |ref|), slack 1e-6
// (fp32) or 8e-3 (bf16); the logsumexp by the same rule; NaN never passes.
//
// Usage: cpu_flash_check [--isa NAME[,NAME...]] [--seed N]   (default: every runnable level)
// Prints one line per case and a summary; exits 1 when any case fails.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "dispatch.h"
#include "varlen.h"

namespace {

using attn_cpu::DType;
using attn_cpu::Isa;

float f32(double x) { return static_cast<float>(x); }

uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float from_bf16(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// Rounds to the case's dtype (fp32 or bf16), as conformance's rounder.
double round_to(DType dt, double x) { return dt == DType::kBFloat16 ? from_bf16(to_bf16(f32(x))) : f32(x); }

struct Case {
  DType dtype;
  int64_t B, Hq, Hk, Sq, Sk, D;
  bool causal;
};

struct Result {
  double err, bound;
  bool ok;
};

// Max |a - ref| over finite ref (NaN counts as infinity); a non-finite ref must be matched exactly.
double max_error(const std::vector<double>& a, const std::vector<double>& ref, bool* mismatch) {
  double e = 0;
  for (size_t n = 0; n < ref.size(); ++n) {
    if (!std::isfinite(ref[n])) {
      const bool same = std::isnan(ref[n]) ? std::isnan(a[n]) : a[n] == ref[n];
      if (!same) *mismatch = true;
      continue;
    }
    const double d = std::isnan(a[n]) ? std::numeric_limits<double>::infinity() : std::fabs(a[n] - ref[n]);
    if (d > e) e = d;
  }
  return e;
}

Result judge(DType dt, const std::vector<double>& got, const std::vector<double>& ref,
             const std::vector<double>& naive) {
  bool mismatch = false, naive_mismatch = false;
  const double err = max_error(got, ref, &mismatch);
  const double nerr = max_error(naive, ref, &naive_mismatch);
  double mag = 1;
  for (double r : ref)
    if (std::isfinite(r)) mag = std::fmax(mag, std::fabs(r));
  const double slack = dt == DType::kBFloat16 ? 8e-3 : 1e-6;
  const double bound = 2 * nerr + slack * mag;
  return {err, bound, !mismatch && err <= bound};
}

// Reference (float64) and naive (dtype precision) forward on the rounded inputs: out [B, Hq, Sq, D]
// and lse [B, Hq, Sq], both as double.
void reference(const Case& c, const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
               bool naive, std::vector<double>& out, std::vector<double>& lse) {
  const int64_t G = c.Hq / c.Hk, D = c.D;
  const double scale = 1 / std::sqrt(static_cast<double>(D));
  auto r = [&](double x) { return naive ? round_to(c.dtype, x) : x; };
  auto acc = [&](double x) { return naive ? static_cast<double>(f32(x)) : x; };
  out.assign(c.B * c.Hq * c.Sq * D, 0);
  lse.assign(c.B * c.Hq * c.Sq, 0);
  std::vector<double> s(c.Sk), e(c.Sk);
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.Hq; ++h) {
      const int64_t hk = h / G;
      const double* Q = &q[(b * c.Hq + h) * c.Sq * D];
      const double* K = &k[(b * c.Hk + hk) * c.Sk * D];
      const double* Vv = &v[(b * c.Hk + hk) * c.Sk * D];
      for (int64_t i = 0; i < c.Sq; ++i) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < c.Sk; ++j) {
          s[j] = -INFINITY;
          if (c.causal && j > i) continue;
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot = acc(dot + acc(Q[i * D + d] * K[j * D + d]));
          s[j] = r(r(dot) * scale);
          mx = std::fmax(mx, s[j]);
        }
        double* o = &out[((b * c.Hq + h) * c.Sq + i) * D];
        double sum = 0;
        for (int64_t j = 0; j < c.Sk; ++j) {
          e[j] = s[j] == -INFINITY ? 0 : acc(std::exp(acc(s[j] - mx)));
          sum = acc(sum + e[j]);
        }
        lse[(b * c.Hq + h) * c.Sq + i] = naive ? f32(mx + std::log(sum)) : mx + std::log(sum);
        for (int64_t j = 0; j < c.Sk; ++j) {
          if (e[j] == 0) continue;
          const double p = r(acc(e[j] / sum));
          for (int64_t d = 0; d < D; ++d) o[d] = acc(o[d] + acc(p * Vv[j * D + d]));
        }
        for (int64_t d = 0; d < D; ++d) o[d] = r(o[d]);
      }
    }
}

// Dense contiguous [B, H, S, D] storage of one tensor in the case's dtype.
struct Tensor {
  std::vector<float> f;
  std::vector<uint16_t> h;
  void* data(DType dt) { return dt == DType::kBFloat16 ? static_cast<void*>(h.data()) : static_cast<void*>(f.data()); }
};

Tensor store(DType dt, const std::vector<double>& x) {
  Tensor t;
  if (dt == DType::kBFloat16) {
    for (double v : x) t.h.push_back(to_bf16(f32(v)));
  } else {
    for (double v : x) t.f.push_back(f32(v));
  }
  return t;
}

attn_cpu::View4 view(Tensor& t, DType dt, int64_t H, int64_t S, int64_t D) {
  attn_cpu::View4 v;
  v.data = t.data(dt);
  v.dtype = dt;
  v.strides[0] = H * S * D;
  v.strides[1] = S * D;
  v.strides[2] = D;
  v.strides[3] = 1;
  return v;
}

bool run_case(const attn_cpu::KernelSet& ks, const char* isa, const Case& c, std::mt19937_64& rng) {
  std::normal_distribution<double> normal;
  auto fresh = [&](int64_t n) {
    std::vector<double> x(n);
    for (double& e : x) e = round_to(c.dtype, normal(rng));
    return x;
  };
  const std::vector<double> q = fresh(c.B * c.Hq * c.Sq * c.D), k = fresh(c.B * c.Hk * c.Sk * c.D),
                            v = fresh(c.B * c.Hk * c.Sk * c.D);
  Tensor tq = store(c.dtype, q), tk = store(c.dtype, k), tv = store(c.dtype, v);
  Tensor to = store(c.dtype, std::vector<double>(q.size(), NAN));  // poisoned: unwritten stays NaN
  std::vector<float> lse(c.B * c.Hq * c.Sq, NAN);

  attn_cpu::FwdProblem p;
  p.dims = {c.B, c.Hq, c.Hk, c.Sq, c.Sk, c.D, c.D};
  p.dtype = c.dtype;
  p.q = view(tq, c.dtype, c.Hq, c.Sq, c.D);
  p.k = view(tk, c.dtype, c.Hk, c.Sk, c.D);
  p.v = view(tv, c.dtype, c.Hk, c.Sk, c.D);
  p.out = view(to, c.dtype, c.Hq, c.Sq, c.D);
  p.lse = lse.data();
  p.lse_sb = c.Hq * c.Sq;
  p.lse_sh = c.Sq;
  p.mods.scale = f32(1 / std::sqrt(static_cast<double>(c.D)));
  p.mods.causal = c.causal;
  p.threads = 2;
  attn_cpu::run_forward(ks, p);

  std::vector<double> got_o(q.size()), got_l(lse.begin(), lse.end());
  for (size_t n = 0; n < got_o.size(); ++n) got_o[n] = c.dtype == DType::kBFloat16 ? from_bf16(to.h[n]) : to.f[n];
  std::vector<double> ref_o, ref_l, nai_o, nai_l;
  reference(c, q, k, v, false, ref_o, ref_l);
  reference(c, q, k, v, true, nai_o, nai_l);
  const Result ro = judge(c.dtype, got_o, ref_o, nai_o), rl = judge(c.dtype, got_l, ref_l, nai_l);
  const bool ok = ro.ok && rl.ok;
  std::printf(
      "%s %-8s %-5s B%lld Hq%lld Hk%lld Sq%-3lld Sk%-3lld D%-2lld %-6s out err %.3g <= %.3g  lse err %.3g <= %.3g\n",
      ok ? "PASS" : "FAIL", isa, c.dtype == DType::kBFloat16 ? "bf16" : "fp32", static_cast<long long>(c.B),
      static_cast<long long>(c.Hq), static_cast<long long>(c.Hk), static_cast<long long>(c.Sq),
      static_cast<long long>(c.Sk), static_cast<long long>(c.D), c.causal ? "causal" : "full", ro.err, ro.bound, rl.err,
      rl.bound);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Isa> isas;
  uint64_t seed = std::random_device{}();
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--seed" && a + 1 < argc) {
      seed = std::strtoull(argv[++a], nullptr, 10);
    } else if (arg == "--isa" && a + 1 < argc) {
      std::string list = argv[++a];
      for (size_t at = 0; at <= list.size();) {
        const size_t end = list.find(',', at) == std::string::npos ? list.size() : list.find(',', at);
        Isa isa;
        if (!attn_cpu::parse_isa(list.substr(at, end - at), &isa)) {
          std::fprintf(stderr, "cpu_flash_check: unknown isa '%s'\n", list.substr(at, end - at).c_str());
          return 2;
        }
        isas.push_back(isa);
        at = end + 1;
      }
    } else {
      std::fprintf(stderr, "usage: cpu_flash_check [--isa NAME[,NAME...]] [--seed N]\n");
      return 2;
    }
  }
  std::printf(
      "cpu_flash_check: compiled %s; auto picks %s; seed %llu\n",
      [] {
        static std::string s;
        for (Isa i : attn_cpu::compiled_isas())
          s += std::string(s.empty() ? "" : ",") + attn_cpu::isa_name(i) +
               (attn_cpu::isa_runnable(i) ? "" : "(not runnable)");
        return s.c_str();
      }(),
      attn_cpu::isa_name(attn_cpu::best_isa()), static_cast<unsigned long long>(seed));
  if (isas.empty()) {
    for (Isa i : attn_cpu::compiled_isas())
      if (attn_cpu::isa_runnable(i)) isas.push_back(i);
  }

  std::mt19937_64 rng(seed);
  int pass = 0, fail = 0;
  for (Isa isa : isas) {
    const attn_cpu::KernelSet* ks;
    try {
      ks = &attn_cpu::kernels_for(isa);
    } catch (const std::exception& e) {
      std::printf("FAIL %s: %s\n", attn_cpu::isa_name(isa), e.what());
      ++fail;
      continue;
    }
    for (DType dt : {DType::kFloat32, DType::kBFloat16})
      for (int64_t sq : {1, 17, 100})
        for (int64_t sk : {1, 17, 100})
          for (int64_t d : {8, 72})
            for (bool causal : {false, true}) {
              const Case c{dt, 2, 4, 2, sq, sk, d, causal};
              try {
                (run_case(*ks, attn_cpu::isa_name(isa), c, rng) ? pass : fail)++;
              } catch (const std::exception& e) {
                std::printf("FAIL %s: threw %s\n", attn_cpu::isa_name(isa), e.what());
                ++fail;
              }
            }
  }
  std::printf("cpu_flash_check: %d passed, %d failed (seed %llu)\n", pass, fail, static_cast<unsigned long long>(seed));
  return fail == 0 ? 0 : 1;
}
