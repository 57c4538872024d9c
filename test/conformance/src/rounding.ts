// Rounding to a dtype, for the naive low-precision reference: every intermediate it keeps goes
// through rounder(dtype), every sum it accumulates through accumulator(dtype), as a straightforward
// implementation in that dtype would (matmuls and softmax accumulate in float32 on every GPU).
// The functions are module-level singletons so that the naive loops' call sites see few targets
// and V8 inlines them.
import { bfloat16BitsToFloat32, float16DecodeTable, float32ToBfloat16Bits, float32ToFloat16Bits } from '@attn/core';
import type { FloatDType } from '@attn/core';

export type Round = (x: number) => number;

const identity: Round = (x) => x;
const float16Table = float16DecodeTable();

// Half types round through float32 first, as a kernel that computes in float32 and stores halves
// does (and float32 values take core's fast encoder path).
const ROUNDERS: Readonly<Record<FloatDType, Round>> = {
  float64: identity,
  float32: Math.fround,
  float16: (x) => float16Table[float32ToFloat16Bits(Math.fround(x))]!,
  bfloat16: (x) => bfloat16BitsToFloat32(float32ToBfloat16Bits(Math.fround(x))),
};

/** Nearest value of the dtype (ties to even). */
export function rounder(dtype: FloatDType): Round {
  return ROUNDERS[dtype];
}

/** The precision sums are kept in: float64 for float64, float32 for everything narrower. */
export function accumulator(dtype: FloatDType): Round {
  return dtype === 'float64' ? identity : Math.fround;
}
