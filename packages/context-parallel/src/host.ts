// The element-wise work of the ring (merge, weights, row sums, accumulation) runs on host float64
// copies: exact for every dtype, and the same on every device. Values are read with
// toFloat64Array (logical row-major order) and written back in the tensors' dtype on their device.
// On a GPU this costs a device-host round trip per block; a device-side merge is future work
// (README, "What is not done").
import { tensor } from '@attn/core';
import type { DType, Tensor } from '@attn/core';

export function hostValues(t: Tensor): Float64Array {
  return t.toFloat64Array();
}

/** A tensor of `shape` holding `values`, in `dtype` on `like`'s device. */
export function tensorLike(
  values: Float64Array,
  shape: readonly number[],
  like: Tensor,
  dtype: DType = like.dtype,
): Tensor {
  return tensor(values, shape, { dtype, device: like.device });
}

/** An independent copy (same dtype, shape, device), as a transport delivers it. */
export function copyTensor(t: Tensor): Tensor {
  return tensorLike(hostValues(t), t.shape, t);
}

/** out[i] += a[i] for every element. */
export function addInto(out: Float64Array, a: ArrayLike<number>): void {
  if (out.length !== a.length) throw new RangeError(`addInto: ${out.length} != ${a.length}`);
  for (let i = 0; i < out.length; i++) out[i] = out[i]! + a[i]!;
}
