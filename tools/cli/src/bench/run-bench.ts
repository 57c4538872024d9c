// Runs a bench plan on our backends, then (optionally) on PyTorch's, and returns every row.
import type { Backend } from '@attn/core';
import { runTorch, torchIncompatibility, torchRequest, torchRows, type TorchAnswer } from '../compare/torch.js';
import type { Mode } from '../flops.js';
import type { OutStream } from '../io.js';
import type { ProblemSpec } from '../problem.js';
import type { Target } from '../runtime/target.js';
import { benchCase, type CaseSettings } from './run-case.js';
import type { BenchPlan } from './plan.js';
import type { Progress } from './progress.js';
import type { BenchRow } from './row.js';

export interface TorchSettings {
  readonly python: string;
  readonly threads: number;
  readonly backends: readonly string[] | null;
  /** Where the script's progress lines go. */
  readonly log: OutStream;
}

export interface BenchOutcome {
  readonly rows: BenchRow[];
  readonly torch: TorchAnswer | null;
  /** Problems torch was not asked to run, and why. */
  readonly torchSkipped: readonly string[];
  /** How torch's calls differ from ours where they do (varlen, a preallocated out). */
  readonly torchNotes: readonly string[];
}

/** What torch runs instead where it has no equivalent of our call. */
export function torchNotes(problems: readonly ProblemSpec[]): string[] {
  const notes: string[] = [];
  if (problems.some((p) => p.varlen)) {
    notes.push(
      "varlen problems run as torch's dense SDPA on the same shapes (equal-length sequences: the same attention; torch has no public varlen SDPA)",
    );
  }
  if (problems.some((p) => p.out))
    notes.push('torch allocates each output (its SDPA has no out=); ours writes into a preallocated one');
  return notes;
}

export async function runBench(
  plan: BenchPlan,
  modes: readonly Mode[],
  backends: readonly Backend[],
  target: Target,
  settings: CaseSettings,
  progress: Progress,
  torch: TorchSettings | null,
): Promise<BenchOutcome> {
  const rows: BenchRow[] = [];
  progress.start(plan.problems.length * modes.length * backends.length);
  try {
    for (const p of plan.problems)
      rows.push(...benchCase(p, modes, backends, target, settings, (r) => progress.done(r)));
  } finally {
    progress.stop();
  }
  if (!torch) return { rows, torch: null, torchSkipped: [], torchNotes: [] };
  const comparable = plan.problems.filter((p) => torchIncompatibility(p) === null);
  const torchSkipped = [...new Set(plan.problems.map(torchIncompatibility).filter((x): x is string => x !== null))];
  if (comparable.length === 0) return { rows, torch: null, torchSkipped, torchNotes: [] };
  const timing = {
    warmup: settings.warmup,
    warmupMs: settings.warmupMs,
    repeat: settings.repeat,
    budgetMs: settings.budgetMs,
    callsPerSample: settings.callsPerSample,
  };
  const answer = await runTorch(
    torchRequest(comparable, modes, timing, torch.threads, torch.backends),
    torch.python,
    torch.log,
  );
  return {
    rows: [...rows, ...torchRows(comparable, answer)],
    torch: answer,
    torchSkipped,
    torchNotes: torchNotes(comparable),
  };
}
