// The naive implementation in the case's own precision: the whole [Sq, Sk] score matrix, each
// intermediate rounded to the dtype and each sum kept in float32 (float64 for float64), as
// FlashAttention's tests do with `attention_ref(..., upcast=False)`. Its distance from the float64
// reference is what "the error of a naive implementation in the same low precision" means in
// DESIGN.md's accuracy rule.
//
// It is written independently of cpu-math (dense, materialized, the mask broadcast by index, dropout
// through core's dropoutKeep element by element), so in float64 it also cross-checks the reference.
import { dropoutKeep, dropoutThreshold } from '@attn/core';
import type { CaseSpec } from './cases.js';
import type { CaseValues } from './inputs.js';
import { accumulator, rounder } from './rounding.js';

export interface NaiveResult {
  /** Same logical layouts as the backend's outputs. */
  readonly out: Float64Array;
  readonly lse: Float64Array;
  readonly dq: Float64Array;
  readonly dk: Float64Array;
  readonly dv: Float64Array;
  readonly dbias: Float64Array | null;
}

export interface NaiveDropout {
  readonly seed: bigint;
  readonly offset: number;
}

/**
 * Where row r of head h of sequence b of a tensor starts, dense [B, H, S, C] or packed [total, H, C];
 * the C values of a row are contiguous either way.
 */
class Rows {
  constructor(
    private readonly starts: readonly number[] | null,
    private readonly seq: number,
    private readonly heads: number,
    private readonly cols: number,
  ) {}

  at(b: number, h: number, r: number): number {
    const { starts, heads, cols } = this;
    return starts ? ((starts[b]! + r) * heads + h) * cols : ((b * heads + h) * this.seq + r) * cols;
  }

  /** Copies `rows` rows of (b, h) into a dense [rows, cols] matrix. */
  read(src: Float64Array, b: number, h: number, rows: number): Float64Array {
    const m = new Float64Array(rows * this.cols);
    for (let r = 0; r < rows; r++) m.set(src.subarray(this.at(b, h, r), this.at(b, h, r) + this.cols), r * this.cols);
    return m;
  }

  /** dst rows of (b, h) += m (for gradients that several query heads share). */
  add(dst: Float64Array, b: number, h: number, m: Float64Array, round: (x: number) => number): void {
    const rows = m.length / this.cols;
    for (let r = 0; r < rows; r++) {
      const o = this.at(b, h, r);
      for (let c = 0; c < this.cols; c++) dst[o + c] = round(dst[o + c]! + m[r * this.cols + c]!);
    }
  }
}

function cumulative(lengths: readonly number[]): number[] {
  const cu = [0];
  lengths.forEach((n, i) => cu.push(cu[i]! + n));
  return cu;
}

/** Broadcast index of (b, h, i, j) into the mask's own contiguous shape. */
function maskIndexer(shape: readonly number[]): (b: number, h: number, i: number, j: number) => number {
  const s4 = [...Array<number>(4 - shape.length).fill(1), ...shape];
  const st = [0, 0, 0, 0];
  for (let d = 3, n = 1; d >= 0; d--) {
    st[d] = s4[d] === 1 ? 0 : n;
    n *= s4[d]!;
  }
  return (b, h, i, j) => b * st[0]! + h * st[1]! + i * st[2]! + j * st[3]!;
}

export function naiveAttention(spec: CaseSpec, x: CaseValues, dropout: NaiveDropout | null, backward: boolean): NaiveResult {
  const r = rounder(spec.dtype);
  const acc = accumulator(spec.dtype);
  // The multiply-accumulate loops spell accumulate(a + accumulate(b * c)) out: one call target per loop inlines.
  const f32 = spec.dtype !== 'float64';
  const { headsQ: Hq, headsKV: Hk, headDim: D, headDimV: Dv } = spec;
  const group = Hq / Hk;
  const lensQ = spec.varlen ? spec.varlen.seqlensQ : Array<number>(spec.batch).fill(spec.seqQ);
  const lensK = spec.varlen ? spec.varlen.seqlensK : Array<number>(spec.batch).fill(spec.seqK);
  const cuQ = cumulative(lensQ);
  const totalQ = cuQ[lensQ.length]!;
  const startsQ = spec.varlen ? cuQ : null;
  const startsK = spec.varlen ? cumulative(lensK) : null;
  const qRows = new Rows(startsQ, spec.seqQ, Hq, D);
  const oRows = new Rows(startsQ, spec.seqQ, Hq, Dv);
  const kRows = new Rows(startsK, spec.seqK, Hk, D);
  const vRows = new Rows(startsK, spec.seqK, Hk, Dv);
  const lseAt = (b: number, h: number, i: number) => (spec.varlen ? h * totalQ + cuQ[b]! + i : (b * Hq + h) * spec.seqQ + i);

  const scale = spec.scale ?? 1 / Math.sqrt(D);
  const cap = spec.softcap ?? 0;
  const lowerRight = spec.alignment === 'lowerRight';
  const [wl, wr] = spec.window ?? [-1, -1];
  const p = spec.dropoutP ?? 0;
  const threshold = dropoutThreshold(p);
  const keepScale = 1 / (1 - p);
  const maskAt = spec.mask ? maskIndexer(spec.mask.shape) : null;
  const boolMask = spec.mask?.kind === 'bool';

  const out = new Float64Array(totalQ * Hq * Dv);
  const lse = new Float64Array(totalQ * Hq);
  const dq = new Float64Array(backward ? x.q.length : 0);
  const dkAcc = new Float64Array(backward ? x.k.length : 0);
  const dvAcc = new Float64Array(backward ? x.v.length : 0);
  const dbiasAcc = backward && spec.mask?.kind === 'additive' ? new Float64Array(x.mask!.length) : null;

  for (let b = 0; b < lensQ.length; b++) {
    const sq = lensQ[b]!;
    // sequsedK: the row's first sequsedK[b] keys are all it has (the rest keep zero gradients).
    const sk = spec.sequsedK ? spec.sequsedK[b]! : lensK[b]!;
    for (let h = 0; h < Hq; h++) {
      const hk = Math.floor(h / group);
      const Q = qRows.read(x.q, b, h, sq);
      const K = kRows.read(x.k, b, hk, sk);
      const V = vRows.read(x.v, b, hk, sk);
      const slope = x.slopes ? x.slopes[spec.alibi === 'perBatchHead' ? b * Hq + h : h]! : 0;
      const keep = (i: number, j: number) => !dropout || dropoutKeep(dropout.seed, dropout.offset, b, h, i, j, Hq, threshold);
      const T = new Float64Array(cap > 0 ? sq * sk : 0); // tanh of the capped scores
      const P = new Float64Array(sq * sk); // softmax
      const PD = new Float64Array(sq * sk); // softmax after dropout

      for (let i = 0; i < sq; i++) {
        const diag = i + (lowerRight ? sk - sq : 0);
        const S = new Float64Array(sk).fill(-Infinity);
        for (let j = 0; j < sk; j++) {
          if ((spec.causal && j > diag) || (wl >= 0 && j < diag - wl) || (wr >= 0 && j > diag + wr)) continue;
          if (boolMask && x.mask![maskAt!(b, h, i, j)] === 0) continue;
          let dot = 0;
          for (let d = 0; d < D; d++) dot = f32 ? Math.fround(dot + Math.fround(Q[i * D + d]! * K[j * D + d]!)) : dot + Q[i * D + d]! * K[j * D + d]!;
          let s = r(r(dot) * scale);
          if (cap > 0) {
            const t = r(Math.tanh(r(s / cap)));
            T[i * sk + j] = t;
            s = r(cap * t);
          }
          if (x.slopes) s = r(s - r(slope * Math.abs(diag - j)));
          if (maskAt && !boolMask) s = r(s + x.mask![maskAt(b, h, i, j)]!);
          S[j] = s;
        }
        const max = S.reduce((m, s) => Math.max(m, s), -Infinity);
        if (max === -Infinity) {
          lse[lseAt(b, h, i)] = -Infinity;
          continue; // out, P and PD stay 0
        }
        const E = S.map((s) => acc(Math.exp(acc(s - max))));
        const sum = E.reduce((a, e) => acc(a + e), 0);
        lse[lseAt(b, h, i)] = Math.fround(max + Math.log(sum));
        const o = new Float64Array(Dv);
        for (let j = 0; j < sk; j++) {
          const pij = r(acc(E[j]! / sum));
          P[i * sk + j] = pij;
          const pd = keep(i, j) ? r(pij * keepScale) : 0;
          PD[i * sk + j] = pd;
          if (pd === 0) continue;
          for (let c = 0; c < Dv; c++) o[c] = f32 ? Math.fround(o[c]! + Math.fround(pd * V[j * Dv + c]!)) : o[c]! + pd * V[j * Dv + c]!;
        }
        out.set(o.map(r), oRows.at(b, h, i));
      }
      if (!backward) continue;

      // Backward, as autograd would take it through the ops above in this precision.
      const G = oRows.read(x.gradOut, b, h, sq);
      const dQ = new Float64Array(sq * D);
      const dK = new Float64Array(sk * D);
      const dV = new Float64Array(sk * Dv);
      for (let i = 0; i < sq; i++) {
        const dP = new Float64Array(sk);
        let delta = 0;
        for (let j = 0; j < sk; j++) {
          if (P[i * sk + j] === 0) continue; // masked: no gradient flows through it
          let dpd = 0;
          for (let c = 0; c < Dv; c++) dpd = f32 ? Math.fround(dpd + Math.fround(G[i * Dv + c]! * V[j * Dv + c]!)) : dpd + G[i * Dv + c]! * V[j * Dv + c]!;
          dP[j] = keep(i, j) ? r(r(dpd) * keepScale) : 0;
          delta = acc(delta + acc(P[i * sk + j]! * dP[j]!));
          const pd = PD[i * sk + j]!;
          if (pd === 0) continue;
          for (let c = 0; c < Dv; c++) dV[j * Dv + c] = f32 ? Math.fround(dV[j * Dv + c]! + Math.fround(pd * G[i * Dv + c]!)) : dV[j * Dv + c]! + pd * G[i * Dv + c]!;
        }
        for (let j = 0; j < sk; j++) {
          const pij = P[i * sk + j]!;
          if (pij === 0) continue;
          const ds = r(acc(pij * acc(dP[j]! - delta)));
          if (dbiasAcc) {
            const m = maskAt!(b, h, i, j);
            dbiasAcc[m] = acc(dbiasAcc[m]! + ds);
          }
          const t = cap > 0 ? T[i * sk + j]! : 0;
          const dx = cap > 0 ? r(ds * r(1 - t * t)) : ds;
          for (let d = 0; d < D; d++) {
            dQ[i * D + d] = f32 ? Math.fround(dQ[i * D + d]! + Math.fround(dx * K[j * D + d]!)) : dQ[i * D + d]! + dx * K[j * D + d]!;
            dK[j * D + d] = f32 ? Math.fround(dK[j * D + d]! + Math.fround(dx * Q[i * D + d]!)) : dK[j * D + d]! + dx * Q[i * D + d]!;
          }
        }
      }
      qRows.add(dq, b, h, dQ.map((g) => r(r(g) * scale)), (v) => v);
      kRows.add(dkAcc, b, hk, dK, acc);
      vRows.add(dvAcc, b, hk, dV, acc);
    }
  }
  return {
    out,
    lse,
    dq,
    dk: dkAcc.map((g) => r(r(g) * scale)),
    dv: dvAcc.map(r),
    dbias: dbiasAcc ? dbiasAcc.map(r) : null,
  };
}
