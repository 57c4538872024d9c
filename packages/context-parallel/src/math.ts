// Where the ring's element-wise work runs: the logsumexp merge of each block's partial into its query
// chunk's running (out, lse), and the accumulation of dQ, dK, dV over blocks. The drivers do it
// through a RingMath the caller chooses (RingOptions.math), never by guessing from the device:
// - hostMath (the default): float64 host copies, exact for every dtype and the same on every device;
//   on a GPU it costs a device-host round trip per block;
// - deviceMath (nccl/device-math.ts): float32 accumulators and CUDA kernels on the current stream,
//   nothing leaves the GPU.
import type { Tensor } from '@attn/core';
import { addInto, hostValues, tensorLike } from './host.js';
import { mergeInto } from './merge.js';

/** A query chunk's running (out, lse): starts as the empty softmax (out 0, lse -inf). */
export interface OutAccumulator {
  /** Folds a block's partial out [B, Hq, n, Dv] and lse float32 [B, Hq, n] in; both stay the caller's. */
  merge(out: Tensor, lse: Tensor): void;
  /** out in the query's dtype, lse float32 [B, Hq, n]; the accumulator is spent. */
  finish(): { out: Tensor; lse: Tensor };
}

export interface RingMath {
  readonly name: string;
  outAccumulator(q: Tensor, dv: number): OutAccumulator;
  /** Zeros shaped like `t` on its device, in the accumulation dtype: what travels on the 'grad' channel. */
  gradZeros(t: Tensor): Tensor;
  /** acc + g. `acc` is consumed (updated in place or disposed): use the returned tensor. */
  addGrad(acc: Tensor, g: Tensor): Tensor;
  /** acc rounded to `like`'s dtype and shape; acc stays the caller's. */
  finishGrad(acc: Tensor, like: Tensor): Tensor;
}

class HostOut implements OutAccumulator {
  readonly #q: Tensor;
  readonly #dv: number;
  readonly #acc: Float64Array;
  readonly #lse: Float64Array;
  constructor(q: Tensor, dv: number) {
    const rows = q.numel / q.shape[3]!;
    this.#q = q;
    this.#dv = dv;
    this.#acc = new Float64Array(rows * dv);
    this.#lse = new Float64Array(rows).fill(-Infinity);
  }
  merge(out: Tensor, lse: Tensor): void {
    mergeInto(this.#acc, this.#lse, hostValues(out), hostValues(lse), this.#dv);
  }
  finish(): { out: Tensor; lse: Tensor } {
    const [b, h, n] = this.#q.shape as [number, number, number];
    return {
      out: tensorLike(this.#acc, [b, h, n, this.#dv], this.#q),
      lse: tensorLike(this.#lse, [b, h, n], this.#q, 'float32'),
    };
  }
}

/** float64 host copies: exact for every dtype, on every device (see the header). */
export const hostMath: RingMath = {
  name: 'host',
  outAccumulator: (q, dv) => new HostOut(q, dv),
  gradZeros: (t) => tensorLike(new Float64Array(t.numel), t.shape, t, 'float64'),
  addGrad(acc, g) {
    const a = hostValues(acc);
    addInto(a, hostValues(g));
    const sum = tensorLike(a, acc.shape, acc, 'float64');
    acc.dispose();
    return sum;
  },
  finishGrad: (acc, like) => tensorLike(hostValues(acc), like.shape, like),
};
