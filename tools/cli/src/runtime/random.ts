// Random N(0, 1) tensors fast enough for the standard grid. Core's randn is exact and seedable but runs
// per element in JS (seconds per 16M bfloat16 values); a bench needs hundreds of millions. Large tensors
// are therefore tiled from one randn block of 2M values per dtype (made once per process), each tile
// rotated by a seed- and tile-dependent shift, so values are still N(0, 1) draws, tensors of different
// seeds differ, and no two neighbouring tiles repeat.
import {
  allocHostArray,
  float8E4m3Bits,
  fromHostArray,
  parseDevice,
  randn,
  type DeviceLike,
  type QkvDType,
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

const blocks = new Map<QkvDType, Float32Array | Uint8Array>();

/** float8_e4m3 inputs are N(0, 1) draws rounded to e4m3 (the values stored unscaled: descale 1). */
function randnBlock(dtype: QkvDType, numel: number, seed: number): Float32Array | Uint8Array {
  if (dtype !== 'float8_e4m3') return randn([numel], { dtype, seed }).hostData() as Float32Array;
  const x = randn([numel], { dtype: 'float32', seed }).hostData() as Float32Array;
  return Uint8Array.from(x, (v) => float8E4m3Bits(v));
}

export function randomTensor(shape: readonly number[], dtype: QkvDType, device: DeviceLike, seed: number): Tensor {
  const numel = shape.reduce((a, b) => a * b, 1);
  if (numel <= RANDOM_BLOCK) return fromHostArray(randnBlock(dtype, numel, seed), dtype, shape, parseDevice(device));
  let block = blocks.get(dtype);
  if (!block) {
    block = randnBlock(dtype, RANDOM_BLOCK, 0x5eed);
    blocks.set(dtype, block);
  }
  const data = tileInto(allocHostArray(dtype, numel) as typeof block, block, seed);
  return fromHostArray(data, dtype, shape, parseDevice(device));
}
