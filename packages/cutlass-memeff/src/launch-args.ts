// SdpaParams (validated by core and by this backend's rules) into the addon's argument objects.
// Pure: no native calls, so it is tested on the CPU with a fake device runtime.
import { contiguousStrides, type DType, kernelWindow, type SdpaParams, type Tensor } from '@attn/core';
import type {
  AlibiArg,
  BackwardArgs,
  DbiasArg,
  ForwardArgs,
  KernelPath,
  MaskArg,
  TensorArg,
  VarlenArg,
} from './native.js';

/** ElemType codes of native/src/common/params.h (the same numbers as attn/tensor_ref.h's DType). */
export const DTYPE_CODE: Readonly<Record<DType, number>> = {
  float64: 0,
  float32: 1,
  float16: 2,
  bfloat16: 3,
  bool: 4,
  int32: 5,
};

/** Dense [B, H, S, D]: its b, h, s strides; packed varlen [total, H, D]: batch stride 0, then h and row strides. */
export function tensorArg(t: Tensor): TensorArg {
  const s = t.strides;
  if (t.rank === 3) return { ptr: t.dataPointer(), strides: [0, s[1]!, s[0]!] };
  return { ptr: t.dataPointer(), strides: [s[0]!, s[1]!, s[2]!] };
}

function alibiArg(p: SdpaParams): AlibiArg | null {
  const s = p.alibiSlopes;
  if (!s) return null;
  return { ptr: s.dataPointer(), strides: s.rank === 2 ? [s.strides[0]!, s.strides[1]!] : [0, s.strides[0]!] };
}

function varlenArg(p: SdpaParams): VarlenArg | null {
  const v = p.varlen;
  if (!v) return null;
  return {
    cuSeqlensQ: v.cuSeqlensQ.dataPointer(),
    cuSeqlensK: v.cuSeqlensK.dataPointer(),
    totalQ: p.query.shape[0]!,
    totalK: p.key.shape[0]!,
  };
}

function maskArg(p: SdpaParams): MaskArg | null {
  if (!p.mask) return null;
  const t = p.mask.tensor;
  return {
    kind: p.mask.kind === 'additive' ? 1 : 2,
    dtype: DTYPE_CODE[t.dtype],
    ptr: t.dataPointer(),
    strides: [...p.mask.expandedStrides],
  };
}

/** dbias's own shape, contiguous, seen along [B, Hq, Sq, Sk]: sizes (1 where it sums) and strides (0 there). */
export function dbiasLayout(maskShape: readonly number[]): {
  sizes: [number, number, number, number];
  strides: [number, number, number, number];
} {
  const own = contiguousStrides(maskShape);
  const sizes: [number, number, number, number] = [1, 1, 1, 1];
  const strides: [number, number, number, number] = [0, 0, 0, 0];
  const lead = 4 - maskShape.length;
  for (let d = 0; d < 4; d++) {
    const k = d - lead;
    if (k < 0) continue;
    sizes[d] = maskShape[k]!;
    strides[d] = maskShape[k] === 1 ? 0 : own[k]!;
  }
  return { sizes, strides };
}

/** [left, right], -1 unbounded; a side that reaches every key is unbounded (kernelWindow: 32-bit-safe). */
function windowArg(p: SdpaParams): [number, number] {
  const w = kernelWindow(p);
  return [w.left, w.right];
}

export function forwardArgs(p: SdpaParams, out: Tensor, lse: Tensor, stream: bigint, path: KernelPath): ForwardArgs {
  return {
    dtype: DTYPE_CODE[p.dtype],
    device: p.device.index,
    stream,
    path,
    batch: p.batch,
    headsQ: p.headsQ,
    headsKV: p.headsKV,
    seqQ: p.seqQ,
    seqK: p.seqK,
    headDim: p.headDim,
    headDimV: p.headDimV,
    scale: p.scale,
    causal: p.causal,
    lowerRight: p.alignment === 'lowerRight',
    window: windowArg(p),
    softcap: p.softcap,
    alibi: alibiArg(p),
    varlen: varlenArg(p),
    sequsedK: p.sequsedK ? p.sequsedK.tensor.dataPointer() : null,
    q: tensorArg(p.query),
    k: tensorArg(p.key),
    v: tensorArg(p.value),
    out: tensorArg(out),
    lse: lse.dataPointer(),
    mask: maskArg(p),
    dropout: p.dropout
      ? {
          threshold: p.dropout.threshold,
          seed: p.dropout.seed,
          offset: p.dropout.offset,
          keepScale: p.dropout.keepScale,
        }
      : null,
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

export function backwardArgs(
  p: SdpaParams,
  t: BackwardTensors,
  stream: bigint,
  workspace: BackwardArgs['workspace'],
  path: KernelPath = 'auto',
): BackwardArgs {
  let dbias: DbiasArg | null = null;
  if (t.dbias) dbias = { ptr: t.dbias.dataPointer(), ...dbiasLayout(t.dbias.shape) };
  return {
    ...forwardArgs(p, t.out, t.lse, stream, path),
    dout: tensorArg(t.gradOut),
    dq: tensorArg(t.dq),
    dk: tensorArg(t.dk),
    dv: tensorArg(t.dv),
    dbias,
    deterministic: p.deterministic,
    workspace,
  };
}
