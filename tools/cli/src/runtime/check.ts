// Error of a backend's result against 'cpu-math' (the float64 reference) on the same inputs.
import { explain, sdpaBackward, sdpaForward, type ForwardResult, type SdpaOptions, type Tensor } from '@attn/core';
import type { Mode } from '../flops.js';
import type { ProblemSpec } from '../problem.js';
import { sdpaOptions, type ProblemInputs } from './inputs.js';
import { gradOutFor, problemForMode } from './operation.js';

export const REFERENCE_BACKEND = 'cpu-math';
/** Default largest B*Hq*Sq*Sk the reference is asked to compute (it is plain TypeScript). */
export const DEFAULT_CHECK_LIMIT = 1 << 23;

export interface ErrorStats {
  readonly maxAbs: number;
  readonly meanAbs: number;
  /** maxAbs / max |reference|. */
  readonly maxRel: number;
}

export type CheckResult =
  | { readonly status: 'ok'; readonly reference: string; readonly errors: Readonly<Record<string, ErrorStats>> }
  | { readonly status: 'skipped'; readonly reason: string };

export function errorStats(actual: Float64Array | Float32Array, expected: Float64Array | Float32Array): ErrorStats {
  if (actual.length !== expected.length)
    throw new RangeError(`length ${actual.length} vs reference ${expected.length}`);
  let maxAbs = 0;
  let sum = 0;
  let maxRef = 0;
  let nan = false;
  for (let i = 0; i < actual.length; i++) {
    const d = Math.abs(actual[i]! - expected[i]!);
    if (Number.isNaN(d)) nan = true;
    else if (d > maxAbs) maxAbs = d;
    sum += d;
    maxRef = Math.max(maxRef, Math.abs(expected[i]!));
  }
  if (nan) return { maxAbs: Number.NaN, meanAbs: Number.NaN, maxRel: Number.NaN }; // NaN never passes
  const n = Math.max(1, actual.length);
  return { maxAbs, meanAbs: sum / n, maxRel: maxRef > 0 ? maxAbs / maxRef : maxAbs };
}

function toCpu(t: Tensor | null, dtype: 'float64' | null): Tensor | null {
  if (!t) return null;
  const c = t.to('cpu');
  return dtype && t.dtype !== 'bool' ? c.toDType(dtype) : c;
}

interface RefInputs {
  readonly inputs: ProblemInputs;
  readonly opts: SdpaOptions;
}

/** CPU copies in float64 when the reference takes float64, else in the problem's dtype. */
function referenceInputs(p: ProblemSpec, src: ProblemInputs, mode: Mode): RefInputs | string {
  const problem = problemForMode(p, mode);
  for (const dtype of ['float64', null] as const) {
    const inputs: ProblemInputs = {
      query: toCpu(src.query, dtype)!,
      key: toCpu(src.key, dtype)!,
      value: toCpu(src.value, dtype)!,
      attnMask: toCpu(src.attnMask, dtype),
      alibiSlopes: toCpu(src.alibiSlopes, null),
      cuSeqlensQ: null,
      cuSeqlensK: null,
      out: null,
    };
    const opts = sdpaOptions({ ...problem, dtype: inputs.query.dtype as ProblemSpec['dtype'], device: 'cpu' }, inputs, [
      REFERENCE_BACKEND,
    ]);
    const report = explain(inputs.query, inputs.key, inputs.value, opts);
    if (report.selected === REFERENCE_BACKEND) return { inputs, opts };
    if (dtype === null) {
      const why = report.candidates.find((c) => c.backend === REFERENCE_BACKEND);
      const reasons = why
        ? [why.unavailableReason, ...why.reasons.map((r) => r.message)].filter(Boolean).join('; ')
        : 'it is not registered';
      return `${REFERENCE_BACKEND} declines this problem: ${reasons}`;
    }
  }
  return `${REFERENCE_BACKEND} declines this problem`;
}

/**
 * Compares `result` (and, for backward modes, `grads`) with cpu-math on the same inputs and the same
 * dropout seed. Skips with a reason when the problem is too large or the backend is the reference.
 */
export function checkAgainstReference(
  p: ProblemSpec,
  mode: Mode,
  src: ProblemInputs,
  ran: { backend: string; result: ForwardResult; grads: { dq: Tensor; dk: Tensor; dv: Tensor } | null },
  limit: number,
): CheckResult {
  const size = p.batch * p.headsQ * p.seqQ * p.seqK;
  if (ran.backend === REFERENCE_BACKEND && p.dtype === 'float64') {
    return { status: 'skipped', reason: `${REFERENCE_BACKEND} ran in float64: it is the reference` };
  }
  if (size > limit) {
    return {
      status: 'skipped',
      reason: `B*H*Sq*Sk = ${size} is above the check limit ${limit} (raise it with --check-limit)`,
    };
  }
  const ref = referenceInputs(p, src, mode);
  if (typeof ref === 'string') return { status: 'skipped', reason: ref };
  const { inputs, opts } = ref;
  const fwd = sdpaForward(inputs.query, inputs.key, inputs.value, opts);
  const errors: Record<string, ErrorStats> = {
    out: errorStats(ran.result.out.toFloat64Array(), fwd.out.toFloat64Array()),
  };
  if (mode !== 'fwd' && ran.grads) {
    const onDevice = gradOutFor(problemForMode(p, mode), 0);
    const gradOut = toCpu(onDevice, inputs.query.dtype === 'float64' ? 'float64' : null)!;
    if (gradOut !== onDevice) onDevice.dispose();
    const g = sdpaBackward(gradOut, fwd);
    errors.dq = errorStats(ran.grads.dq.toFloat64Array(), g.dq.toFloat64Array());
    errors.dk = errorStats(ran.grads.dk.toFloat64Array(), g.dk.toFloat64Array());
    errors.dv = errorStats(ran.grads.dv.toFloat64Array(), g.dv.toFloat64Array());
  }
  const reference = `${REFERENCE_BACKEND} (${inputs.query.dtype})`;
  return { status: 'ok', reference, errors };
}
