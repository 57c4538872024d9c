// `attn run`'s work: select, time, and check one problem. Returns data; printing is elsewhere.
import { explain, sdpaBackward, sdpaForward, type SelectionReport } from '@attn/core';
import { modeFlops, type Mode } from '../flops.js';
import type { ProblemSpec } from '../problem.js';
import { timeLoop, type LoopTiming } from '../timing/loop.js';
import { measure, type Measurement } from '../timing/measure.js';
import { checkAgainstReference, type CheckResult } from './check.js';
import { sdpaOptions } from './inputs.js';
import { gradOutFor, makeOperation, problemForMode } from './operation.js';
import { allocateSets, disposeSets } from './rotation.js';
import type { Target } from './target.js';

export interface RunSettings {
  readonly mode: Mode;
  readonly backends: readonly string[] | null;
  readonly warmup: number;
  /** And untimed calls until this long went into them: the steady state, as bench warms up. */
  readonly warmupMs: number;
  readonly repeat: number;
  readonly budgetMs: number;
  /** null: no check; else the largest B*Hq*Sq*Sk to check. */
  readonly checkLimit: number | null;
}

export interface RunResult {
  readonly problem: ProblemSpec;
  readonly mode: Mode;
  readonly device: string;
  readonly selection: SelectionReport;
  /** null when no backend supports the problem (see selection). */
  readonly backend: string | null;
  /** Each call timed alone (the clock around one call; on a GPU, the device's time). */
  readonly timing: (Measurement & { readonly sets: number; readonly clock: string }) | null;
  /** A loop of back-to-back calls with their cleanups: what a user's loop pays per call, and the host's part. */
  readonly loop: LoopTiming | null;
  readonly flops: number;
  readonly flopsPerSecond: number | null;
  readonly check: CheckResult;
}

export function backendName(b: unknown): string {
  if (typeof b === 'string') return b;
  const name = (b as { name?: unknown } | null)?.name;
  return typeof name === 'string' ? name : String(b);
}

export function runProblem(p: ProblemSpec, target: Target, s: RunSettings): RunResult {
  const problem = problemForMode(p, s.mode);
  const flops = modeFlops(problem, s.mode);
  const sets = allocateSets(problem, target);
  try {
    const first = sets[0]!;
    const selection = explain(first.query, first.key, first.value, sdpaOptions(problem, first, s.backends));
    const base = { problem, mode: s.mode, device: target.name, selection, flops };
    if (selection.selected === null) {
      return {
        ...base,
        backend: null,
        timing: null,
        loop: null,
        flopsPerSecond: null,
        check: { status: 'skipped', reason: 'no backend ran' },
      };
    }
    const check =
      s.checkLimit === null
        ? ({ status: 'skipped', reason: 'disabled by --no-check' } as const)
        : checkOnce(problem, s, first, s.checkLimit);
    const op = makeOperation(problem, s.mode, sets, s.backends);
    let m: Measurement;
    let loop: LoopTiming;
    try {
      m = measure((i) => op.call(i), target.clock, {
        warmup: s.warmup,
        warmupMs: s.warmupMs,
        repeat: s.repeat,
        budgetMs: s.budgetMs,
        minSamples: 3,
        sets: sets.length,
      });
      loop = timeLoop((i) => op.call(i), sets.length, target.clock, loopCalls(m.medianMs, s.budgetMs));
    } finally {
      op.dispose();
    }
    const timing = { ...m, sets: sets.length, clock: target.clock.description };
    return { ...base, backend: selection.selected, timing, loop, flopsPerSecond: flops / (m.medianMs / 1000), check };
  } finally {
    disposeSets(sets);
  }
}

/** Calls per loop: enough to hide the clock's own cost (up to 200), within a tenth of the budget over 5 loops. */
function loopCalls(callMs: number, budgetMs: number): number {
  return Math.max(1, Math.min(200, Math.floor(budgetMs / 50 / Math.max(callMs, 1e-3))));
}

function checkOnce(
  problem: ProblemSpec,
  s: RunSettings,
  first: ReturnType<typeof allocateSets>[number],
  limit: number,
): CheckResult {
  const result = sdpaForward(first.query, first.key, first.value, sdpaOptions(problem, first, s.backends));
  const gradOut = s.mode === 'fwd' ? null : gradOutFor(problem, 0);
  const grads = gradOut ? sdpaBackward(gradOut, result) : null;
  try {
    return checkAgainstReference(
      problem,
      s.mode,
      first,
      { backend: backendName(result.backend), result, grads },
      limit,
    );
  } finally {
    for (const t of [result.out, result.logsumexp, gradOut, grads?.dq, grads?.dk, grads?.dv, grads?.dbias])
      t?.dispose();
  }
}
