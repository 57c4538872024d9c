// Which problems a bench runs: the standard grid of FlashAttention's papers (perf-anchors.md section 0),
// a smaller CPU grid, a custom grid, the decode preset, or the per-call overhead shape.
import type { DeviceLike, QkvDType } from '@attn/core';
import type { Features, ProblemSpec } from '../problem.js';

export interface GridSpec {
  readonly seqs: readonly number[];
  readonly dims: readonly number[];
  /** B * S: batch = tokens / S unless a batch is fixed. */
  readonly tokens: number;
  /** H * D: heads = hidden / D unless heads are fixed. */
  readonly hidden: number;
}

/** S 512..16k, B*S = 16k tokens, H*D = 2048 (H = 32/16/8 for D = 64/128/256). */
export const STANDARD_GRID: GridSpec = {
  seqs: [512, 1024, 2048, 4096, 8192, 16384],
  dims: [64, 128, 256],
  tokens: 16384,
  hidden: 2048,
};
/** The same proportions, small enough for a CPU in minutes. */
export const CPU_GRID: GridSpec = { seqs: [128, 256, 512, 1024], dims: [64, 128], tokens: 1024, hidden: 256 };

export interface GridRequest {
  readonly grid: GridSpec;
  readonly batch: number | null;
  readonly heads: number | null;
  readonly kvHeads: number | null;
  /** Which of causal / non-causal to run. */
  readonly causal: readonly boolean[];
  readonly dtype: QkvDType;
  readonly device: DeviceLike;
  readonly features: Omit<Features, 'causal'>;
  readonly seed: number;
}

/** Ordered by head dim, then causal, then sequence length (the plot's panels and x axis). */
export function gridProblems(r: GridRequest): ProblemSpec[] {
  const out: ProblemSpec[] = [];
  for (const headDim of r.grid.dims) {
    for (const causal of r.causal) {
      for (const seq of r.grid.seqs) {
        const headsQ = r.heads ?? Math.max(1, Math.floor(r.grid.hidden / headDim));
        out.push({
          ...r.features,
          causal,
          batch: r.batch ?? Math.max(1, Math.floor(r.grid.tokens / seq)),
          headsQ,
          headsKV: r.kvHeads ?? headsQ,
          seqQ: seq,
          seqK: seq,
          headDim,
          headDimV: headDim,
          dtype: r.dtype,
          device: r.device,
          seed: r.seed,
        });
      }
    }
  }
  return out;
}

/** One new token against an 8k cache: B=8, Hq=32, Hk=8 (GQA), Sq=1, Sk=8192, D=128, not causal. */
export function decodeProblem(r: Omit<GridRequest, 'grid' | 'causal' | 'batch' | 'heads' | 'kvHeads'>): ProblemSpec {
  return {
    ...r.features,
    enableGqa: true,
    causal: false,
    batch: 8,
    headsQ: 32,
    headsKV: 8,
    seqQ: 1,
    seqK: 8192,
    headDim: 128,
    headDimV: 128,
    dtype: r.dtype,
    device: r.device,
    seed: r.seed,
  };
}

/** A shape so small that the time is the per-call cost: B=1, H=1, S=16, D=64. */
export function overheadProblem(r: Omit<GridRequest, 'grid' | 'batch' | 'heads' | 'kvHeads'>): ProblemSpec[] {
  return r.causal.map((causal) => ({
    ...r.features,
    causal,
    batch: 1,
    headsQ: 1,
    headsKV: 1,
    seqQ: 16,
    seqK: 16,
    headDim: 64,
    headDimV: 64,
    dtype: r.dtype,
    device: r.device,
    seed: r.seed,
  }));
}
