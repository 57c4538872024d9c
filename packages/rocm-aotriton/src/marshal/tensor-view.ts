// attn tensors -> AOTriton TensorView<Rank> as plain objects (the shim copies them field by field).
// AOTriton's DType numbering (dtypes.h): kFloat32 1, kFloat16 2, kBFloat16 3, kInt32 12, kUInt64 23.
import { AttnInputError, type DType, type Tensor } from '@attn/core';

export const AOT_DTYPE = { float32: 1, float16: 2, bfloat16: 3, int32: 12, uint64: 23 } as const;

export interface TensorViewArg {
  /** Device address of element [0, ...] (the tensor's offset applied); 0n for an absent tensor. */
  readonly ptr: bigint;
  /** Rank = sizes.length (0 for a scalar pointer). */
  readonly sizes: readonly number[];
  /** In elements. */
  readonly strides: readonly number[];
  readonly dtype: number;
}

export function aotDType(dtype: DType): number {
  switch (dtype) {
    case 'float32':
    case 'float16':
    case 'bfloat16':
    case 'int32':
      return AOT_DTYPE[dtype];
    default:
      throw new AttnInputError(
        'ATTN_DTYPE',
        `AOTriton has no ${dtype} tensors (float16, bfloat16, float32, int32 only).`,
      );
  }
}

/** get_null_tensor(dtype): how an optional input is left out. */
export function nullView(rank: number, dtype: number): TensorViewArg {
  return { ptr: 0n, sizes: new Array<number>(rank).fill(0), strides: new Array<number>(rank).fill(0), dtype };
}

/** A scalar device pointer (TensorView<0>): philox seed/offset (uint64), the atomic counter (int32). */
export function scalarView(ptr: bigint, dtype: number): TensorViewArg {
  return { ptr, sizes: [], strides: [], dtype };
}

/** The tensor as it is: sizes and strides taken as given (AOTriton accepts any strides). */
export function view(t: Tensor): TensorViewArg {
  return { ptr: t.dataPointer(), sizes: [...t.shape], strides: [...t.strides], dtype: aotDType(t.dtype) };
}

/**
 * A packed varlen tensor [total, H, D] as AOTriton's compact-varlen (1, H, total, D): PyTorch's
 * unsqueeze(0).transpose(1, 2), no copy.
 */
export function varlenView(t: Tensor): TensorViewArg {
  if (t.rank !== 3)
    throw new AttnInputError('ATTN_RANK', `varlenView: expected [total, heads, dim], got rank ${t.rank}.`);
  const [total, heads, dim] = t.shape as [number, number, number];
  const [s0, s1, s2] = t.strides as [number, number, number];
  return {
    ptr: t.dataPointer(),
    sizes: [1, heads, total, dim],
    strides: [total * s0, s1, s0, s2],
    dtype: aotDType(t.dtype),
  };
}

/** q/k/v/out-like tensors: dense as given, varlen through varlenView. */
export function qkvView(t: Tensor, varlen: boolean): TensorViewArg {
  return varlen ? varlenView(t) : view(t);
}
