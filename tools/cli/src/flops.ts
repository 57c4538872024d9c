// FLOP convention of FlashAttention's benchmarks (perf-anchors.md section 0):
//   fwd = 4 * B * Hq * Sq * Sk * D, with D = (D + Dv) / 2 when they differ (query heads, also under GQA);
//   causal with Sq == Sk and no window: exactly half (the convention, so numbers compare with FA's);
//   otherwise (Sq != Sk, or a window): the exact fraction of visible (query, key) pairs;
//   bwd = 2.5 x fwd; fwd+bwd = 3.5 x fwd.
// Masks, dropout, ALiBi and softcap do not change the count.
import type { Alignment } from '@attn/core';

export type Mode = 'fwd' | 'bwd' | 'fwdbwd';
export const MODES: readonly Mode[] = ['fwd', 'bwd', 'fwdbwd'];

export interface FlopShape {
  readonly batch: number;
  readonly headsQ: number;
  readonly seqQ: number;
  readonly seqK: number;
  readonly headDim: number;
  readonly headDimV: number;
  readonly causal: boolean;
  readonly alignment: Alignment;
  readonly window: readonly [number, number] | null;
}

/** Number of keys query i sees: an inclusive range [lo, hi] clipped to [0, Sk). */
function visibleKeys(i: number, s: FlopShape): number {
  const shift = s.alignment === 'lowerRight' ? s.seqK - s.seqQ : 0;
  const diag = i + shift;
  let lo = 0;
  let hi = s.seqK - 1;
  if (s.causal) hi = Math.min(hi, diag);
  if (s.window) {
    const [left, right] = s.window;
    if (left >= 0) lo = Math.max(lo, diag - left);
    if (right >= 0) hi = Math.min(hi, diag + right);
  }
  return Math.max(0, hi - lo + 1);
}

/** Fraction of the Sq x Sk score matrix that is computed. */
export function visibleFraction(s: FlopShape): number {
  if (!s.causal && !s.window) return 1;
  if (s.causal && !s.window && s.seqQ === s.seqK) return 0.5;
  let count = 0;
  for (let i = 0; i < s.seqQ; i++) count += visibleKeys(i, s);
  return count / (s.seqQ * s.seqK);
}

export function forwardFlops(s: FlopShape): number {
  const d = (s.headDim + s.headDimV) / 2;
  return 4 * s.batch * s.headsQ * s.seqQ * s.seqK * d * visibleFraction(s);
}

export const MODE_FACTOR: Readonly<Record<Mode, number>> = { fwd: 1, bwd: 2.5, fwdbwd: 3.5 };

export function modeFlops(s: FlopShape, mode: Mode): number {
  return forwardFlops(s) * MODE_FACTOR[mode];
}
