// What buffers a call needs besides its inputs, as shapes (the backend allocates them).
// AOTriton's L (log-sum-exp) is a contiguous float32 [rows, maxSeqlenQ] with rows = batch * Hq
// (varlen: sequences * Hq); the kernel indexes it without strides. Dense, that is attn's own
// [B, Hq, Sq] logsumexp; varlen, attn's is [Hq, totalQ], so AOTriton writes a scratch and the shim
// converts. AOTriton also marks fully masked rows differently (+inf after a causal early exit, about
// -2.4e38 when a bias masks the row) where attn promises -inf: the shim's lse conversion fixes that.
import type { SdpaParams } from '@attn/core';
import { encodeWindow } from '../window.js';

export interface ForwardPlan {
  /** attn's outputs. */
  readonly outShape: readonly number[];
  readonly lseShape: readonly number[];
  /** AOTriton's L: attn's lse viewed as [rows, maxQ] ('alias'), or a scratch of that shape. */
  readonly aotLse: 'alias' | 'scratch';
  readonly aotLseShape: readonly [number, number];
  /** A zeroed int32 word for the persistent causal kernel (needed when a causal/window mask is set). */
  readonly atomicCounter: boolean;
}

export function planForward(p: SdpaParams): ForwardPlan {
  const rows = p.batch * p.headsQ;
  const win = encodeWindow(p);
  const atomicCounter = win.ok && win.window.causalType !== 0;
  if (p.varlen) {
    const totalQ = p.query.shape[0]!;
    return {
      outShape: [totalQ, p.headsQ, p.headDimV],
      lseShape: [p.headsQ, totalQ],
      aotLse: 'scratch',
      aotLseShape: [rows, p.varlen.maxSeqlenQ],
      atomicCounter,
    };
  }
  return {
    outShape: [p.batch, p.headsQ, p.seqQ, p.headDimV],
    lseShape: [p.batch, p.headsQ, p.seqQ],
    aotLse: 'alias',
    aotLseShape: [rows, p.seqQ],
    atomicCounter,
  };
}

/** Backward always hands AOTriton a scratch L (attn's -inf rows become +inf) and a delta of the same shape. */
export function planBackward(p: SdpaParams): { readonly aotLseShape: readonly [number, number] } {
  return { aotLseShape: planForward(p).aotLseShape };
}
