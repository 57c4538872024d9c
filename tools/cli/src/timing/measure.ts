// Warm-up, then repeated timed calls rotating over input sets; the median is what gets reported.
import { summarize, type Summary } from '../stats.js';
import type { Clock } from './clock.js';

export interface MeasureOptions {
  /** Untimed calls first (lazy native loads, allocator growth, caches); each is a timed sample's call (a loop of calls under --overhead). */
  readonly warmup: number;
  /**
   * And untimed calls until this long went into them: a JavaScript call path runs interpreted for its
   * first hundreds of calls before V8 optimizes it, so a count alone times a short call (decode, ~100 us)
   * before it reaches the speed a loop of such calls runs at.
   */
  readonly warmupMs?: number;
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
  const warmupMs = opts.warmupMs ?? 0;
  const t0 = performance.now();
  for (let i = 0; i < opts.warmup || performance.now() - t0 < warmupMs; i++) {
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
