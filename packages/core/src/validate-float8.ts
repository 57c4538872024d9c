// float8_e4m3 attention inputs (FlashAttention-3's fp8 forward): per-tensor descale factors, a bfloat16
// output, dense inference only. What the fp8 forward cannot take is an input error here, before selection:
// no backend could run it, so a report of declining backends would only hide the reason.
import { describeValue } from './describe-value.js';
import type { FloatDType, QkvDType } from './dtype.js';
import { AttnInputError } from './errors.js';
import type { Descale, MaskParams } from './params.js';

/** The output dtype of float8_e4m3 inputs (FlashAttention-3's fp8 forward writes bf16). */
export const FLOAT8_OUTPUT_DTYPE: FloatDType = 'bfloat16';

/** The dtype of the call's output: the inputs' own, bfloat16 for float8_e4m3 ones. */
export function outputDType(inputs: QkvDType): FloatDType {
  return inputs === 'float8_e4m3' ? FLOAT8_OUTPUT_DTYPE : inputs;
}

function factor(d: Record<string, unknown>, key: 'q' | 'k' | 'v'): number {
  const x = d[key];
  if (typeof x !== 'number' || !Number.isFinite(x) || x <= 0) {
    throw new AttnInputError(
      'ATTN_DESCALE',
      `descale.${key} must be a finite number > 0 (the factor that dequantizes ${key}), got ${describeValue(x)}.`,
    );
  }
  return x;
}

/**
 * The descale option against the inputs' dtype: required (q, k, v finite and > 0) for float8_e4m3 inputs,
 * absent for the others. Runs on every call, cached signatures included: the factors are values (a
 * per-step amax scale changes each call), not part of the signature.
 */
export function checkDescale(value: unknown, inputs: QkvDType): Readonly<Descale> | null {
  const given = value !== undefined && value !== null;
  if (inputs !== 'float8_e4m3') {
    if (!given) return null;
    throw new AttnInputError(
      'ATTN_DESCALE',
      `descale applies to float8_e4m3 inputs only; query, key and value are ${inputs}. Leave descale out, or pass float8_e4m3 tensors.`,
    );
  }
  if (!given) {
    throw new AttnInputError(
      'ATTN_DESCALE',
      'float8_e4m3 query, key and value need descale: { q, k, v }, the factors that dequantize them (the call attends descale.q * q, descale.k * k, descale.v * v); pass { q: 1, k: 1, v: 1 } for values stored unscaled.',
    );
  }
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new AttnInputError('ATTN_DESCALE', `descale must be an object { q, k, v }, got ${describeValue(value)}.`);
  }
  const d = value as Record<string, unknown>;
  const unknown = Object.keys(d).filter((key) => key !== 'q' && key !== 'k' && key !== 'v');
  if (unknown.length > 0) {
    throw new AttnInputError('ATTN_DESCALE', `descale has keys q, k and v only; got ${unknown.join(', ')}.`);
  }
  return Object.freeze({ q: factor(d, 'q'), k: factor(d, 'k'), v: factor(d, 'v') });
}

const NO_BACKWARD =
  'the float8_e4m3 forward has no backward (FlashAttention-3 trains in bfloat16): for training, pass bfloat16 query, key and value';

/** requiresGrad with float8_e4m3 inputs: the fp8 forward is inference only. */
export function checkFloat8Grad(inputs: QkvDType, requiresGrad: boolean): void {
  if (inputs === 'float8_e4m3' && requiresGrad) {
    throw new AttnInputError(
      'ATTN_FLOAT8',
      `requiresGrad cannot be true with float8_e4m3 inputs: ${NO_BACKWARD}, or leave requiresGrad unset.`,
    );
  }
}

/** sdpaBackward of a float8_e4m3 forward (its params carry descale), or sdpaBackwardFrom on float8_e4m3 inputs. */
export function float8BackwardError(entry: 'sdpaBackward' | 'sdpaBackwardFrom'): AttnInputError {
  return new AttnInputError('ATTN_FLOAT8', `${entry}: ${NO_BACKWARD}.`);
}

/** The mask of a float8_e4m3 call: a bool keep-mask only (an additive bias has no place among fp8 scores). */
export function checkFloat8Mask(inputs: QkvDType, mask: MaskParams | null): void {
  if (inputs !== 'float8_e4m3' || mask === null || mask.kind === 'bool') return;
  throw new AttnInputError(
    'ATTN_MASK_DTYPE',
    `With float8_e4m3 inputs attnMask must be bool (true = attend); got a ${mask.tensor.dtype} additive mask. ` +
      "Turn it into a keep-mask (e.g. mask.toDType('bool') of where it is 0), or dequantize the inputs to bfloat16 to add a bias.",
  );
}

/** Entry points without a float8_e4m3 forward (for now: sdpaVarlen, sdpaKvCache) refuse such inputs. */
export function refuseFloat8(inputs: QkvDType, entry: string): void {
  if (inputs !== 'float8_e4m3') return;
  throw new AttnInputError(
    'ATTN_FLOAT8',
    `${entry} does not take float8_e4m3 inputs: the fp8 forward is dense only (sdpa, sdpaForward, sdpaForwardAsync, explain, with descale). ` +
      "Call sdpa on [B, H, S, D] tensors, or dequantize to bfloat16 (q.toDType('bfloat16') times its descale).",
  );
}
