// Warm-up, then repeated timed calls rotating over input sets; the median is what gets reported.
import { summarize, type Summary } from '../stats.js';
import type { Clock } from './clock.js';

export interface MeasureOptions {
  /** Untimed calls first (lazy native loads, allocator growth, caches). */
  readonly warmup: number;
  /** Timed calls at most. */
  readonly repeat: number;
  /** Stop early once this much time went into timed calls and `minSamples` were taken. */
  readonly budgetMs: number;
  readonly minSamples: number;
  /** Number of distinct input sets; call i uses set i % sets. */
  readonly sets: number;
}

export interface Measurement extends Summary {
  readonly samplesMs: readonly number[];
}

/**
 * `call(set)` runs one operation and may return a cleanup (e.g. dispose the outputs); cleanups run
 * outside the timed region.
 */
export function measure(call: (set: number) => (() => void) | void, clock: Clock, opts: MeasureOptions): Measurement {
  const sets = Math.max(1, opts.sets);
  let n = 0;
  for (let i = 0; i < opts.warmup; i++) {
    const { result } = clock.time(() => call(n++ % sets));
    result?.();
  }
  const samples: number[] = [];
  let spent = 0;
  while (samples.length < Math.max(1, opts.repeat)) {
    const { ms, result } = clock.time(() => call(n++ % sets));
    result?.();
    samples.push(ms);
    spent += ms;
    if (spent > opts.budgetMs && samples.length >= opts.minSamples) break;
  }
  return { ...summarize(samples), samplesMs: samples };
}

/**
 * How many input sets to rotate so that together they are at least twice the cache, capped by a
 * memory budget and by `max`.
 */
export function rotationSets(setBytes: number, cacheBytes: number, memoryBudgetBytes: number, max = 8): number {
  if (setBytes <= 0) return 1;
  const wanted = Math.ceil((2 * cacheBytes) / setBytes);
  const affordable = Math.floor(memoryBudgetBytes / setBytes);
  return Math.max(1, Math.min(max, Math.max(2, wanted), affordable));
}
