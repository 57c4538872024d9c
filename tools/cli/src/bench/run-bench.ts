// Runs a bench plan on our backends, then (optionally) on PyTorch's, and returns every row.
import type { Backend } from '@attn/core';
import { runTorch, torchIncompatibility, torchRequest, torchRows, type TorchAnswer } from '../compare/torch.js';
import type { Mode } from '../flops.js';
import type { OutStream } from '../io.js';
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
    for (const p of plan.problems) rows.push(...benchCase(p, modes, backends, target, settings, (r) => progress.done(r)));
  } finally {
    progress.stop();
  }
  if (!torch) return { rows, torch: null, torchSkipped: [] };
  const comparable = plan.problems.filter((p) => torchIncompatibility(p) === null);
  const torchSkipped = [...new Set(plan.problems.map(torchIncompatibility).filter((x): x is string => x !== null))];
  if (comparable.length === 0) return { rows, torch: null, torchSkipped };
  const timing = { warmup: settings.warmup, warmupMs: settings.warmupMs, repeat: settings.repeat, budgetMs: settings.budgetMs, callsPerSample: settings.callsPerSample };
  const answer = await runTorch(torchRequest(comparable, modes, timing, torch.threads, torch.backends), torch.python, torch.log);
  return { rows: [...rows, ...torchRows(comparable, answer)], torch: answer, torchSkipped };
}
