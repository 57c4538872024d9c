// One line of bench output: a (problem, mode, backend) and what happened.
import { DTYPE_BYTES, outputDType } from '@attn/core';
import { modeFlops, type Mode } from '../flops.js';
import { describeFeatures, type ProblemSpec } from '../problem.js';

export interface BenchRow {
  /** 'attn' for our backends, 'torch' for PyTorch's (--compare torch). */
  readonly source: 'attn' | 'torch';
  readonly backend: string;
  readonly mode: Mode;
  readonly dtype: string;
  readonly device: string;
  readonly batch: number;
  readonly headsQ: number;
  readonly headsKV: number;
  readonly seqQ: number;
  readonly seqK: number;
  readonly headDim: number;
  readonly headDimV: number;
  readonly causal: boolean;
  readonly features: string;
  readonly status: 'ok' | 'unsupported' | 'failed';
  readonly reason?: string;
  /** By the convention in flops.ts. */
  readonly flops: number;
  /** Bytes of Q, K, V and the output (a floor on memory traffic, for GB/s). */
  readonly bytes: number;
  readonly medianMs?: number;
  readonly p20Ms?: number;
  readonly p80Ms?: number;
  readonly samples?: number;
  readonly sets?: number;
  /** flops / median time, in TFLOP/s. */
  readonly tflops?: number;
}

export function ioBytes(p: ProblemSpec): number {
  const q = p.batch * p.headsQ * p.seqQ * p.headDim;
  const kv = p.batch * p.headsKV * p.seqK * (p.headDim + p.headDimV);
  const o = p.batch * p.headsQ * p.seqQ * p.headDimV;
  return (q + kv) * DTYPE_BYTES[p.dtype] + o * DTYPE_BYTES[outputDType(p.dtype)];
}

export function rowBase(p: ProblemSpec, mode: Mode, backend: string, source: BenchRow['source'] = 'attn') {
  return {
    source,
    backend,
    mode,
    dtype: p.dtype,
    device: typeof p.device === 'string' ? p.device : `${p.device.type}:${p.device.index}`,
    batch: p.batch,
    headsQ: p.headsQ,
    headsKV: p.headsKV,
    seqQ: p.seqQ,
    seqK: p.seqK,
    headDim: p.headDim,
    headDimV: p.headDimV,
    causal: p.causal,
    features: describeFeatures({ ...p, requiresGrad: false }),
    flops: modeFlops(p, mode),
    bytes: ioBytes(p),
  } as const;
}

export function timedRow(
  base: ReturnType<typeof rowBase>,
  t: { medianMs: number; p20Ms: number; p80Ms: number; count: number },
  sets: number,
): BenchRow {
  return {
    ...base,
    status: 'ok',
    medianMs: t.medianMs,
    p20Ms: t.p20Ms,
    p80Ms: t.p80Ms,
    samples: t.count,
    sets,
    tflops: base.flops / (t.medianMs / 1000) / 1e12,
  };
}

/** Same problem and mode (what a ratio compares). */
export function sameCase(a: BenchRow, b: BenchRow): boolean {
  return (
    a.mode === b.mode &&
    a.dtype === b.dtype &&
    a.batch === b.batch &&
    a.headsQ === b.headsQ &&
    a.headsKV === b.headsKV &&
    a.seqQ === b.seqQ &&
    a.seqK === b.seqK &&
    a.headDim === b.headDim &&
    a.headDimV === b.headDimV &&
    a.causal === b.causal
  );
}
