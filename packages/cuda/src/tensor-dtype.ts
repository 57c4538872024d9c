// The element-type codes the native side shares: attn/tensor_ref.h's DType (cuda-math, the kv append kernel)
// and memeff-cuda's ElemType (native/src/common/params.h, the same numbers).
import type { DType } from '@attn/core';

/** attn/tensor_ref.h's DType code of each dtype. */
export const TENSOR_DTYPE_CODE: Readonly<Record<DType, number>> = {
  float64: 0,
  float32: 1,
  float16: 2,
  bfloat16: 3,
  bool: 4,
  int32: 5,
  // No kernel takes float8_e4m3: core keeps it out of attention inputs (not a FloatDType), and the addons'
  // range checks (0..5) refuse the code should one be forged.
  float8_e4m3: 6,
};
