// Merging partial attention results by logsumexp, as split-KV's combine does. A partial over a key
// subset b of a row has out_b (the softmax-weighted values over b) and lse_b = log sum_{j in b} exp(s_j).
// Over the union: lse = log(exp(lse_a) + exp(lse_b)), out = exp(lse_a - lse) out_a + exp(lse_b - lse) out_b.
// -inf (no key seen yet) is the identity: its weight is 0, and a row that no partial saw stays out 0,
// lse -inf (DESIGN's fully masked row). NaN in either lse makes the row's lse and out NaN.

/** log(exp(a) + exp(b)) without overflow; -inf when both are -inf; NaN when either is NaN. */
export function logAddExp(a: number, b: number): number {
  if (a === -Infinity) return b;
  if (b === -Infinity) return a;
  const m = Math.max(a, b);
  if (m === Infinity) return a + b; // Inf + Inf, or Inf + finite: Inf (NaN only with a NaN)
  return m + Math.log1p(Math.exp(-Math.abs(a - b)));
}

/**
 * Folds a partial (out [rows, dv], lse [rows]) into the running acc (same shapes) in place; acc starts
 * as zeros with lse -inf. Float64 throughout: the result is rounded once, by whoever stores it.
 */
export function mergeInto(
  acc: Float64Array,
  accLse: Float64Array,
  out: ArrayLike<number>,
  lse: ArrayLike<number>,
  dv: number,
): void {
  const rows = accLse.length;
  if (acc.length !== rows * dv || out.length !== rows * dv || lse.length !== rows) {
    throw new RangeError(
      `mergeInto: ${rows} rows of ${dv}; got acc ${acc.length}, out ${out.length}, lse ${lse.length}`,
    );
  }
  for (let i = 0; i < rows; i++) {
    const a = accLse[i]!;
    const b = lse[i]!;
    if (b === -Infinity) continue; // the partial saw no key of this row (and a NaN acc stays NaN)
    const merged = logAddExp(a, b);
    // a === -inf: the acc row is the zero identity; taking out_b as is keeps its Inf/NaN values exact.
    const wa = a === -Infinity ? 0 : Math.exp(a - merged);
    const wb = a === -Infinity ? 1 : Math.exp(b - merged);
    accLse[i] = merged;
    const base = i * dv;
    for (let c = 0; c < dv; c++) acc[base + c] = (wa === 0 ? 0 : wa * acc[base + c]!) + wb * out[base + c]!;
  }
}

/**
 * The weight exp(lse_b - lse) of a partial inside the merged row: the factor that turns the partial's
 * softmax into the full row's on the partial's keys. 0 where the partial saw nothing; NaN with a NaN.
 */
export function partialWeight(partLse: number, fullLse: number): number {
  if (partLse === -Infinity) return 0;
  return Math.exp(partLse - fullLse);
}
