// The naive implementation in the case's own precision: the whole [Sq, Sk] score matrix, each
// intermediate rounded to the dtype (P of float8 cases to e4m3 in P.V) and each sum kept in float32 (float64 for float64), as
// FlashAttention's tests do with `attention_ref(..., upcast=False)`. Its distance from the float64
// reference is what "the error of a naive implementation in the same low precision" means in
// the accuracy rule (docs/ARCHITECTURE.md).
//
// It is written independently of cpu-math (dense, materialized, the mask broadcast by index, dropout
// through core's dropoutKeep element by element), so in float64 it also cross-checks the reference.
import { dropoutKeep, dropoutThreshold, float8E4m3Bits, float8E4m3DecodeTable } from '@attn/core';
import type { CaseSpec } from './cases.js';
import type { CaseValues } from './inputs.js';
import { fromPool } from './paged.js';
import { accumulator, rounder } from './rounding.js';

export interface NaiveResult {
  /** Same logical layouts as the backend's outputs. */
  readonly out: Float64Array;
  readonly lse: Float64Array;
  readonly dq: Float64Array;
  readonly dk: Float64Array;
  readonly dv: Float64Array;
  readonly dbias: Float64Array | null;
  /** Per gradient element, what the fused (FlashAttention) form of the backward may add to this naive error: see flashFormAllowance. */
  readonly allowance: GradientAllowance | null;
}

/**
 * Per element of each gradient, the size of the error that FlashAttention's form of the backward
 * has and this naive (autograd) form has not (judge's `allowance`). Both forms compute
 * dS = P * (dP~ - Delta) and the gradients from it; they differ in two inputs:
 *
 * 1. Delta. Autograd takes Delta_i = sum_j P_ij dP~_ij from the same rounded dP~ as dS, so the
 *    rounding of dP~ cancels where P sits on one key (one visible key: dS = 0 exactly). The fused
 *    form takes Delta_i = rowsum(dO_i * O_i) from the output it stored, rounded to the dtype, in fp32,
 *    independently of dP~. First order, with u the dtype's unit roundoff and u32 fp32's:
 *      |dDelta_i| <= u sum_c |dO_ic| |O_ic|   (O stored: each O_ic rounded by at most u |O_ic|; a
 *                                               bound, not an estimate: ~sqrt(Dv) times the typical
 *                                               size, since the roundings' signs are independent)
 *                  + 2 u32 M_i                 (O and dP~_ij = dO_i . V_j summed in fp32, and
 *                                               rowsum(dO * O): sums that no longer cancel; a
 *                                               length-n fp32 sum of random terms errs by about
 *                                               u32 n sigma / sqrt(6), below u32 sum |x_c y_c|)
 *    with M_i = sum_c |dO_ic| sum_j P~_ij |V_jc|.
 * 2. P. The fused form recomputes P_ij = exp(s_ij - lse_i) from the logsumexp stored in fp32
 *    (docs/ARCHITECTURE.md: lse is float32 for every dtype); the two fp32 numbers in that exponent are each
 *    rounded, so P_ij carries a relative error eps_ij = u32 (|s_ij| + |lse_i|), which grows with
 *    the logits (an explicit scale above 1, softcap 30). Autograd's P comes from the forward's own
 *    softmax, normalized exactly.
 * Propagated as dS is (first order, absolute values, so no cancellation is assumed):
 *    a_ij = P_ij (|dDelta_i| + eps_ij |dP~_ij - Delta_i|),  x (1 - tanh^2) under softcap
 *    dQ_i: |scale| sum_j a_ij |K_j|,  dK_j: |scale| sum_i a_ij |Q_i|,  dbias: sum of a_ij as dbias sums dS,
 *    dV_j: sum_i P~_ij eps_ij |dO_i| (P~ in dV = P~^T dO).
 * In float64 both u and u32 are float64's (a float64 backend must keep its logsumexp in float64 to
 * pass at all), so the allowance is ~1e-16 relative there.
 */
export interface GradientAllowance {
  readonly dq: Float64Array;
  readonly dk: Float64Array;
  readonly dv: Float64Array;
  readonly dbias: Float64Array | null;
}

const float8Table = float8E4m3DecodeTable();
/** x rounded to float8_e4m3 (to nearest even, saturating at 448). */
function e4m3(x: number): number {
  return float8Table[float8E4m3Bits(x)]!;
}

/** Unit roundoff (half an ulp at 1) of the dtype values are stored in. */
const UNIT_ROUNDOFF = { float64: 2 ** -53, float32: 2 ** -24, float16: 2 ** -11, bfloat16: 2 ** -8 } as const;

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

/** Paged cases: K and V read back out of the pools through the table (packed, as the math below reads them). */
function gatheredPages(spec: CaseSpec, x: CaseValues): CaseValues {
  if (!x.paged || !spec.varlen) return x;
  const { layout, kPool, vPool } = x.paged;
  const lengths = spec.varlen.seqlensK;
  return {
    ...x,
    k: fromPool(kPool, lengths, spec.headsKV, spec.headDim, layout),
    v: fromPool(vPool, lengths, spec.headsKV, spec.headDimV, layout),
  };
}

export function naiveAttention(
  spec: CaseSpec,
  values: CaseValues,
  dropout: NaiveDropout | null,
  backward: boolean,
): NaiveResult {
  const x = gatheredPages(spec, values);
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
  const lseAt = (b: number, h: number, i: number) =>
    spec.varlen ? h * totalQ + cuQ[b]! + i : (b * Hq + h) * spec.seqQ + i;

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
  const allowance: GradientAllowance | null = backward
    ? {
        dq: new Float64Array(x.q.length),
        dk: new Float64Array(x.k.length),
        dv: new Float64Array(x.v.length),
        dbias: dbiasAcc ? new Float64Array(dbiasAcc.length) : null,
      }
    : null;
  const uOut = UNIT_ROUNDOFF[spec.dtype];
  const uAcc = f32 ? UNIT_ROUNDOFF.float32 : UNIT_ROUNDOFF.float64;

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
      const keep = (i: number, j: number) =>
        !dropout || dropoutKeep(dropout.seed, dropout.offset, b, h, i, j, Hq, threshold);
      const T = new Float64Array(cap > 0 ? sq * sk : 0); // tanh of the capped scores
      const P = new Float64Array(sq * sk); // softmax
      const PD = new Float64Array(sq * sk); // softmax after dropout
      const SA = new Float64Array(backward ? sq * sk : 0); // |logit| of the visible keys (the allowance's eps)

      for (let i = 0; i < sq; i++) {
        const diag = i + (lowerRight ? sk - sq : 0);
        const S = new Float64Array(sk).fill(-Infinity);
        for (let j = 0; j < sk; j++) {
          if ((spec.causal && j > diag) || (wl >= 0 && j < diag - wl) || (wr >= 0 && j > diag + wr)) continue;
          if (boolMask && x.mask![maskAt!(b, h, i, j)] === 0) continue;
          let dot = 0;
          for (let d = 0; d < D; d++)
            dot = f32
              ? Math.fround(dot + Math.fround(Q[i * D + d]! * K[j * D + d]!))
              : dot + Q[i * D + d]! * K[j * D + d]!;
          let s = r(r(dot) * scale);
          if (cap > 0) {
            const t = r(Math.tanh(r(s / cap)));
            T[i * sk + j] = t;
            s = r(cap * t);
          }
          if (x.slopes) s = r(s - r(slope * Math.abs(diag - j)));
          if (maskAt && !boolMask) s = r(s + x.mask![maskAt(b, h, i, j)]!);
          S[j] = s;
          if (backward) SA[i * sk + j] = Math.abs(s);
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
          // float8 inputs: P takes P.V in e4m3, as an fp8 kernel's second GEMM does (rounded against the row max,
          // divided by the fp32 row sum at the end).
          const w = spec.float8 ? acc(acc(e4m3(E[j]!) / sum) * keepScale) : pd;
          for (let c = 0; c < Dv; c++)
            o[c] = f32 ? Math.fround(o[c]! + Math.fround(w * V[j * Dv + c]!)) : o[c]! + w * V[j * Dv + c]!;
        }
        out.set(o.map(r), oRows.at(b, h, i));
      }
      if (!backward) continue;

      // Backward, as autograd would take it through the ops above in this precision.
      const G = oRows.read(x.gradOut, b, h, sq);
      const dQ = new Float64Array(sq * D);
      const dK = new Float64Array(sk * D);
      const dV = new Float64Array(sk * Dv);
      const aQ = new Float64Array(sq * D); // the allowance (GradientAllowance), unscaled
      const aK = new Float64Array(sk * D);
      const aV = new Float64Array(sk * Dv);
      for (let i = 0; i < sq; i++) {
        const dP = new Float64Array(sk);
        let delta = 0;
        for (let j = 0; j < sk; j++) {
          if (P[i * sk + j] === 0) continue; // masked: no gradient flows through it
          let dpd = 0;
          for (let c = 0; c < Dv; c++)
            dpd = f32
              ? Math.fround(dpd + Math.fround(G[i * Dv + c]! * V[j * Dv + c]!))
              : dpd + G[i * Dv + c]! * V[j * Dv + c]!;
          dP[j] = keep(i, j) ? r(r(dpd) * keepScale) : 0;
          delta = acc(delta + acc(P[i * sk + j]! * dP[j]!));
          const pd = PD[i * sk + j]!;
          if (pd === 0) continue;
          for (let c = 0; c < Dv; c++)
            dV[j * Dv + c] = f32
              ? Math.fround(dV[j * Dv + c]! + Math.fround(pd * G[i * Dv + c]!))
              : dV[j * Dv + c]! + pd * G[i * Dv + c]!;
        }
        // Allowance: |dDelta_i| from |dO| . |O| and M_i, and |lse_i| for eps_ij (GradientAllowance).
        let M = 0;
        let dOO = 0;
        const o = oRows.at(b, h, i);
        for (let c = 0; c < Dv; c++) {
          let w = 0;
          for (let j = 0; j < sk; j++) w += PD[i * sk + j]! * Math.abs(V[j * Dv + c]!);
          M += Math.abs(G[i * Dv + c]!) * w;
          dOO += Math.abs(G[i * Dv + c]! * out[o + c]!);
        }
        const dDelta = uOut * dOO + 2 * uAcc * M;
        const lseAbs = Math.abs(lse[lseAt(b, h, i)]!);
        for (let j = 0; j < sk; j++) {
          const pij = P[i * sk + j]!;
          if (pij === 0) continue;
          const ds = r(acc(pij * acc(dP[j]! - delta)));
          const eps = uAcc * (SA[i * sk + j]! + lseAbs);
          const a = pij * (dDelta + eps * Math.abs(dP[j]! - delta));
          if (dbiasAcc) {
            const m = maskAt!(b, h, i, j);
            dbiasAcc[m] = acc(dbiasAcc[m]! + ds);
            allowance!.dbias![m] = allowance!.dbias![m]! + a;
          }
          const t = cap > 0 ? T[i * sk + j]! : 0;
          const dx = cap > 0 ? r(ds * r(1 - t * t)) : ds;
          const ax = cap > 0 ? a * Math.abs(1 - t * t) : a;
          for (let d = 0; d < D; d++) {
            dQ[i * D + d] = f32
              ? Math.fround(dQ[i * D + d]! + Math.fround(dx * K[j * D + d]!))
              : dQ[i * D + d]! + dx * K[j * D + d]!;
            dK[j * D + d] = f32
              ? Math.fround(dK[j * D + d]! + Math.fround(dx * Q[i * D + d]!))
              : dK[j * D + d]! + dx * Q[i * D + d]!;
            aQ[i * D + d] = aQ[i * D + d]! + ax * Math.abs(K[j * D + d]!);
            aK[j * D + d] = aK[j * D + d]! + ax * Math.abs(Q[i * D + d]!);
          }
          const pd = PD[i * sk + j]!;
          if (pd !== 0)
            for (let c = 0; c < Dv; c++) aV[j * Dv + c] = aV[j * Dv + c]! + pd * eps * Math.abs(G[i * Dv + c]!);
        }
      }
      qRows.add(
        dq,
        b,
        h,
        dQ.map((g) => r(r(g) * scale)),
        (v) => v,
      );
      kRows.add(dkAcc, b, hk, dK, acc);
      vRows.add(dvAcc, b, hk, dV, acc);
      qRows.add(
        allowance!.dq,
        b,
        h,
        aQ.map((g) => g * Math.abs(scale)),
        (v) => v,
      );
      kRows.add(
        allowance!.dk,
        b,
        hk,
        aK.map((g) => g * Math.abs(scale)),
        (v) => v,
      );
      vRows.add(allowance!.dv, b, hk, aV, (v) => v);
    }
  }
  return {
    out,
    lse,
    dq,
    dk: dkAcc.map((g) => r(r(g) * scale)),
    dv: dvAcc.map(r),
    dbias: dbiasAcc ? dbiasAcc.map(r) : null,
    allowance,
  };
}
