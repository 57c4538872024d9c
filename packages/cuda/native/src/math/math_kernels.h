// cuda-math's launchers: each queues its kernels on `stream` (no host synchronization) and returns
// the instances it ran, for tests and `attn doctor`. Params are checked by bind_math.cpp first.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "attn/gpu_api.h"
#include "math_params.h"

namespace attn::math {

// acc64: accumulate in float64 (always for float64 inputs; for the others when scale or softcap
// overflows float32). Empty calls (no query rows) launch nothing and return "".
std::string run_forward(const Params& p, DType dtype, bool acc64, gpuStream_t stream);

// Row statistics and dq, then dk and dv, then dbias when one is asked for.
std::vector<std::string> run_backward(const BwdParams& p, DType dtype, bool acc64, gpuStream_t stream);

// Keys per block of the key kernel for these head dims (shared memory bounds it).
int key_tile(int head_dim, int head_dim_v, bool acc64);

// The kv-cache append and rotary kernel (attn/kv_append.cuh) on the stream ptrs[kStream] names; the
// arrays as src/kv-append.ts packs them (kv::kPtrCount and kv::kNumCount entries).
void run_kv_append(const uint64_t* ptrs, const double* nums);

// A kernel of each file, to ask the runtime whether the addon has code for a device.
const void* forward_probe();

// Every kernel instance the addon holds, by name.
std::vector<std::string> kernel_names();

}  // namespace attn::math
