// SdpaParams (validated by core and by the rules) into the addon's argument objects. Pure: no native
// calls, so it is tested on the CPU with a fake device runtime.
import { hostIndexCopies, kernelWindow, kvHostCopies, type SdpaParams, type Tensor } from '@attn/core';
import { TENSOR_DTYPE_CODE } from '../tensor-dtype.js';
import type { MathBackwardArgs, MathForwardArgs, MathTensorArg } from './binding.js';

/** attn/tensor_ref.h's DType codes (the package's one table). */
export const DTYPE_CODE = TENSOR_DTYPE_CODE;

export function tensorArg(t: Tensor): MathTensorArg {
  return { ptr: t.dataPointer(), dtype: DTYPE_CODE[t.dtype], shape: t.shape, strides: t.strides };
}

export function forwardArgs(p: SdpaParams, out: Tensor, lse: Tensor): MathForwardArgs {
  const window = kernelWindow(p);
  const index = hostIndexCopies(p);
  return {
    device: p.device.index,
    dtype: DTYPE_CODE[p.dtype],
    batch: p.batch,
    headsQ: p.headsQ,
    headsKV: p.headsKV,
    seqQ: p.seqQ,
    seqK: p.seqK,
    headDim: p.headDim,
    headDimV: p.headDimV,
    cuSeqlensQ: index.seqlensQ,
    cuSeqlensK: index.seqlensK,
    sequsedK: index.sequsedK,
    blockTable: index.blockTable,
    blockSize: p.paged ? p.paged.blockSize : 0,
    q: tensorArg(p.query),
    k: tensorArg(p.key),
    v: tensorArg(p.value),
    out: tensorArg(out),
    lse: tensorArg(lse),
    scale: p.scale,
    softcap: p.softcap,
    causal: p.causal,
    lowerRight: p.alignment === 'lowerRight',
    windowLeft: window.left,
    windowRight: window.right,
    alibi: p.alibiSlopes ? tensorArg(p.alibiSlopes) : null,
    mask: p.mask ? tensorArg(p.mask.tensor) : null,
    dropout: p.dropout
      ? {
          threshold: p.dropout.threshold,
          offset: p.dropout.offset,
          seed: BigInt.asUintN(64, p.dropout.seed),
          keepScale: p.dropout.keepScale,
        }
      : null,
  };
}

/**
 * A kv-cache call's attention (after the append kernel) as a paged varlen forward: the rotated query
 * qPacked [B * Sq, Hq, D], the caches as pools (a contiguous cache [Bc, Sc, Hk, C] is Bc blocks of Sc
 * whose table is the cache row of each batch row), each row's keys [keyStart[b], keyStart[b] + keyCount[b])
 * of its table row; out [B * Sq, Hq, Dv] and lse [Hq, B * Sq] as a varlen call's.
 */
export function kvCacheForwardArgs(p: SdpaParams, qPacked: Tensor, out: Tensor, lse: Tensor): MathForwardArgs {
  const kv = p.kvCache;
  if (!kv) throw new TypeError('kvCacheForwardArgs takes a sdpaKvCache call');
  const host = kvHostCopies(kv);
  const cuQ = Int32Array.from({ length: p.batch + 1 }, (_, b) => b * p.seqQ);
  const cuK = new Int32Array(p.batch + 1);
  host.keyCount.forEach((n, b) => (cuK[b + 1] = cuK[b]! + n));
  const base = forwardArgs({ ...p, query: qPacked }, out, lse);
  return {
    ...base,
    cuSeqlensQ: cuQ,
    cuSeqlensK: cuK,
    sequsedK: null,
    blockTable: p.paged ? hostIndexCopies(p).blockTable : host.cacheRows,
    blockSize: kv.kCache.shape[1]!,
    keyStart: host.keyStart,
  };
}

export interface BackwardTensors {
  readonly out: Tensor;
  readonly lse: Tensor;
  readonly gradOut: Tensor;
  readonly dq: Tensor;
  readonly dk: Tensor;
  readonly dv: Tensor;
  readonly dbias: Tensor | null;
}

export function backwardArgs(p: SdpaParams, t: BackwardTensors): MathBackwardArgs {
  return {
    ...forwardArgs(p, t.out, t.lse),
    dout: tensorArg(t.gradOut),
    dq: tensorArg(t.dq),
    dk: tensorArg(t.dk),
    dv: tensorArg(t.dv),
    dbias: t.dbias ? tensorArg(t.dbias) : null,
  };
}

/**
 * Whether the kernels accumulate in float64: for float64 inputs, and where scale or softcap overflow
 * float32 (core's float32Scalars), which cpu-math computes in float64 and so must this fallback.
 */
export function accumulatesInFloat64(p: Pick<SdpaParams, 'dtype' | 'scale' | 'softcap'>): boolean {
  return p.dtype === 'float64' || !Number.isFinite(Math.fround(p.scale)) || !Number.isFinite(Math.fround(p.softcap));
}
