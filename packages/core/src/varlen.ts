// The varlen entry points: packed [total, H, D] inputs with int32 cuSeqlens, FlashAttention's layout.
// Backwards goes through sdpaBackward like the dense form.
import type { SdpaParams, VarlenOptions } from './params.js';
import type { SelectionReport } from './report.js';
import { type ForwardResult, runForward, runForwardAsync } from './sdpa.js';
import { resolveRestriction, selectBackend } from './select.js';
import type { Tensor } from './tensor.js';
import { normalizeVarlenCall } from './validate-varlen.js';

/** Output [totalQ, Hq, Dv] and logsumexp [Hq, totalQ], with rng state and the backend that ran. */
export function sdpaVarlen(query: Tensor, key: Tensor, value: Tensor, opts: VarlenOptions): ForwardResult {
  return runForward(normalizeVarlenCall(query, key, value, opts));
}

export async function sdpaVarlenAsync(
  query: Tensor,
  key: Tensor,
  value: Tensor,
  opts: VarlenOptions,
): Promise<ForwardResult> {
  // `return await`: the inner promise gets its handler now, not one microtask later.
  return await runForwardAsync(normalizeVarlenCall(query, key, value, opts));
}

export function explainVarlen(query: Tensor, key: Tensor, value: Tensor, opts: VarlenOptions): SelectionReport {
  const call = normalizeVarlenCall(query, key, value, opts);
  return selectBackend(call.params, resolveRestriction(call.backends), true).report;
}

/** Validates a varlen call and returns what backends receive. Throws AttnInputError. */
export function normalizeVarlenParams(query: Tensor, key: Tensor, value: Tensor, opts: VarlenOptions): SdpaParams {
  return normalizeVarlenCall(query, key, value, opts).params;
}
