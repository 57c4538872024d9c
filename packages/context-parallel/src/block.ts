// One local attention call of the ring, forward and backward, through core's sdpaForward and
// sdpaBackward on whatever backend the tensors' device selects.
//
// Backward of a block. Let the full row (query i over every key) have out O, lse L and gradient dO,
// and let block b (a key subset) have, on its own, out O_b and lse L_b, P_b = exp(S_b - L_b) its local
// softmax. The full softmax on b's keys is P = w P_b with w = exp(L_b - L), and O = sum_b w_b O_b.
// FlashAttention's backward with the global L and delta = rowsum(dO * O) gives for the block:
//   dV_b = P^T dO,  dS = P * (dO V_b^T - delta),  dQ += scale dS K_b,  dK_b = scale dS^T Q.
// core's sdpaBackward takes the gradient of the block's own forward (its own L_b and O_b), so the
// block is run with gradOut g = w dO, which gives
//   dV_b = P_b^T (w dO) = P^T dO                                   (exact)
//   dS_g = P_b * (w dO V_b^T - w delta_b) = P * (dO V_b^T - delta_b),  delta_b = rowsum(dO * O_b)
// and dS - dS_g = c P_b with c = w (delta_b - delta) per row: the path through L_b, which a
// single-call backward never sees (the merge makes dLoss/dL_b = w (delta_b - delta), and
// dL_b/dS_b = P_b). Its gradients are
//   dQ_c = scale c (P_b K_b)  and  dK_c = scale P_b^T (c Q)
// and both come from one more call on the same scores: attention with the keys as values,
// A = sdpaForward(Q, K_b, K_b) = P_b K_b, whose sdpaBackward with gradOut h = scale c Q returns
// dv = P_b^T h. So a step costs two forwards and two backwards where a backend that took the
// global L and O (FlashAttention's contract) would need one backward: correct on every backend
// today, and the one change README names for speed.
import { sdpaBackward, sdpaForward } from '@attn/core';
import type { ForwardResult, Tensor } from '@attn/core';
import { hostValues, rowDots, scaleRows, tensorLike } from './host.js';
import { partialWeight } from './merge.js';
import type { LocalCallOptions } from './options.js';

function call(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  causal: boolean,
  o: LocalCallOptions,
  requiresGrad: boolean,
): ForwardResult {
  return sdpaForward(q, k, v, {
    isCausal: causal,
    scale: o.scale,
    enableGqa: o.enableGqa,
    backends: o.backends,
    requiresGrad,
  });
}

/** The block's own out and lse, on the host (float64), the call's tensors freed. */
export function blockForward(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  causal: boolean,
  o: LocalCallOptions,
): { out: Float64Array; lse: Float64Array } {
  const r = call(q, k, v, causal, o, false);
  try {
    return { out: hostValues(r.out), lse: hostValues(r.logsumexp) };
  } finally {
    r.out.dispose();
    r.logsumexp.dispose();
  }
}

/** What the backward of a query chunk needs from the full forward, on the host. */
export interface RowState {
  /** dO [rows, Dv], float64. */
  readonly gradOut: Float64Array;
  /** The merged lse [rows] of the full forward. */
  readonly lse: Float64Array;
  /** rowsum(dO * O) [rows] with the merged O of the full forward. */
  readonly delta: Float64Array;
  /** q [rows, D] (for h = scale c q). */
  readonly q: Float64Array;
}

export interface BlockGrads {
  readonly dq: Float64Array;
  readonly dk: Float64Array;
  readonly dv: Float64Array;
}

/** Gradients of one (query chunk, key chunk) block inside the full row (see the header). */
export function blockBackward(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  causal: boolean,
  rows: RowState,
  o: LocalCallOptions,
): BlockGrads {
  const D = q.shape[3]!;
  const Dv = v.shape[3]!;
  const outShape = [q.shape[0]!, q.shape[1]!, q.shape[2]!, Dv];
  const fwd = call(q, k, v, causal, o, true);
  const owned: Tensor[] = [fwd.out, fwd.logsumexp];
  try {
    const lseB = hostValues(fwd.logsumexp);
    const w = lseB.map((l, i) => partialWeight(l, rows.lse[i]!));
    const g = tensorLike(scaleRows(rows.gradOut, w, Dv), outShape, fwd.out);
    owned.push(g);
    const main = sdpaBackward(g, fwd);
    owned.push(main.dq, main.dk, main.dv);
    const deltaB = rowDots(rows.gradOut, hostValues(fwd.out), Dv);
    // c = w (delta_b - delta); 0 where the block saw nothing of the row (w = 0), NaN stays NaN.
    const c = w.map((wi, i) => (wi === 0 ? 0 : wi * (deltaB[i]! - rows.delta[i]!)));
    const dq = hostValues(main.dq);
    const dk = hostValues(main.dk);
    const dv = hostValues(main.dv);
    const fwdK = call(q, k, k, causal, o, true);
    owned.push(fwdK.out, fwdK.logsumexp);
    const sc = c.map((x) => o.scale * x);
    const a = hostValues(fwdK.out);
    for (let i = 0; i < sc.length; i++) {
      const f = sc[i]!;
      for (let d = 0; d < D; d++) dq[i * D + d] = dq[i * D + d]! + f * a[i * D + d]!;
    }
    const h = tensorLike(scaleRows(rows.q, sc, D), fwdK.out.shape, fwdK.out);
    owned.push(h);
    const corr = sdpaBackward(h, fwdK);
    owned.push(corr.dq, corr.dk, corr.dv);
    const dkc = hostValues(corr.dv);
    for (let n = 0; n < dk.length; n++) dk[n] = dk[n]! + dkc[n]!;
    return { dq, dk, dv };
  } finally {
    for (const t of owned) t.dispose();
  }
}
