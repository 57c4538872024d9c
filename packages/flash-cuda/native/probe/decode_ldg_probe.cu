// A decode that never stages K and V in shared memory: each warp loads its 16-key groups of K and V with 16-byte
// global loads straight into registers and feeds them to mma.sync. The decode shape (B 8, Hq 32, Hk 8, Sk 8192,
// D 128, bf16, K and V [B, S, Hk, D]: 268 MB), a grid of (splits, Hk, B) CTAs of `warps` warps; warp w of a CTA
// takes groups w, w + warps, ... of its split, so the CTA's warps together read consecutive keys.
//
// Fragments without a shared-memory transpose:
//  - S = Q.K^T: lane (g = lane / 4, t = lane % 4) loads 16 bytes (8 dims) of key rows g and 8 + g at chunk
//    t + 4i (i < 4); those 4 registers are its B fragments of two k-steps. The contraction over D does not care
//    which dims a k-step holds, so Q's A fragments are loaded with the same dim permutation.
//  - O += P.V: the same loads of V rows, each register an 8-key x 8-dim matrix in the m8n8 fragment layout,
//    transposed by movmatrix into the B fragment of P.V; P's A fragment is S's accumulator (FA2's reuse). The
//    output columns come out permuted: tile (i, r) lane t holds dims 32i + 8t + 2r + {0, 1}, so lane t holds
//    dims 32i + 8t .. + 7 of every i, one 16-byte chunk each.
// Rows: the 4 query heads of the KV head (GQA packed), rows 4-15 of the m16 tile are zero.
//
// Each CTA merges its warps (online-softmax state through shared memory) and writes the split's partial (O
// relative to its row maximum, the maximum, the sum); the host merges the splits and checks the result against a
// float64 reference of every head (relErr: max |ours - ref| / (0.01 + |ref|), printed beside the same measure of
// flash-cuda's decode kernel). Variants: 4-8 warps, one or two groups in flight per warp (two named register
// buffers), three load instructions, dense or paged (16-key pages, identity or shuffled table, table entries read
// two groups ahead), no math (the loads alone), and launches alternating between two K/V copies (no L2 reuse
// between launches). Timed beside flash-cuda's decode kernel as a call launches it (2 splits, cluster pair), in
// two rounds; CUDA events around 100 back-to-back launches after 20; one JSON line per configuration.
//
//   tools/research/decode-ldg-probe.sh && ./decode_ldg_probe
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "attn/ptx.h"
#include "dense_params.h"
#include "fill_random.cuh"
#include "fwd/combine.cu"
#include "fwd/flash_fwd_decode_kernel.h"
#include "launch/flash_fwd_decode_launch.h"

using namespace attn;
using E = __nv_bfloat16;

constexpr int kB = 8, kHk = 8, kGroup = 4, kHq = kHk * kGroup, kS = 8192, kD = 128;
constexpr int64_t kRowStride = int64_t(kHk) * kD;  // elements between consecutive keys of one head

struct LdgArgs {
  const E* q;  // [B, Hq, D]
  const E* k;
  const E* v;
  const int* table;  // paged: [B][S / page] pages of `page` keys, else null
  int page;
  float* o_part;  // [splits, B, Hq, D]
  float* m_part;  // [splits, B, Hq] row maxima (log2 units)
  float* l_part;  // [splits, B, Hq] row sums
  float score_mul;
  unsigned* sink;
};

// Load paths for the 16-byte K/V loads.
enum Load { kLdcs = 0, kNcL2Prefetch = 1, kNc = 2 };

template <int kLoad>
__device__ __forceinline__ uint4 load16(const E* p) {
  uint4 r;
  if constexpr (kLoad == kLdcs) {
    asm volatile("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
  } else if constexpr (kLoad == kNcL2Prefetch) {
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p));
  } else {
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p));
  }
  return r;
}

__device__ __forceinline__ uint32_t movmatrix_trans(uint32_t a) {
  uint32_t d;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(d) : "r"(a));
  return d;
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

__device__ __forceinline__ uint32_t word(const uint4& v, int r) {
  return r == 0 ? v.x : r == 1 ? v.y : r == 2 ? v.z : v.w;
}

// One 16-key group of K and V rows in one lane's registers.
struct Group {
  uint4 k[2][4], v[2][4];
};

// kSkip (diagnostics): bit 2 replaces P.V's mma by one FFMA per output register on V's bits (every V byte still
// read), bit 4 drops the warps' merge and the partial's write. (Dropping S = Q.K^T is not offered: ptxas then
// narrows or drops K's loads, and the stream reads fewer bytes.)
template <int kWarps, int kLoad, bool kMath, bool kPrefetch = false, int kSkip = 0>
__global__ void __launch_bounds__(kWarps * 32) ldg_decode_kernel(LdgArgs a) {
  __shared__ float sm_m[kWarps][kGroup], sm_l[kWarps][kGroup];
  __shared__ __align__(16) float sm_o[kWarps][kGroup][kD];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int split = blockIdx.x, splits = gridDim.x, hk = blockIdx.y, b = blockIdx.z;
  constexpr int kGroups = kS / 16;
  const int per = (kGroups + splits - 1) / splits, u0 = split * per, u1 = min(kGroups, u0 + per);

  // Q's A fragments (rows g < 4 real): k-step 2i takes a0 = qa[i].x, a2 = qa[i].y; k-step 2i + 1 .z, .w.
  uint4 qa[4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
    qa[i] = g < kGroup
                ? *reinterpret_cast<const uint4*>(a.q + (int64_t(b) * kHq + hk * kGroup + g) * kD + 8 * (t + 4 * i))
                : make_uint4(0, 0, 0, 0);

  float o[16][4] = {};
  float m = -INFINITY, l = 0.f;
  uint32_t acc = 0;
  // Group u's K and V rows for this lane: key rows 16u + g and 16u + 8 + g, chunks t + 4i. Paged: `blk` is the
  // group's page (a group never straddles a page: pages are multiples of 16 keys), read from the block table two
  // issues ahead so no load waits on the table.
  auto table_entry = [&](int u) {
    return a.table != nullptr && u < u1 ? __ldg(a.table + b * (kS / a.page) + u * 16 / a.page) : 0;
  };
  auto load_group = [&](int u, int blk, Group& gr) {
    if (u >= u1) return;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int key = u * 16 + 8 * j + g;
      const int64_t off =
          (a.table == nullptr ? int64_t(b) * kS + key : int64_t(blk) * a.page + key % a.page) * kRowStride + hk * kD;
#pragma unroll
      for (int i = 0; i < 4; ++i) gr.k[j][i] = load16<kLoad>(a.k + off + 8 * (t + 4 * i));
#pragma unroll
      for (int i = 0; i < 4; ++i) gr.v[j][i] = load16<kLoad>(a.v + off + 8 * (t + 4 * i));
    }
  };
  auto math_group = [&](const Group& gr) {
    if constexpr (!kMath) {
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc ^= gr.k[j][i].x ^ gr.k[j][i].w ^ gr.v[j][i].y ^ gr.v[j][i].z;
      return;
    }
    float s[2][4] = {};
    {
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const uint32_t a0[4] = {qa[i].x, 0u, qa[i].y, 0u}, a1[4] = {qa[i].z, 0u, qa[i].w, 0u};
          mma_16816<E>(s[j], a0, gr.k[j][i].x, gr.k[j][i].y);
          mma_16816<E>(s[j], a1, gr.k[j][i].z, gr.k[j][i].w);
        }
    }
    // Online softmax of row g over this group's 16 keys (the quad's 4 lanes hold 4 keys each).
    float mx = fmaxf(fmaxf(s[0][0], s[0][1]), fmaxf(s[1][0], s[1][1])) * a.score_mul;
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m, mx), alpha = exp2f(m - m_new);
    m = m_new;
    const float p00 = exp2f(fmaf(s[0][0], a.score_mul, -m)), p01 = exp2f(fmaf(s[0][1], a.score_mul, -m));
    const float p10 = exp2f(fmaf(s[1][0], a.score_mul, -m)), p11 = exp2f(fmaf(s[1][1], a.score_mul, -m));
    l = fmaf(l, alpha, (p00 + p01) + (p10 + p11));
#pragma unroll
    for (int n = 0; n < 16; ++n) o[n][0] *= alpha, o[n][1] *= alpha;
    const uint32_t pa[4] = {pack_bf16(p00, p01), 0u, pack_bf16(p10, p11), 0u};
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        if constexpr ((kSkip & 2) != 0) {
          o[i * 4 + r][0] = fmaf(p00, __uint_as_float(word(gr.v[0][i], r) & 0x3fffffffu), o[i * 4 + r][0]);
          o[i * 4 + r][1] = fmaf(p11, __uint_as_float(word(gr.v[1][i], r) & 0x3fffffffu), o[i * 4 + r][1]);
        } else {
          mma_16816<E>(o[i * 4 + r], pa, movmatrix_trans(word(gr.v[0][i], r)), movmatrix_trans(word(gr.v[1][i], r)));
        }
      }
  };
  const int W = kWarps;
  if constexpr (kPrefetch) {
    // Two groups in flight per warp, in two named buffers (a register copy between them would wait for the loads).
    Group ga, gb;
    int ea = table_entry(u0 + warp), eb = table_entry(u0 + warp + W);
    load_group(u0 + warp, ea, ga);
    ea = table_entry(u0 + warp + 2 * W);
    for (int u = u0 + warp; u < u1; u += 2 * W) {
      load_group(u + W, eb, gb);
      eb = table_entry(u + 3 * W);
      math_group(ga);
      if (u + W >= u1) break;
      load_group(u + 2 * W, ea, ga);
      ea = table_entry(u + 4 * W);
      math_group(gb);
    }
  } else {
    Group ga;
    int ea = table_entry(u0 + warp);
    for (int u = u0 + warp; u < u1; u += W) {
      load_group(u, ea, ga);
      ea = table_entry(u + W);
      math_group(ga);
    }
  }
  if constexpr (!kMath || (kSkip & 4) != 0) {
#pragma unroll
    for (int n = 0; n < 16; ++n) acc ^= __float_as_uint(o[n][0] + o[n][1]);
    if ((acc ^ __float_as_uint(l + m)) == 0x9e3779b9u) atomicAdd(a.sink, 1u);
    return;
  }
  // The warps' merge: each warp's state through shared memory, then every thread merges (row, dim) pairs.
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  l += __shfl_xor_sync(0xffffffffu, l, 2);
  if (g < kGroup) {
    if (t == 0) sm_m[warp][g] = m, sm_l[warp][g] = l;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float4 lo = make_float4(o[i * 4][0], o[i * 4][1], o[i * 4 + 1][0], o[i * 4 + 1][1]);
      const float4 hi = make_float4(o[i * 4 + 2][0], o[i * 4 + 2][1], o[i * 4 + 3][0], o[i * 4 + 3][1]);
      *reinterpret_cast<float4*>(&sm_o[warp][g][32 * i + 8 * t]) = lo;
      *reinterpret_cast<float4*>(&sm_o[warp][g][32 * i + 8 * t + 4]) = hi;
    }
  }
  __syncthreads();
  for (int e = threadIdx.x; e < kGroup * kD; e += kWarps * 32) {
    const int row = e / kD, d = e % kD;
    float mm = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) mm = fmaxf(mm, sm_m[w][row]);
    float ov = 0.f, lv = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float f = sm_m[w][row] == -INFINITY ? 0.f : exp2f(sm_m[w][row] - mm);
      ov = fmaf(sm_o[w][row][d], f, ov);
      lv = fmaf(sm_l[w][row], f, lv);
    }
    const int64_t rowi = (int64_t(split) * kB + b) * kHq + hk * kGroup + row;
    a.o_part[rowi * kD + d] = ov;
    if (d == 0) a.m_part[rowi] = mm, a.l_part[rowi] = lv;
  }
}

// ---------------------------------------------------------------------------------------------------------------
struct Timer {
  cudaEvent_t e0, e1;
  Timer() { cudaEventCreate(&e0), cudaEventCreate(&e1); }
  template <typename Launch>
  double us(Launch launch, cudaError_t& err) {
    for (int i = 0; i < 20; ++i) launch();
    cudaEventRecord(e0);
    for (int i = 0; i < 100; ++i) launch();
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    err = cudaGetLastError();
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    return ms * 1e3 / 100;
  }
};

static float bf16_to_float(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// The inputs' bits on the host and the float64 output of every (b, hq, d) they give (check_error, rel_err).
struct Check {
  std::vector<uint16_t> q, k, v;
  std::vector<double> ref;  // [B, Hq, D]
};

static void reference(Check& c, float score_mul) {
  c.ref.assign(size_t(kB) * kHq * kD, 0.0);
  std::vector<double> sc(kS);
  for (int b = 0; b < kB; ++b)
    for (int hq = 0; hq < kHq; ++hq) {
      const int hk = hq / kGroup;
      double mx = -1e300;
      for (int s = 0; s < kS; ++s) {
        double dot = 0;
        const size_t ko = (size_t(b) * kS + s) * kRowStride + hk * kD;
        for (int d = 0; d < kD; ++d)
          dot += double(bf16_to_float(c.q[(size_t(b) * kHq + hq) * kD + d])) * bf16_to_float(c.k[ko + d]);
        sc[s] = dot * score_mul;  // log2 units
        mx = std::max(mx, sc[s]);
      }
      double sum = 0;
      for (int s = 0; s < kS; ++s) sum += (sc[s] = std::exp2(sc[s] - mx));
      double* out = &c.ref[(size_t(b) * kHq + hq) * kD];
      for (int s = 0; s < kS; ++s) {
        const size_t vo = (size_t(b) * kS + s) * kRowStride + hk * kD;
        for (int d = 0; d < kD; ++d) out[d] += sc[s] / sum * bf16_to_float(c.v[vo + d]);
      }
    }
}

// The error measure of both outputs checked here: |got - ref| / (0.01 + |ref|).
static double rel_err(double got, double ref) { return std::fabs(got - ref) / (1e-2 + std::fabs(ref)); }

static double check_error(const Check& c, const LdgArgs& a, int splits) {
  const size_t rows = size_t(kB) * kHq;
  std::vector<float> o(splits * rows * kD), m(splits * rows), l(splits * rows);
  cudaMemcpy(o.data(), a.o_part, o.size() * 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(m.data(), a.m_part, m.size() * 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(l.data(), a.l_part, l.size() * 4, cudaMemcpyDeviceToHost);
  double worst = 0;
  for (size_t r = 0; r < rows; ++r) {
    double mm = -1e300;
    for (int s = 0; s < splits; ++s) mm = std::max(mm, double(m[s * rows + r]));
    double lsum = 0;
    for (int s = 0; s < splits; ++s) lsum += l[s * rows + r] * std::exp2(m[s * rows + r] - mm);
    for (int d = 0; d < kD; ++d) {
      double ov = 0;
      for (int s = 0; s < splits; ++s) ov += o[(s * rows + r) * kD + d] * std::exp2(m[s * rows + r] - mm);
      worst = std::max(worst, rel_err(ov / lsum, c.ref[r * kD + d]));
    }
  }
  return worst;
}

template <int kWarps, int kLoad, bool kMath, bool kPrefetch = false, int kSkip = 0>
void run_ldg(Timer& tm, LdgArgs a, int splits, const Check* check, const char* layout, const LdgArgs* alt = nullptr) {
  auto kern = ldg_decode_kernel<kWarps, kLoad, kMath, kPrefetch, kSkip>;
  const dim3 grid(splits, kHk, kB);
  cudaFuncAttributes attr{};
  cudaFuncGetAttributes(&attr, kern);
  cudaError_t err;
  // `alt`: launches alternate between two K/V copies (536 MB), so no launch finds the last one's lines in the L2.
  int n = 0;
  const double us = tm.us([&] { kern<<<grid, kWarps * 32>>>(alt != nullptr && (n++ & 1) ? *alt : a); }, err);
  const double bytes = 2.0 * kB * kS * kHk * kD * 2;
  double worst = -1;
  if (check && kMath && kSkip == 0) worst = check_error(*check, a, splits);
  printf(
      "{\"path\": \"ldg\", \"layout\": \"%s\", \"alternate\": %d, \"prefetch\": %d, \"skip\": %d, \"warps\": %d, "
      "\"load\": %d, \"math\": %d, \"splits\": %d, "
      "\"ctas\": %d, \"regs\": %d, \"us\": %.2f, \"TBs\": %.3f, \"relErr\": %.3g, \"error\": \"%s\"}\n",
      layout, int(alt != nullptr), int(kPrefetch), kSkip, kWarps, kLoad, int(kMath), splits, splits * kB * kHk,
      attr.numRegs, us, bytes / us / 1e6, worst, err == cudaSuccess ? "" : cudaGetErrorString(err));
  fflush(stdout);
}

// flash-cuda's decode kernel on the same K/V as a call launches it at 2 splits (the cluster pair), for reference.
void run_main_decode(Timer& tm, const LdgArgs& la, E* o, float* lse, float* oacc, float* lacc, const Check* check) {
  using namespace attn::flash;
  // Dense [B, Hq, 1, D] Q and O are [B, 1, Hq, D] too; K and V are [B, S, Hk, D] (bshd).
  FwdParams p = probe::dense_fwd_params(la.q, la.k, la.v, o, lse, kB, kHq, kHk, 1, kS, kD, false);
  p.k_head_stride = p.v_head_stride = kD;
  p.k_row_stride = p.v_row_stride = kRowStride;
  p.pack_gqa = true, p.m_blocks = 1;
  p.oaccum = oacc, p.lse_accum = lacc, p.oaccum_stride = kD, p.accum_rows = int64_t(kB) * kHq;
  p.num_splits = 2;
  p.cluster_splits = true;
  using Wide = DecodeTraits<128, 64, 3, E>;
  cudaError_t err;
  const double us = tm.us([&] { run_fwd_decode<Wide>(p, nullptr, 0); }, err);
  double worst = -1;  // the same error measure on the kernel's bf16 output: the bar the probe's partials meet
  if (check) {
    std::vector<uint16_t> out(size_t(kB) * kHq * kD);
    cudaMemcpy(out.data(), o, out.size() * 2, cudaMemcpyDeviceToHost);
    worst = 0;
    for (size_t i = 0; i < out.size(); ++i) worst = std::max(worst, rel_err(bf16_to_float(out[i]), check->ref[i]));
  }
  printf("{\"path\": \"main-decode-cluster\", \"splits\": 2, \"us\": %.2f, \"relErr\": %.3g, \"error\": \"%s\"}\n", us,
         worst, err == cudaSuccess ? "" : cudaGetErrorString(err));
  fflush(stdout);
}

int main(int argc, char** argv) {
  const bool check_on = !(argc > 1 && std::string(argv[1]) == "--no-check");
  const size_t elems = size_t(kB) * kS * kHk * kD, qelems = size_t(kB) * kHq * kD;
  E *q, *k, *v, *o;
  float *o_part, *m_part, *l_part, *lse, *oacc, *lacc;
  unsigned* sink;
  cudaMalloc(&q, qelems * 2);
  cudaMalloc(&k, elems * 2);
  cudaMalloc(&v, elems * 2);
  cudaMalloc(&o, qelems * 2);
  cudaMalloc(&lse, size_t(kB) * kHq * 4);
  cudaMalloc(&oacc, 16 * qelems * 4);
  cudaMalloc(&lacc, 16 * size_t(kB) * kHq * 4);
  cudaMalloc(&o_part, 8 * qelems * 4);
  cudaMalloc(&m_part, 8 * size_t(kB) * kHq * 4);
  cudaMalloc(&l_part, 8 * size_t(kB) * kHq * 4);
  cudaMalloc(&sink, 4);
  fill_random<<<1024, 256>>>(reinterpret_cast<uint16_t*>(q), qelems, 3);
  fill_random<<<1024, 256>>>(reinterpret_cast<uint16_t*>(k), elems, 1);
  fill_random<<<1024, 256>>>(reinterpret_cast<uint16_t*>(v), elems, 2);
  cudaDeviceSynchronize();
  const float score_mul = float(1.4426950408889634 / std::sqrt(double(kD)));

  Check c;
  if (check_on) {
    c.q.resize(qelems), c.k.resize(elems), c.v.resize(elems);
    cudaMemcpy(c.q.data(), q, qelems * 2, cudaMemcpyDeviceToHost);
    cudaMemcpy(c.k.data(), k, elems * 2, cudaMemcpyDeviceToHost);
    cudaMemcpy(c.v.data(), v, elems * 2, cudaMemcpyDeviceToHost);
    reference(c, score_mul);
  }
  // Paged: the same pools read as [B * S / page blocks, page, Hk, D] through an identity table (the reference
  // holds), and a shuffled one (timing only).
  const int page = 16, blocks = kB * kS / page;
  std::vector<int> ident(blocks), shuf(blocks);
  for (int i = 0; i < blocks; ++i) ident[i] = shuf[i] = i;
  for (int i = blocks - 1; i > 0; --i) std::swap(shuf[i], shuf[(uint64_t(i) * 2654435761u + 17) % (i + 1)]);
  int *t_ident, *t_shuf;
  cudaMalloc(&t_ident, blocks * 4);
  cudaMalloc(&t_shuf, blocks * 4);
  cudaMemcpy(t_ident, ident.data(), blocks * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(t_shuf, shuf.data(), blocks * 4, cudaMemcpyHostToDevice);

  LdgArgs a{q, k, v, nullptr, page, o_part, m_part, l_part, score_mul, sink};
  LdgArgs ap = a, as = a;
  ap.table = t_ident, as.table = t_shuf;
  const Check* ck = check_on ? &c : nullptr;
  Timer tm;
  E *k2, *v2;
  cudaMalloc(&k2, elems * 2);
  cudaMalloc(&v2, elems * 2);
  cudaMemcpy(k2, k, elems * 2, cudaMemcpyDeviceToDevice);
  cudaMemcpy(v2, v, elems * 2, cudaMemcpyDeviceToDevice);
  LdgArgs a2 = a;
  a2.k = k2, a2.v = v2;
  for (int round = 0; round < 2; ++round) {
    const Check* rc = round == 0 ? ck : nullptr;
    run_main_decode(tm, a, o, lse, oacc, lacc, rc);
    for (const LdgArgs* alt : {static_cast<const LdgArgs*>(nullptr), static_cast<const LdgArgs*>(&a2)}) {
      run_ldg<8, kLdcs, false>(tm, a, 2, nullptr, "dense", alt);
      run_ldg<8, kLdcs, false, true>(tm, a, 2, nullptr, "dense", alt);
      run_ldg<8, kLdcs, true>(tm, a, 2, alt ? nullptr : rc, "dense", alt);
      run_ldg<8, kLdcs, true, true>(tm, a, 2, alt ? nullptr : rc, "dense", alt);
    }
    run_ldg<8, kLdcs, true, false, 2>(tm, a, 2, nullptr, "dense");
    run_ldg<8, kLdcs, true, false, 4>(tm, a, 2, nullptr, "dense");
    run_ldg<8, kNcL2Prefetch, true>(tm, a, 2, nullptr, "dense");
    run_ldg<8, kNc, true>(tm, a, 2, nullptr, "dense");
    run_ldg<4, kLdcs, true, true>(tm, a, 4, rc, "dense");
    run_ldg<6, kLdcs, true, true>(tm, a, 2, nullptr, "dense");
    run_ldg<8, kLdcs, true>(tm, ap, 2, rc, "paged16-identity");
    run_ldg<8, kLdcs, true, true>(tm, ap, 2, rc, "paged16-identity");
    run_ldg<8, kLdcs, true, true>(tm, as, 2, nullptr, "paged16-shuffled");
    run_ldg<4, kLdcs, true, true>(tm, as, 4, nullptr, "paged16-shuffled");
  }
  return 0;
}
