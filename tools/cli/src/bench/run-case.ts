// Times every (mode, backend) of one problem on shared, rotated input sets.
import type { Backend } from '@attn/core';
import type { Mode } from '../flops.js';
import type { ProblemSpec } from '../problem.js';
import { explainCall, type ProblemInputs } from '../runtime/inputs.js';
import { makeOperation, problemForMode } from '../runtime/operation.js';
import { allocateSets, disposeSets } from '../runtime/rotation.js';
import type { Target } from '../runtime/target.js';
import { measure } from '../timing/measure.js';
import { rowBase, timedRow, type BenchRow } from './row.js';

export interface CaseSettings {
  readonly warmup: number;
  /** Warm-up continues until this long went into it as well (measure.ts). */
  readonly warmupMs: number;
  readonly repeat: number;
  readonly budgetMs: number;
  /**
   * Calls per timed sample; the per-call time is the sample / callsPerSample. Above 1 (--overhead, --loop),
   * each call's cleanup (disposing its outputs) runs right after it inside the timed loop, as in a
   * user's loop of sdpa() then dispose(): the figure is what such a loop pays per call, host included.
   * At 1 the cleanup runs outside the timed region (the kernel's time).
   */
  readonly callsPerSample: number;
}

/**
 * Calls per sample of `attn bench --overhead`, on our side and torch's: long enough that a loop holds the
 * young-generation collections and finalizer work its calls cause, so one loop's figure is every loop's.
 */
export const OVERHEAD_LOOP_CALLS = 1000;
/**
 * The warm-up of `attn bench --overhead` (unless --warmup-ms says otherwise), in loops of the timed loop's
 * size on both sides: a JavaScript call path runs at its steady speed only after V8 has optimized every
 * function on it and the heap has grown to the loop's allocation rate (tens of thousands of small calls).
 */
export const OVERHEAD_WARMUP_MS = 1000;
/** The warm-up of every other bench, in ms (--warmup-ms). */
export const DEFAULT_WARMUP_MS = 200;

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Why `backend` declines, from the selection report; null when it would run. */
function declineReason(p: ProblemSpec, set: ProblemInputs, backend: string): string | null {
  const report = explainCall(p, set, [backend]);
  if (report.selected === backend) return null;
  const c = report.candidates.find((x) => x.backend === backend);
  if (!c) return `${backend} is not a candidate on ${report.device}`;
  const reasons = [c.unavailableReason, ...c.reasons.map((r) => `${r.rule}: ${r.message}`)].filter(Boolean);
  return reasons.join('; ') || 'declined without a reason';
}

function timeOne(
  p: ProblemSpec,
  mode: Mode,
  backend: string,
  sets: ProblemInputs[],
  target: Target,
  s: CaseSettings,
): BenchRow {
  const problem = problemForMode(p, mode);
  const base = rowBase(problem, mode, backend);
  const why = declineReason(problem, sets[0]!, backend);
  if (why !== null) return { ...base, status: 'unsupported', reason: why };
  try {
    const op = makeOperation(problem, mode, sets, [backend]);
    try {
      const k = Math.max(1, s.callsPerSample);
      const m = measure(
        (i) => {
          if (k === 1) return op.call(i);
          for (let c = 0; c < k; c++) op.call(i)();
        },
        target.clock,
        {
          warmup: s.warmup,
          warmupMs: s.warmupMs,
          repeat: s.repeat,
          budgetMs: s.budgetMs,
          minSamples: 3,
          sets: sets.length,
        },
      );
      const per = (x: number) => x / k;
      return timedRow(
        base,
        { medianMs: per(m.medianMs), p20Ms: per(m.p20Ms), p80Ms: per(m.p80Ms), count: m.count },
        sets.length,
      );
    } finally {
      op.dispose();
    }
  } catch (err) {
    return { ...base, status: 'failed', reason: message(err) };
  }
}

/** `onRow` is called as each row finishes (progress). */
export function benchCase(
  p: ProblemSpec,
  modes: readonly Mode[],
  backends: readonly Backend[],
  target: Target,
  s: CaseSettings,
  onRow: (row: BenchRow) => void,
): BenchRow[] {
  const rows: BenchRow[] = [];
  let sets: ProblemInputs[];
  try {
    sets = allocateSets(p, target);
  } catch (err) {
    for (const mode of modes) {
      for (const b of backends) {
        const row: BenchRow = {
          ...rowBase(problemForMode(p, mode), mode, b.name),
          status: 'failed',
          reason: `inputs: ${message(err)}`,
        };
        rows.push(row);
        onRow(row);
      }
    }
    return rows;
  }
  try {
    for (const mode of modes) {
      for (const b of backends) {
        const row = timeOne(p, mode, b.name, sets, target, s);
        rows.push(row);
        onRow(row);
      }
    }
  } finally {
    disposeSets(sets);
  }
  return rows;
}
