// cpu-math backward: recomputes each query row's scores and softmax in float64 (the saved float32
// logsumexp would cost precision), replays the same dropout elements, and accumulates dq, dk, dv and
// the additive mask's gradient in float64; each is rounded to its dtype once at the end.
// backwardMathFrom is the same pass with the caller's out and logsumexp (core's sdpaBackwardFrom):
// P = exp(s - lse) with the given lse and delta = dO . out with the given out, FlashAttention's
// contract, so a row's gradients are those of a softmax over more keys than this call sees (a ring
// step inside the full row). A given lse of -inf gives the row zero gradients (P = 0), as the CUDA
// kernels treat it; NaN in lse or out makes the row's gradients NaN.
//
// Per row i, with P = softmax(s), Z = dropout factors (keepScale or 0), dO = gradOut row:
//   dV_j += P_ij Z_ij dO_i;  dP_ij = Z_ij (dO_i . v_j);  delta_i = sum_j P_ij dP_ij
//   dS_ij = P_ij (dP_ij - delta_i)           (gradient of the final score, = dbias)
//   dX_ij = dS_ij * (1 - tanh^2) with softcap;  dq_i += scale dX_ij k_j;  dk_j += scale dX_ij q_i
import { emptyOutput, OUTPUT_NAMES } from '@attn/core';
import type { ForwardOutputs, Gradients, SdpaParams, Tensor } from '@attn/core';
import { BiasGrad } from './bias-grad.js';
import { gather, gatherRows, scatterRow } from './host-io.js';
import { addWeightedRows, dotRows, expRow, rowMax } from './kernels.js';
import { problemOf } from './problem.js';
import { ScoreRow } from './scores.js';

/** The buffers of one (sequence, kv head) and of the query row being processed. */
interface Work {
  readonly D: number;
  readonly Dv: number;
  readonly scale: number;
  readonly keepScale: number;
  readonly kTile: Float64Array;
  readonly vTile: Float64Array;
  readonly dkAcc: Float64Array;
  readonly dvAcc: Float64Array;
  readonly qRow: Float64Array;
  readonly gRow: Float64Array;
  readonly dqRow: Float64Array;
  /** Scores of the row on [lo, hi), overwritten with its probabilities, then with dX. */
  readonly s: Float64Array;
  readonly dp: Float64Array;
}

/** A row's softmax normalizer and delta, given by the caller (backwardMathFrom). */
interface GivenRow {
  readonly lse: number;
  readonly delta: number;
}

/**
 * Gradients of one query row: adds into dqRow, dkAcc, dvAcc and the bias gradient. `max` is the
 * row's largest score (finite); keep is its dropout row (null without dropout); tanh the softcap's;
 * given the caller's lse and delta (null: the row's own, from its scores).
 */
function rowGradients(
  w: Work,
  lo: number,
  hi: number,
  max: number,
  keep: Uint8Array | null,
  tanh: Float64Array | null,
  bias: BiasGrad | null,
  biasBase: number,
  given: GivenRow | null,
): void {
  // Locals, not property loads, in the loops below.
  const { D, Dv, scale, keepScale, kTile, vTile, dkAcc, dvAcc, qRow, gRow, dqRow, s, dp } = w;
  const inv = given ? (expRow(s, lo, hi, given.lse), 1) : 1 / expRow(s, lo, hi, max);
  dotRows(gRow, vTile, Dv, lo, hi, 1, dp); // dO . v_j
  let delta = 0;
  for (let j = lo; j < hi; j++) {
    const p = s[j]! * inv;
    s[j] = p;
    const z = keep ? keep[j]! * keepScale : 1;
    const dpj = z * dp[j]!;
    dp[j] = dpj;
    delta += p * dpj;
    const pz = p * z;
    const vb = j * Dv;
    if (pz !== 0) for (let c = 0; c < Dv; c++) dvAcc[vb + c] = dvAcc[vb + c]! + pz * gRow[c]!;
  }
  if (given) delta = given.delta;
  // s becomes dX, the gradient of the scaled q.k before softcap, times scale.
  for (let j = lo; j < hi; j++) {
    const ds = s[j]! * (dp[j]! - delta);
    if (bias) bias.add(biasBase + j * bias.keyStride, ds);
    const t = tanh ? tanh[j]! : 0;
    const dx = ds * (1 - t * t) * scale;
    s[j] = dx;
    if (dx === 0) continue;
    const kb = j * D;
    for (let d = 0; d < D; d++) dkAcc[kb + d] = dkAcc[kb + d]! + dx * qRow[d]!;
  }
  addWeightedRows(dqRow, s, kTile, D, lo, hi);
}

/** The caller's out and lse, read per row (logical row-major host copies). */
class GivenRows {
  readonly #lse: Float64Array;
  readonly #out: Float64Array;
  readonly #dv: number;
  constructor(saved: ForwardOutputs, dv: number) {
    this.#lse = saved.logsumexp.toFloat64Array();
    this.#out = saved.out.toFloat64Array();
    this.#dv = dv;
  }
  /**
   * Row `index` of the dense [B, Hq, Sq] lse and [B, Hq, Sq, Dv] out (the same row order), with dO `g`.
   * Null when the lse is -inf: the row's softmax is empty, its gradients zero.
   */
  row(index: number, g: Float64Array): GivenRow | null {
    const lse = this.#lse[index]!;
    if (lse === -Infinity) return null;
    let delta = 0;
    const base = index * this.#dv;
    for (let c = 0; c < this.#dv; c++) delta += g[c]! * this.#out[base + c]!;
    return { lse, delta };
  }
}

/** Gradients with the row softmax recomputed from the scores (the backend's own backward). */
export function backwardMath(params: SdpaParams, _saved: ForwardOutputs, gradOut: Tensor): Gradients {
  return backwardRows(params, gradOut, null);
}

/** Gradients with the caller's out and logsumexp (see the header); dense calls. */
export function backwardMathFrom(params: SdpaParams, saved: ForwardOutputs, gradOut: Tensor): Gradients {
  return backwardRows(params, gradOut, new GivenRows(saved, params.headDimV));
}

function backwardRows(params: SdpaParams, gradOut: Tensor, given: GivenRows | null): Gradients {
  const pb = problemOf(params);
  const { seqs, group, maxSeqK, dropout: drop } = pb;
  const { headsKV, headDim: D, headDimV: Dv, dtype, scale } = params;
  const dq = emptyOutput(OUTPUT_NAMES.dq, params.query.shape, { dtype });
  const dk = emptyOutput(OUTPUT_NAMES.dk, params.key.shape, { dtype });
  const dv = emptyOutput(OUTPUT_NAMES.dv, params.value.shape, { dtype });
  const [dqRows, dkRows, dvRows, gRows] = [pb.rowsQ(dq), pb.rowsK(dk), pb.rowsK(dv), pb.rowsQ(gradOut)];
  const [qData, kData, vData, gData] = [
    params.query.hostData(),
    params.key.hostData(),
    params.value.hostData(),
    gradOut.hostData(),
  ];
  const [dqData, dkData, dvData] = [dq.hostData(), dk.hostData(), dv.hostData()];
  const bias = params.mask?.kind === 'additive' ? new BiasGrad(params.mask) : null;
  const scores = new ScoreRow(params, maxSeqK);
  const w: Work = {
    D,
    Dv,
    scale,
    keepScale: drop ? drop.keepScale : 1,
    kTile: new Float64Array(maxSeqK * D),
    vTile: new Float64Array(maxSeqK * Dv),
    dkAcc: new Float64Array(maxSeqK * D),
    dvAcc: new Float64Array(maxSeqK * Dv),
    qRow: new Float64Array(D),
    gRow: new Float64Array(Dv),
    dqRow: new Float64Array(D),
    s: new Float64Array(maxSeqK),
    dp: new Float64Array(maxSeqK),
  };

  for (let b = 0; b < seqs.count; b++) {
    const sq = seqs.seqQ(b);
    const sk = seqs.seqK(b);
    for (let hk = 0; hk < headsKV; hk++) {
      gatherRows(kData, dtype, pb.k, b, hk, sk, D, w.kTile);
      gatherRows(vData, dtype, pb.v, b, hk, sk, Dv, w.vTile);
      w.dkAcc.fill(0);
      w.dvAcc.fill(0);
      for (let h = hk * group; h < (hk + 1) * group; h++) {
        for (let i = 0; i < sq; i++) {
          w.dqRow.fill(0);
          scores.visible(i, sq, sk);
          const { lo, hi } = scores;
          if (lo < hi) {
            gather(qData, dtype, pb.q.row(b, h, i), 1, 0, D, pb.q.colStride, w.qRow);
            scores.compute(w.qRow, w.kTile, D, b, h, i, sq, sk, w.s);
            const max = rowMax(w.s, lo, hi);
            // A fully masked row (max -inf) has zero gradients.
            if (max !== -Infinity) {
              gather(gData, gradOut.dtype, gRows.row(b, h, i), 1, 0, Dv, gRows.colStride, w.gRow);
              const g = given ? given.row(pb.lseIndex(b, h, i), w.gRow) : null;
              if (!given || g) {
                const keep = drop ? drop.keepRow(b, h, i, hi) : null;
                rowGradients(w, lo, hi, max, keep, scores.tanh, bias, bias ? bias.rowBase(b, h, i) : 0, g);
              }
            }
          }
          scatterRow(w.dqRow, 0, D, dqData, dtype, dqRows.row(b, h, i), dqRows.colStride);
        }
      }
      // Keys after sequsedK[b] (j >= sk) are never written: host outputs start zeroed, their gradient.
      for (let j = 0; j < sk; j++) {
        scatterRow(w.dkAcc, j * D, D, dkData, dtype, dkRows.row(b, hk, j), dkRows.colStride);
        scatterRow(w.dvAcc, j * Dv, Dv, dvData, dtype, dvRows.row(b, hk, j), dvRows.colStride);
      }
    }
  }

  const grads: Gradients = { dq, dk, dv };
  return bias ? { ...grads, dbias: bias.toTensor() } : grads;
}
