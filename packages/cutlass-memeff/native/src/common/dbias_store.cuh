// One element of dbias from a main backward kernel: a plain store where every (b, h, i, j) lands on
// its own element, an fp32 atomic add where dbias is summed over batch and/or heads (see
// BwdParams::dbias_accum). Both kernels of the backward (tensor-core and FMA) use it.
#pragma once
#include <cstdint>

#include "common/dtype_traits.cuh"
#include "common/params.h"

namespace memeff {

__device__ __forceinline__ void write_dbias(const BwdParams& p, int64_t idx, float ds) {
  if (p.dbias_accum != nullptr) {
    atomicAdd(p.dbias_accum + idx, ds);  // result unused: compiles to red.global.add.f32
  } else {
    store_any_float(p.dbias, p.mask_dtype, idx, ds);
  }
}

}  // namespace memeff
