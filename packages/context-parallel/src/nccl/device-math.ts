// RingMath on a CUDA device (math.ts): float32 accumulators and the addon's kernels (merge,
// accumulate, convert) on @attn/cuda's current stream of the tensors' device, so the ring's
// element-wise work never leaves the GPU and stays ordered with the local attention kernels.
// Tensors must be contiguous (every output and received block is); float64 is refused (the GPU
// backends do not run it).
import { empty, full, zeros } from '@attn/core';
import type { DType, Tensor } from '@attn/core';
import { currentStream } from '@attn/cuda';
import { cpError } from '../errors.js';
import type { OutAccumulator, RingMath } from '../math.js';
import { type ContextParallelAddon, requireAddon } from './addon.js';

const ELEM: Partial<Record<DType, number>> = { float32: 0, float16: 1, bfloat16: 2 };

function elemOf(t: Tensor, what: string): number {
  const e = ELEM[t.dtype];
  if (e === undefined)
    throw cpError('ATTN_CP_SHARD', `deviceMath: ${what} is ${t.dtype}; it takes float32, float16 or bfloat16.`);
  if (t.device.type !== 'cuda') throw cpError('ATTN_CP_SHARD', `deviceMath: ${what} must be on a CUDA device.`);
  if (!t.isContiguous()) throw cpError('ATTN_CP_SHARD', `deviceMath: ${what} must be contiguous.`);
  return e;
}

const streamOf = (t: Tensor) => currentStream(t.device.index);

class DeviceOut implements OutAccumulator {
  readonly #a: ContextParallelAddon;
  readonly #q: Tensor;
  readonly #dv: number;
  readonly #acc: Tensor;
  readonly #lse: Tensor;
  constructor(a: ContextParallelAddon, q: Tensor, dv: number) {
    elemOf(q, 'q');
    const [b, h, n] = q.shape as [number, number, number];
    this.#a = a;
    this.#q = q;
    this.#dv = dv;
    this.#acc = zeros([b, h, n, dv], { dtype: 'float32', device: q.device });
    this.#lse = full([b, h, n], -Infinity, { dtype: 'float32', device: q.device });
  }
  merge(out: Tensor, lse: Tensor): void {
    const e = elemOf(out, 'a partial out');
    elemOf(lse, 'a partial lse');
    const rows = this.#lse.numel;
    this.#a.merge(
      this.#acc.dataPointer(),
      this.#lse.dataPointer(),
      out.dataPointer(),
      lse.dataPointer(),
      rows,
      this.#dv,
      e,
      streamOf(this.#q),
    );
  }
  finish(): { out: Tensor; lse: Tensor } {
    const q = this.#q;
    const out = convertTo(this.#a, this.#acc, q);
    this.#acc.dispose();
    return { out, lse: this.#lse };
  }
}

/** acc (float32) rounded into a new tensor of acc's shape in like's dtype. */
function convertTo(a: ContextParallelAddon, acc: Tensor, like: Tensor): Tensor {
  const e = elemOf(like, 'the output');
  const out = empty(acc.shape, { dtype: like.dtype, device: like.device });
  a.convert(out.dataPointer(), acc.dataPointer(), acc.numel, e, streamOf(like));
  return out;
}

/** The device RingMath; ATTN_CP_TRANSPORT when the addon is not built. */
export function deviceMath(): RingMath {
  const a = requireAddon();
  return {
    name: 'device',
    outAccumulator: (q, dv) => new DeviceOut(a, q, dv),
    gradZeros: (t) => zeros(t.shape, { dtype: 'float32', device: t.device }),
    addGrad(acc, g) {
      const e = elemOf(g, 'a block gradient');
      if (acc.numel !== g.numel)
        throw cpError('ATTN_CP_SHARD', `deviceMath: accumulator of ${acc.numel} for a gradient of ${g.numel}.`);
      a.accumulate(acc.dataPointer(), g.dataPointer(), g.numel, e, streamOf(g));
      return acc;
    },
    finishGrad: (acc, like) => convertTo(a, acc, like),
  };
}
