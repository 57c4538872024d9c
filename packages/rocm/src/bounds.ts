// Causal and sliding window folded into one pair of bounds, as FlashAttention defines them: query
// row i sees key j when d(i) - left <= j <= d(i) + right, d(i) the aligned diagonal (i for upperLeft,
// i + seqK - seqQ for lowerRight). Both ROCm libraries take masks in this form, each encoded its way.
import type { SdpaParams } from '@attn/core';

export interface Bounds {
  /** Keys left of the diagonal that are seen; null = unbounded. */
  readonly left: number | null;
  /** Keys right of the diagonal that are seen; null = unbounded. */
  readonly right: number | null;
}

/** The bounds of a call, or null when neither causal nor a bounded window restricts it. */
export function effectiveBounds(p: Pick<SdpaParams, 'causal' | 'window'>): Bounds | null {
  const left = p.window?.left ?? null;
  let right = p.window?.right ?? null;
  if (p.causal) right = right === null ? 0 : Math.min(right, 0);
  if (left === null && right === null) return null;
  return { left, right };
}
