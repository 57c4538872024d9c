// The accuracy rule (docs/ARCHITECTURE.md; FlashAttention's): against the float64 reference, a backend's max error
// is at most 2x the max error of the naive implementation in the same precision, plus a small slack.
// NaN never passes where the reference is a number; where the reference is infinite (logsumexp -inf
// of a fully masked row) or NaN (NaN inputs) the backend must give exactly that: the same NaN/Inf
// pattern.
//
// Gradients: the naive implementation is autograd's form of the backward, and every fused backend
// computes FlashAttention's, which takes Delta = rowsum(dO * O) from the output stored in the dtype
// and P from the logsumexp stored in fp32. Those two inputs carry rounding the naive form does not
// have (where P sits on one key its error even cancels exactly, so the naive error is 0 there and
// the bound was the slack alone). naive.ts derives, per gradient element, the first-order size of
// that extra error (GradientAllowance: u |dO| . |O| and u32 (|s| + |lse|) propagated as dS is);
// the bound of an element is 2x (naive error + its allowance) + slack. The allowance is an estimate
// of size, never a widened constant: a gradient wrong by more than the forms' rounding still fails
// (packages/cpu/src/math/conformance-harness.test.ts plants such faults).
import { getBackend } from '@attn/core';
import type { FloatDType } from '@attn/core';

/**
 * Absolute slack of the rule, per unit of max(1, max |reference|): about one ulp of the dtype at 1.
 * The default for a backend that declares none (Backend.tolerances, beside its rules).
 */
export const DEFAULT_SLACK: Readonly<Record<FloatDType, number>> = {
  float64: 1e-12,
  float32: 1e-6,
  float16: 1e-3,
  bfloat16: 8e-3,
};

/**
 * How far the naive implementation may be from the reference before the harness itself is suspect
 * (in float64 the two must agree, which checks cpu-math's semantics against an independent
 * implementation; in low precision only gross disagreement is caught).
 */
export const NAIVE_SANITY: Readonly<Record<FloatDType, number>> = {
  float64: 1e-10,
  float32: 1e-3,
  float16: 5e-2,
  bfloat16: 3e-1,
};

/** The slack `backend` declares for dtype (Backend.tolerances), else DEFAULT_SLACK's. */
export function slackOf(backend: string | null, dtype: FloatDType): number {
  const declared = backend === null ? undefined : getBackend(backend)?.tolerances?.slack[dtype];
  return declared ?? DEFAULT_SLACK[dtype];
}

export interface Verdict {
  readonly ok: boolean;
  /** One line: what was compared, the errors and the bound, and the worst element. */
  readonly message: string;
}

function maxFiniteAbs(a: Float64Array): number {
  let m = 0;
  for (const x of a) if (Number.isFinite(x)) m = Math.max(m, Math.abs(x));
  return m;
}

/**
 * Largest |a - ref| over the elements where ref is finite, with where it occurs. NaN counts as
 * Infinity. Where ref is not finite (NaN from NaN inputs, -inf of a fully masked row, +-Inf) the
 * value must be the same: NaN where ref is NaN, the same infinity where it is infinite.
 */
function maxError(
  a: Float64Array,
  ref: Float64Array,
  allowance?: Float64Array,
): { err: number; at: number; mismatchedInfinity: number } {
  let err = 0;
  let at = -1;
  let mismatchedInfinity = -1;
  for (let n = 0; n < ref.length; n++) {
    const r = ref[n]!;
    const x = a[n]!;
    if (!Number.isFinite(r)) {
      const same = Number.isNaN(r) ? Number.isNaN(x) : x === r;
      if (!same && mismatchedInfinity < 0) mismatchedInfinity = n;
      continue;
    }
    const e = (Number.isNaN(x) ? Infinity : Math.abs(x - r)) - 2 * finiteOrZero(allowance?.[n]);
    if (e > err || at < 0) {
      err = e;
      at = n;
    }
  }
  return { err, at, mismatchedInfinity };
}

/** An allowance is only ever a finite size; where poisoned inputs make it NaN or infinite, none is given. */
function finiteOrZero(x: number | undefined): number {
  return x !== undefined && Number.isFinite(x) ? x : 0;
}

export interface JudgeOptions {
  /**
   * The inputs hold NaN or Inf on purpose (the fuzz suite's poisoned values). The naive
   * implementation is then no independent check of cpu-math (its overflow and NaN patterns differ
   * in low precision), so the sanity check is skipped.
   */
  readonly poisoned?: boolean;
  /**
   * NaN is allowed where the reference is a number or an infinity: a tiled kernel multiplies the zero
   * weight (or zero gradient) of a key it computes but the row does not see with that key's
   * non-finite input, where the reference skips the key. Which elements that reaches depends on the
   * tiles, so only this much is required: every NaN of the reference is NaN, and no element is a
   * wrong number or a wrong infinity.
   */
  readonly extraNaN?: boolean;
  /**
   * Only the NaN/Inf pattern is checked, not the error bound: for gradients of calls whose logits
   * reach ~1e4 and beyond (planted huge values), which a backward that recomputes P from the float32
   * logsumexp cannot resolve (an fp32 ulp of the logit there is a large change of P; FlashAttention
   * shares this), while the reference recomputes them in float64.
   */
  readonly patternOnly?: boolean;
  /**
   * Per element (same length as ref), the size of an error the backend may have beyond the naive
   * implementation's, from arithmetic the naive form does not do: for gradients, naive.ts's
   * GradientAllowance (FlashAttention's form of the backward). Element n passes when its error is at
   * most 2 x (naive error + allowance[n]) + slack. NaN or infinite entries count as 0.
   */
  readonly allowance?: Float64Array;
  /** The rule's slack per unit of max(1, max |reference|): the backend's (slackOf); default DEFAULT_SLACK[dtype]. */
  readonly slack?: number;
}

/** Applies the rule to one output (out, logsumexp, dq, ...). */
export function judge(
  what: string,
  dtype: FloatDType,
  got: Float64Array,
  ref: Float64Array,
  naive: Float64Array,
  options: JudgeOptions = {},
): Verdict {
  if (got.length !== ref.length || naive.length !== ref.length) {
    return {
      ok: false,
      message: `${what}: ${got.length} elements from the backend, ${ref.length} in the reference, ${naive.length} from the naive implementation`,
    };
  }
  const checked = options.extraNaN ? got.map((x, n) => (Number.isNaN(x) && !Number.isNaN(ref[n]!) ? ref[n]! : x)) : got;
  const magnitude = Math.max(1, maxFiniteAbs(ref));
  if (options.allowance && options.allowance.length !== ref.length) {
    return {
      ok: false,
      message: `${what}: ${options.allowance.length} allowance elements for ${ref.length} in the reference`,
    };
  }
  // With an allowance, b.err is the worst error less twice its element's allowance.
  const b = maxError(checked, ref, options.allowance);
  const n = maxError(naive, ref);
  const bound = 2 * n.err + (options.slack ?? DEFAULT_SLACK[dtype]) * magnitude;
  const allowed = (i: number) =>
    options.allowance ? ` allowance ${finiteOrZero(options.allowance[i]).toExponential(3)}` : '';
  const show = (i: number) => (i < 0 ? '-' : `[${i}] got ${got[i]} ref ${ref[i]} naive ${naive[i]}${allowed(i)}`);
  const problems: string[] = [];
  const nanAt = checked.findIndex((x, i) => Number.isNaN(x) && !Number.isNaN(ref[i]!));
  if (nanAt >= 0) problems.push(`NaN where the reference is ${ref[nanAt]} at ${show(nanAt)}`);
  if (b.mismatchedInfinity >= 0) {
    const r = ref[b.mismatchedInfinity]!;
    problems.push(`the reference is ${Number.isNaN(r) ? 'NaN' : `infinite (${r})`} at ${show(b.mismatchedInfinity)}`);
  }
  const beyond = options.allowance ? ' (beyond 2 x its allowance)' : '';
  if (!options.patternOnly && !(b.err <= bound))
    problems.push(
      `error${beyond} ${b.err.toExponential(3)} > bound ${bound.toExponential(3)} = 2 x naive ${n.err.toExponential(3)} + slack; worst ${show(b.at)}`,
    );
  if (!options.poisoned && (n.mismatchedInfinity >= 0 || n.err > NAIVE_SANITY[dtype] * magnitude)) {
    problems.push(
      `the naive implementation is ${n.err.toExponential(3)} from cpu-math (allowed ${(NAIVE_SANITY[dtype] * magnitude).toExponential(3)}): ` +
        `one of the two is wrong; worst ${show(n.mismatchedInfinity >= 0 ? n.mismatchedInfinity : n.at)}`,
    );
  }
  const summary = `${what}: error${beyond} ${b.err.toExponential(3)}, naive ${n.err.toExponential(3)}, bound ${bound.toExponential(3)}`;
  return problems.length === 0
    ? { ok: true, message: summary }
    : { ok: false, message: `${what}: ${problems.join('; ')}` };
}
