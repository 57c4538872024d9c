// cpu-math is the reference: it takes every input core accepts, as long as the tensors are on the CPU.
import { tensorsOn } from '@attn/core';
import type { Rule, Tolerances } from '@attn/core';

export const cpuMathRules: readonly Rule[] = [tensorsOn('cpu')];

/**
 * The accuracy this backend claims (Backend.tolerances, read by the conformance suite): the rule's
 * absolute slack per unit of max(1, max |reference|): about one ulp at 1 of each dtype (in float64
 * this is the reference checked against the naive float64 form).
 */
export const CPU_MATH_TOLERANCES: Tolerances = {
  slack: { float64: 1e-12, float32: 1e-6, float16: 1e-3, bfloat16: 8e-3 },
};
