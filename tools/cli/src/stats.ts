// Order statistics of timing samples.

export interface Summary {
  readonly count: number;
  readonly medianMs: number;
  readonly minMs: number;
  readonly maxMs: number;
  /** 20th and 80th percentiles (linear interpolation), as triton's do_bench quantiles. */
  readonly p20Ms: number;
  readonly p80Ms: number;
}

export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) throw new RangeError('quantile of no samples');
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  const a = sorted[lo]!;
  const b = sorted[hi]!;
  return a + (b - a) * (pos - lo);
}

export function median(samples: readonly number[]): number {
  return quantile(
    [...samples].sort((a, b) => a - b),
    0.5,
  );
}

export function summarize(samplesMs: readonly number[]): Summary {
  const sorted = [...samplesMs].sort((a, b) => a - b);
  return {
    count: sorted.length,
    medianMs: quantile(sorted, 0.5),
    minMs: sorted[0] ?? Number.NaN,
    maxMs: sorted[sorted.length - 1] ?? Number.NaN,
    p20Ms: quantile(sorted, 0.2),
    p80Ms: quantile(sorted, 0.8),
  };
}
