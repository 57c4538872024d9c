// Random N(0, 1) tensors fast enough for the standard grid. Core's randn is exact and seedable but runs
// per element in JS (seconds per 16M bfloat16 values); a bench needs hundreds of millions. Large tensors
// are therefore tiled from one randn block of 2M values per dtype (made once per process), each tile
// rotated by a seed- and tile-dependent shift, so values are still N(0, 1) draws, tensors of different
// seeds differ, and no two neighbouring tiles repeat.
import {
  allocHostArray,
  fromHostArray,
  parseDevice,
  randn,
  type DeviceLike,
  type FloatDType,
  type Tensor,
} from '@attn/core';

export const RANDOM_BLOCK = 1 << 21;

/** Tile `block` into `out`, rotating tile t by a seed-dependent shift. */
export function tileInto<
  T extends { length: number; set(src: ArrayLike<number>, at?: number): void; subarray(a: number, b?: number): T },
>(out: T, block: T, seed: number): T {
  const n = block.length;
  for (let at = 0, tile = 0; at < out.length; tile++) {
    const shift = (tile * 40503 + seed * 9973) % n;
    const len = Math.min(n, out.length - at);
    const first = Math.min(len, n - shift);
    out.set(block.subarray(shift, shift + first), at);
    if (len > first) out.set(block.subarray(0, len - first), at + first);
    at += len;
  }
  return out;
}

const blocks = new Map<FloatDType, Float32Array>();

export function randomTensor(shape: readonly number[], dtype: FloatDType, device: DeviceLike, seed: number): Tensor {
  const numel = shape.reduce((a, b) => a * b, 1);
  if (numel <= RANDOM_BLOCK) return randn(shape, { dtype, device, seed });
  let block = blocks.get(dtype);
  if (!block) {
    block = randn([RANDOM_BLOCK], { dtype, seed: 0x5eed }).hostData() as Float32Array;
    blocks.set(dtype, block);
  }
  const data = tileInto(allocHostArray(dtype, numel) as Float32Array, block, seed);
  return fromHostArray(data, dtype, shape, parseDevice(device));
}
