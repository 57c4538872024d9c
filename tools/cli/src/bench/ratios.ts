// Our speed relative to each PyTorch backend on the same case: torch time / our time (> 1: we are faster).
import { torchDType } from '../compare/torch.js';
import { sameCase, type BenchRow } from './row.js';

export function torchBackends(rows: readonly BenchRow[]): string[] {
  return [...new Set(rows.filter((r) => r.source === 'torch').map((r) => r.backend))];
}

/** null when either side did not run. torch runs a float8_e4m3 problem in bfloat16 (torchDType). */
export function ratioTo(ours: BenchRow, torchBackend: string, rows: readonly BenchRow[]): number | null {
  if (ours.status !== 'ok' || ours.medianMs === undefined) return null;
  const asTorchRuns = { ...ours, dtype: torchDType(ours.dtype) };
  const theirs = rows.find(
    (r) => r.source === 'torch' && r.backend === torchBackend && r.status === 'ok' && sameCase(r, asTorchRuns),
  );
  if (!theirs?.medianMs) return null;
  return theirs.medianMs / ours.medianMs;
}

export interface RatioEntry {
  readonly backend: string;
  readonly mode: string;
  readonly torch: string;
  readonly seqK: number;
  readonly headDim: number;
  readonly causal: boolean;
  readonly ratio: number;
}

export function allRatios(rows: readonly BenchRow[]): RatioEntry[] {
  const out: RatioEntry[] = [];
  for (const r of rows.filter((x) => x.source === 'attn')) {
    for (const t of torchBackends(rows)) {
      const ratio = ratioTo(r, t, rows);
      if (ratio !== null)
        out.push({
          backend: r.backend,
          mode: r.mode,
          torch: t,
          seqK: r.seqK,
          headDim: r.headDim,
          causal: r.causal,
          ratio,
        });
    }
  }
  return out;
}
