// Launch templates, one per kernel family: declared here, defined in launchers_*.cuh, instantiated
// for each (dtype, head-dim bucket) in the generated sources listed by generated/kernel_table.inc.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "common/params.h"

namespace memeff {

enum class Family : int {
  kFwdSimt = 0,
  kFwdMma = 1,
  kBwdSimt = 2,
  kBwdAux = 3,
  kBwdMma = 4,
  kFwdTf32 = 5,
  kBwdTf32 = 6
};

// The passes around the backward main kernels (run_bwd_aux's `stage`).
enum class BwdStage : int { kDsum = 0, kDqConvert = 1, kKvReduce = 2, kDbias = 3, kDbiasConvert = 4 };

using FwdLauncher = void (*)(const FwdParams&, cudaStream_t);
using BwdLauncher = void (*)(const BwdParams&, cudaStream_t);
using BwdAuxLauncher = void (*)(const BwdParams&, BwdStage, cudaStream_t);
// The first kernel of a family instance, for cudaFuncGetAttributes (which arch it was built for).
using KernelProbe = const void* (*)();

struct KernelEntry {
  Family family;
  int dtype;   // ElemType
  int bucket;  // head-dim bucket (0: none)
  const char* name;
  FwdLauncher fwd;
  BwdLauncher bwd;
  BwdAuxLauncher aux;
  KernelProbe probe;
};

template <typename T, int kBucket>
void run_fwd_simt(const FwdParams& p, cudaStream_t stream);
template <typename T, int kBucket>
const void* probe_fwd_simt();
template <typename T, int kBucket>
void run_fwd_mma(const FwdParams& p, cudaStream_t stream);
template <typename T, int kBucket>
const void* probe_fwd_mma();
template <typename T, int kBucket>
void run_fwd_tf32(const FwdParams& p, cudaStream_t stream);
template <typename T, int kBucket>
const void* probe_fwd_tf32();
template <typename T, int kBucket>
void run_bwd_simt(const BwdParams& p, cudaStream_t stream);
template <typename T, int kBucket>
const void* probe_bwd_simt();
template <typename T, int kBucket>
void run_bwd_mma(const BwdParams& p, cudaStream_t stream);
template <typename T, int kBucket>
const void* probe_bwd_mma();
template <typename T, int kBucket>
void run_bwd_tf32(const BwdParams& p, cudaStream_t stream);
template <typename T, int kBucket>
const void* probe_bwd_tf32();
template <typename T>
void run_bwd_aux(const BwdParams& p, BwdStage stage, cudaStream_t stream);
template <typename T>
const void* probe_bwd_aux();

// Every (b, h) pair in launches of at most 65535 along a grid dimension: fn(params_with_base, count).
template <typename P, typename Fn>
void for_each_bh_chunk(const P& p, int64_t bh_total, Fn&& fn) {
  constexpr int64_t kMax = 65535;
  for (int64_t base = 0; base < bh_total; base += kMax) {
    P q = p;
    q.bh_base = static_cast<int32_t>(base);
    fn(q, static_cast<unsigned>(bh_total - base < kMax ? bh_total - base : kMax));
  }
}

// Shared memory a tensor-core key-split backward kernel asks for (Tr: MmaBwdTraits or Tf32BwdTraits): its
// tiles, plus the mask tiles with a mask and the GQA presum slots with dbias_presum.
template <typename Tr>
constexpr int key_split_smem_bytes(bool mask, bool presum) {
  return Tr::kSmemBytes + (mask && Tr::kStageMask ? Tr::kSmemMaskBytes : 0) + (presum ? Tr::kSmemPresumBytes : 0);
}

inline unsigned ceil_div(int64_t a, int64_t b) { return static_cast<unsigned>((a + b - 1) / b); }

}  // namespace memeff
