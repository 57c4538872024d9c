// Run-time choice of kernels for one call (path by dtype, arch, head dims and alignment; head-dim
// bucket; query splits of the backward), cheap re-checks of what TS validated, and the workspace plan.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <vector>

#include "common/params.h"

namespace memeff {

enum class PathRequest { kAuto, kSimt, kMma };

// What the backward needs besides its outputs: one fp32 workspace, carved in this order.
struct BwdPlan {
  bool mma = false;   // 16-bit tensor-core main kernel (bwd_mma)
  bool tf32 = false;  // fp32 on tensor cores, 3xTF32 (bwd_tf32); neither: the FMA kernels
  int query_splits = 1;
  bool dbias_reduced = false;  // dbias is summed over a broadcast dim
  // ... only over batch and/or heads, non-deterministic: the main kernel adds dS with fp32 atomics
  // (into dbias when it is fp32, else into the workspace at off_dbias); otherwise bwd_dbias_simt.
  bool dbias_atomic = false;
  // The tensor-core kernel sends dbias 4 keys per request (BwdParams::dbias_quads).
  bool dbias_quads = false;
  // ... and staggers its query walk per (b, kv head) (BwdParams::dbias_stagger).
  bool dbias_stagger = false;
  // ... and sums a GQA group's dS in the block before sending it (BwdParams::dbias_presum).
  bool dbias_presum = false;
  // How dbias is formed, for the plan and the GPU case tables: "" (no dbias), "direct" / "direct-x4" (unbroadcast:
  // stores), "atomic-x4" / "atomic" (fp32 reductions, 4 or 1 per request; "+stagger" with
  // dbias_stagger, "+presum" with dbias_presum), "recompute" (bwd_dbias_simt).
  std::string dbias_mode;
  size_t off_dsum = 0, off_dq = 0, off_dk = 0, off_dv = 0, off_dbias = 0;
  size_t workspace_bytes = 0;
};

// `dtype` is the ElemType of q/k/v/o; `device` the CUDA ordinal the pointers live on.
std::string run_forward(const FwdParams& p, int dtype, int device, cudaStream_t stream, PathRequest path);
BwdPlan plan_backward(const BwdParams& p, int dtype, int device, PathRequest path);
std::vector<std::string> run_backward(BwdParams p, int dtype, int device, PathRequest path, void* workspace,
                                      size_t workspace_bytes, cudaStream_t stream);

// Names of every instantiated kernel family, and whether this device can run the addon's code.
std::vector<std::string> kernel_names();
std::string device_support(int device);  // empty when supported, else the reason

}  // namespace memeff
