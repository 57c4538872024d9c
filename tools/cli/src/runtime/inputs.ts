// Random inputs for one problem, made on the problem's device, and the SdpaOptions that go with them.
import {
  DTYPE_BYTES,
  empty,
  explain,
  explainVarlen,
  outputDType,
  fromHostArray,
  parseDevice,
  sdpa,
  sdpaForward,
  sdpaVarlen,
  tensor,
  type ForwardResult,
  type SdpaOptions,
  type SelectionReport,
  type Tensor,
  type VarlenOptions,
} from '@attn/core';
import type { ProblemSpec } from '../problem.js';
import { randomTensor } from './random.js';

export interface ProblemInputs {
  /** Dense [B, Hq, Sq, D] (and k/v [B, Hk, Sk, D | Dv]); varlen problems: packed [B*Sq, Hq, D]. */
  readonly query: Tensor;
  readonly key: Tensor;
  readonly value: Tensor;
  readonly attnMask: Tensor | null;
  readonly alibiSlopes: Tensor | null;
  /** Varlen problems: int32 [B + 1] offsets of equal-length sequences, on the problem's device. */
  readonly cuSeqlensQ: Tensor | null;
  readonly cuSeqlensK: Tensor | null;
  /** Problems with a preallocated output (ProblemSpec.out): where each call of this set writes. */
  readonly out: Tensor | null;
}

/** mulberry32: a small seeded generator for mask patterns. */
function uniform(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** ALiBi's geometric slopes 2^(-8 (h + 1) / H), float32 [H]. */
export function alibiSlopeValues(heads: number): Float32Array {
  const out = new Float32Array(heads);
  for (let h = 0; h < heads; h++) out[h] = 2 ** ((-8 * (h + 1)) / heads);
  return out;
}

function makeMask(p: ProblemSpec, seed: number): Tensor | null {
  if (p.mask === null) return null;
  // [B, 1, Sq, Sk]: one mask per batch entry, broadcast over heads.
  const shape = [p.batch, 1, p.seqQ, p.seqK];
  if (p.mask === 'additive') return randomTensor(shape, p.dtype, p.device, seed);
  const next = uniform(seed);
  const n = p.batch * p.seqQ * p.seqK;
  const bits = new Uint8Array(n);
  for (let i = 0; i < n; i++) bits[i] = next() < 0.9 ? 1 : 0; // keep 90% of the keys
  return fromHostArray(bits, 'bool', shape, parseDevice(p.device));
}

/** int32 [B + 1] offsets of B sequences of `len` each. */
function uniformOffsets(batch: number, len: number, device: ProblemSpec['device']): Tensor {
  return tensor(
    Int32Array.from({ length: batch + 1 }, (_, b) => b * len),
    [batch + 1],
    { dtype: 'int32', device },
  );
}

/** The output's shape: dense [B, Hq, Sq, Dv], varlen [B*Sq, Hq, Dv]. */
export function outShape(p: ProblemSpec): number[] {
  return p.varlen ? [p.batch * p.seqQ, p.headsQ, p.headDimV] : [p.batch, p.headsQ, p.seqQ, p.headDimV];
}

/** Input set number `set` of a problem: distinct sets let timing rotate inputs. */
export function makeInputs(p: ProblemSpec, set = 0): ProblemInputs {
  const base = (p.seed * 1009 + set * 16) >>> 0;
  const [q, k, v] = p.varlen
    ? [
        [p.batch * p.seqQ, p.headsQ, p.headDim],
        [p.batch * p.seqK, p.headsKV, p.headDim],
        [p.batch * p.seqK, p.headsKV, p.headDimV],
      ]
    : [
        [p.batch, p.headsQ, p.seqQ, p.headDim],
        [p.batch, p.headsKV, p.seqK, p.headDim],
        [p.batch, p.headsKV, p.seqK, p.headDimV],
      ];
  return {
    query: randomTensor(q, p.dtype, p.device, base + 1),
    key: randomTensor(k, p.dtype, p.device, base + 2),
    value: randomTensor(v, p.dtype, p.device, base + 3),
    attnMask: makeMask(p, base + 4),
    alibiSlopes: p.alibi
      ? tensor(alibiSlopeValues(p.headsQ), [p.headsQ], { dtype: 'float32', device: p.device })
      : null,
    cuSeqlensQ: p.varlen ? uniformOffsets(p.batch, p.seqQ, p.device) : null,
    cuSeqlensK: p.varlen ? uniformOffsets(p.batch, p.seqK, p.device) : null,
    out: p.out ? empty(outShape(p), { dtype: outputDType(p.dtype), device: p.device }) : null,
  };
}

export function disposeInputs(inputs: ProblemInputs): void {
  for (const t of [
    inputs.query,
    inputs.key,
    inputs.value,
    inputs.attnMask,
    inputs.alibiSlopes,
    inputs.cuSeqlensQ,
    inputs.cuSeqlensK,
    inputs.out,
  ])
    t?.dispose();
}

/** Bytes of one input set (what rotation must spread across the cache). */
export function inputBytes(inputs: ProblemInputs): number {
  let bytes = 0;
  for (const t of [inputs.query, inputs.key, inputs.value, inputs.attnMask]) {
    if (t) bytes += t.numel * DTYPE_BYTES[t.dtype];
  }
  return bytes;
}

export function sdpaOptions(p: ProblemSpec, inputs: ProblemInputs, backends: readonly string[] | null): SdpaOptions {
  const opts: SdpaOptions = {
    isCausal: p.causal,
    alignment: p.alignment,
    enableGqa: p.enableGqa,
    requiresGrad: p.requiresGrad,
    attnMask: inputs.attnMask,
    alibiSlopes: inputs.alibiSlopes,
    window: p.window,
    dropoutP: p.dropoutP,
    dropoutSeed: p.seed,
    // float8_e4m3 inputs hold N(0, 1) draws rounded to e4m3, unscaled (runtime/random.ts).
    ...(p.dtype === 'float8_e4m3' ? { descale: { q: 1, k: 1, v: 1 } } : {}),
  };
  return {
    ...opts,
    ...(p.softcap > 0 ? { softcap: p.softcap } : {}),
    ...(backends ? { backends } : {}),
    ...(p.kernel ? { kernel: p.kernel } : {}),
    ...(inputs.out ? { out: inputs.out } : {}),
  };
}

/** The options of a varlen problem's sdpaVarlen call (sdpaOptions without the mask, with the offsets). */
export function varlenOptions(
  p: ProblemSpec,
  inputs: ProblemInputs,
  backends: readonly string[] | null,
): VarlenOptions {
  const { attnMask: _none, ...rest } = sdpaOptions(p, inputs, backends);
  return {
    ...rest,
    cuSeqlensQ: inputs.cuSeqlensQ!,
    cuSeqlensK: inputs.cuSeqlensK!,
    maxSeqlenQ: p.seqQ,
    maxSeqlenK: p.seqK,
    ...(p.indexValuesOnDevice ? { indexValuesOnDevice: true } : {}),
  };
}

/** One forward call of the problem on an input set (sdpaForward, or sdpaVarlen for varlen problems). */
export function forwardCall(
  p: ProblemSpec,
  inputs: ProblemInputs,
  backends: readonly string[] | null,
): () => ForwardResult {
  const { query: q, key: k, value: v } = inputs;
  if (p.varlen) {
    const opts = varlenOptions(p, inputs, backends);
    return () => sdpaVarlen(q, k, v, opts);
  }
  const opts = sdpaOptions(p, inputs, backends);
  return () => sdpaForward(q, k, v, opts);
}

/**
 * One call for the attention output alone, as a user's inference loop makes it and as torch's SDPA returns it:
 * sdpa(q, k, v, opts) (the logsumexp never becomes a tensor); varlen problems have sdpaVarlen only, whose
 * logsumexp the call disposes at once.
 */
export function outputCall(p: ProblemSpec, inputs: ProblemInputs, backends: readonly string[] | null): () => Tensor {
  const { query: q, key: k, value: v } = inputs;
  if (p.varlen) {
    const opts = varlenOptions(p, inputs, backends);
    return () => {
      const r = sdpaVarlen(q, k, v, opts);
      r.logsumexp.dispose();
      return r.out;
    };
  }
  const opts = sdpaOptions(p, inputs, backends);
  return () => sdpa(q, k, v, opts);
}

/** The selection report of the problem's call on an input set. */
export function explainCall(
  p: ProblemSpec,
  inputs: ProblemInputs,
  backends: readonly string[] | null,
): SelectionReport {
  const { query: q, key: k, value: v } = inputs;
  return p.varlen
    ? explainVarlen(q, k, v, varlenOptions(p, inputs, backends))
    : explain(q, k, v, sdpaOptions(p, inputs, backends));
}

/** Uninitialized inputs of the right shapes and dtypes: enough for explain, nothing to compute with. */
export function emptyInputs(p: ProblemSpec): ProblemInputs {
  const opts = { dtype: p.dtype, device: p.device };
  return {
    query: empty([p.batch, p.headsQ, p.seqQ, p.headDim], opts),
    key: empty([p.batch, p.headsKV, p.seqK, p.headDim], opts),
    value: empty([p.batch, p.headsKV, p.seqK, p.headDimV], opts),
    attnMask: p.mask
      ? empty([p.batch, 1, p.seqQ, p.seqK], { dtype: p.mask === 'bool' ? 'bool' : p.dtype, device: p.device })
      : null,
    alibiSlopes: p.alibi
      ? tensor(alibiSlopeValues(p.headsQ), [p.headsQ], { dtype: 'float32', device: p.device })
      : null,
    cuSeqlensQ: null,
    cuSeqlensK: null,
    out: null,
  };
}
