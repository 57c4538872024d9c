// How the flash-cuda GPU suites compare a result with cpu-math's: one error measure for all of them.
import type { Tensor } from '@attn/core';

/** max |a - b| / max(1, max |b|); Infinity when the NaN patterns differ (equal infinities match). */
export function relErr(a: Tensor, b: Tensor): number {
  const x = a.toFloat64Array();
  const y = b.toFloat64Array();
  let m = 0;
  let scale = 1;
  for (let i = 0; i < x.length; i++) {
    if (Number.isNaN(x[i]!) !== Number.isNaN(y[i]!)) return Infinity;
    if (x[i] !== y[i]) m = Math.max(m, Math.abs(x[i]! - y[i]!));
    if (Number.isFinite(y[i]!)) scale = Math.max(scale, Math.abs(y[i]!));
  }
  return m / scale;
}
