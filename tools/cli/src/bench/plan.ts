// Turns bench flags into the list of problems to run.
import type { DeviceLike, QkvDType } from '@attn/core';
import { featuresFrom } from '../options/problem-options.js';
import type { ProblemSpec } from '../problem.js';
import type { BenchFlags } from './options.js';
import { CPU_GRID, STANDARD_GRID, decodeProblem, gridProblems, overheadProblem, type GridSpec } from './grid.js';

export interface BenchPlan {
  readonly kind: 'grid' | 'decode' | 'overhead';
  readonly gridName: string;
  readonly problems: readonly ProblemSpec[];
}

export function benchPlan(flags: BenchFlags, device: DeviceLike, dtype: QkvDType, deviceType: string): BenchPlan {
  const { causal: _c, ...features } = featuresFrom(flags, false);
  const causal = flags.causal ? [true] : flags.nonCausal ? [false] : [false, true];
  const common = { dtype, device, features, seed: flags.seed };
  if (flags.decode) return { kind: 'decode', gridName: 'decode', problems: [decodeProblem(common)] };
  if (flags.overhead)
    return { kind: 'overhead', gridName: 'overhead', problems: overheadProblem({ ...common, causal }) };
  const name = flags.grid ?? (deviceType === 'cpu' ? 'cpu' : 'standard');
  const base = name === 'cpu' ? CPU_GRID : STANDARD_GRID;
  const grid: GridSpec = {
    seqs: flags.seq ?? base.seqs,
    dims: flags.dim ?? base.dims,
    tokens: flags.tokens ?? base.tokens,
    hidden: flags.hidden ?? base.hidden,
  };
  const custom = flags.seq || flags.dim || flags.tokens || flags.hidden || flags.batch || flags.heads;
  return {
    kind: 'grid',
    gridName: custom ? `custom (from ${name})` : name,
    problems: gridProblems({
      ...common,
      grid,
      causal,
      batch: flags.batch ?? null,
      heads: flags.heads ?? null,
      kvHeads: flags.kvHeads ?? null,
    }),
  };
}
