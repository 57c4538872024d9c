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
  bool mma = false;            // tensor-core main kernel (else the FMA one)
  int query_splits = 1;
  bool dbias_reduced = false;  // dbias is summed over a broadcast dim
  // ... only over batch and/or heads, non-deterministic: the main kernel adds dS with fp32 atomics
  // (into dbias when it is fp32, else into the workspace at off_dbias); otherwise bwd_dbias_simt.
  bool dbias_atomic = false;
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
