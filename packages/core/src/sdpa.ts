// The dense entry points: validate, select, run, check what came back.
import type { ForwardOutputs, Gradients } from './backend.js';
import { checkForwardOut, checkForwardOutputs, checkGradients } from './check-outputs.js';
import { deviceToString, sameDevice } from './device-parse.js';
import { AttnInputError } from './errors.js';
import { type ForwardResult, forwardRecordOf, recordForward } from './forward-record.js';
import { deviceCapturing, noteCaptureUse } from './device-registry.js';
import type { SdpaOptions, SdpaParams } from './params.js';
import { getBackend } from './registry.js';
import type { SelectionReport } from './report.js';
import { requireBackend, resolveRestriction, selectBackend } from './select.js';
import { Tensor } from './tensor.js';
import type { NormalizedCall } from './validate-call.js';
import { normalizeCall } from './validate.js';
import { float8BackwardError } from './validate-float8.js';
import { callInputs } from './validate-call.js';

export type { ForwardResult } from './forward-record.js';

/** The frozen result the user sees; the call's params stay in it, out of reach, for sdpaBackward. */
function forwardResult(call: NormalizedCall, backend: string, outputs: ForwardOutputs): ForwardResult {
  const rng = Object.freeze({ seed: call.rng.seed, offset: call.rng.offset });
  return recordForward(call.params, outputs.out, outputs.logsumexp, rng, backend);
}

/** Every tensor a call reads or writes (a given out included), for the capturing runtime. */
function callTensors(p: SdpaParams): Array<Tensor | null | undefined> {
  return [...callInputs(p).map((i) => i.tensor), p.out];
}

/** The backend for a synchronous forward; under capture, tells the runtime which tensors the call uses. */
function backendForSyncForward(call: NormalizedCall) {
  const backend = requireBackend(call.params, resolveRestriction(call.backends), call.cached);
  // Outputs a backend allocates during the capture the runtime sees; the inputs (and a given out) it learns here.
  if (call.params.capturing) noteCaptureUse(call.params.device, callTensors(call.params));
  return backend;
}

/** Selects and runs forward synchronously. Shared with varlen. */
export function runForward(call: NormalizedCall): ForwardResult {
  const backend = backendForSyncForward(call);
  const outputs = backend.forward(call.params);
  checkForwardOutputs(backend.name, call.params, outputs);
  return forwardResult(call, backend.name, outputs);
}

/** Selects now (inside the caller's sdpaKernel scope), then awaits forwardAsync where the backend has it. */
export async function runForwardAsync(call: NormalizedCall): Promise<ForwardResult> {
  const backend = requireBackend(call.params, resolveRestriction(call.backends), call.cached);
  const outputs = backend.forwardAsync ? await backend.forwardAsync(call.params) : backend.forward(call.params);
  checkForwardOutputs(backend.name, call.params, outputs);
  return forwardResult(call, backend.name, outputs);
}

/**
 * Selects and runs forward for the output alone (sdpa's call): the backend's forwardOut where it has one,
 * else forward() with the logsumexp disposed at once. Only out leaves, so nothing can reach the logsumexp:
 * its memory goes back to the allocator now, not when the garbage collector finds it (a loop of sdpa calls
 * otherwise grows the device pool by one block per call until a collection).
 */
export function runForwardOut(call: NormalizedCall): Tensor {
  const backend = backendForSyncForward(call);
  if (backend.forwardOut) {
    const out = backend.forwardOut(call.params);
    checkForwardOut(backend.name, call.params, out);
    return out;
  }
  const outputs = backend.forward(call.params);
  checkForwardOutputs(backend.name, call.params, outputs);
  outputs.logsumexp.dispose();
  return outputs.out;
}

/** Attention output [B, Hq, Sq, Dv]. */
export function sdpa(query: Tensor, key: Tensor, value: Tensor, opts?: SdpaOptions): Tensor {
  return runForwardOut(normalizeCall(query, key, value, opts));
}

/** Output, logsumexp, rng state and the backend that ran: everything sdpaBackward needs. */
export function sdpaForward(query: Tensor, key: Tensor, value: Tensor, opts?: SdpaOptions): ForwardResult {
  return runForward(normalizeCall(query, key, value, opts));
}

/** As sdpaForward, off the event loop where the backend can. Input errors reject the promise. */
export async function sdpaForwardAsync(
  query: Tensor,
  key: Tensor,
  value: Tensor,
  opts?: SdpaOptions,
): Promise<ForwardResult> {
  // `return await`: the inner promise gets its handler now, not one microtask later.
  return await runForwardAsync(normalizeCall(query, key, value, opts));
}

/** The selection report, without running anything. Input errors still throw. */
export function explain(query: Tensor, key: Tensor, value: Tensor, opts?: SdpaOptions): SelectionReport {
  const call = normalizeCall(query, key, value, opts);
  return selectBackend(call.params, resolveRestriction(call.backends), true).report;
}

/**
 * Gradients of the forward result: dq, dk, dv (and dbias with an additive mask), computed by the
 * backend that ran forward. Its inputs and outputs must still be alive.
 */
export function sdpaBackward(gradOut: Tensor, fwd: ForwardResult): Gradients {
  // The params, outputs and backend of the call that made fwd, never fwd's own (editable) fields.
  const { params, out, logsumexp, backend: backendName } = forwardRecordOf(fwd);
  // requiresGrad is refused with float8_e4m3 inputs, but any forward result may reach here.
  if (params.descale) throw float8BackwardError('sdpaBackward');
  if (!Tensor.isTensor(gradOut)) throw new AttnInputError('ATTN_TYPE', 'sdpaBackward: gradOut must be a Tensor.');
  gradOut.assertLive('gradOut');
  for (const [name, t] of [
    ['forward out', out],
    ['forward logsumexp', logsumexp],
    ['query', params.query],
    ['key', params.key],
    ['value', params.value],
  ] as const) {
    t.assertLive(`${name} (needed by sdpaBackward)`);
  }
  const sameShape = gradOut.rank === out.rank && gradOut.shape.every((s, i) => s === out.shape[i]);
  if (!sameShape || gradOut.dtype !== out.dtype || !sameDevice(gradOut.device, out.device)) {
    throw new AttnInputError(
      'ATTN_GRAD_OUT',
      `gradOut must match the forward output: ${out.dtype} [${out.shape.join(', ')}] on ${deviceToString(out.device)}; ` +
        `got ${gradOut.dtype} [${gradOut.shape.join(', ')}] on ${deviceToString(gradOut.device)}.`,
    );
  }
  const backend = getBackend(backendName);
  if (!backend) {
    throw new AttnInputError(
      'ATTN_NO_BACKWARD',
      `Backend '${backendName}', which ran forward, is no longer registered; register it again to run backward.`,
    );
  }
  if (typeof backend.backward !== 'function') {
    throw new AttnInputError(
      'ATTN_NO_BACKWARD',
      `Backend '${backendName}' ran forward but has no backward. Pass requiresGrad: true to sdpaForward so that a backend with backward is chosen.`,
    );
  }
  if (deviceCapturing(gradOut.device))
    noteCaptureUse(gradOut.device, [gradOut, out, logsumexp, ...callTensors(params)]);
  const grads = backend.backward(params, { out, logsumexp }, gradOut);
  checkGradients(backend.name, params, grads);
  return grads;
}
