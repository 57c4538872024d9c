// sdpaBackwardFrom: the backward of a dense call with the forward's out and logsumexp given by the
// caller instead of recorded by sdpaForward. The gradients are FlashAttention's with those tensors:
// P = exp(scores - logsumexp), delta = rowsum(gradOut * out). With the call's own forward outputs
// that is sdpaBackward; with the merged out and lse of a longer row (a ring step of context
// parallelism, split-KV) it is the block's exact share of the full row's gradient, in one call.
// Only backends declaring `backwardFrom` run it (their backward reads P and delta that way); the
// selection is sdpa's (priority or restriction order, availability, every rule) plus the form's own
// rules, and a refusal lists every candidate with its reasons.
import type { Backend, ForwardOutputs, Gradients, Reason, RuleContext } from './backend.js';
import { checkGradients } from './check-outputs.js';
import { deviceCapturing, noteCaptureUse } from './device-registry.js';
import { deviceToString, sameDevice } from './device-parse.js';
import type { DType } from './dtype.js';
import { AttnInputError } from './errors.js';
import type { SdpaOptions, SdpaParams } from './params.js';
import { NoBackendError } from './report.js';
import { checkRules, failingRules, resolveRestriction, selectBackend } from './select.js';
import { Tensor } from './tensor.js';
import { callInputs } from './validate-call.js';
import { normalizeCall } from './validate.js';
import { float8BackwardError } from './validate-float8.js';

/** The forward's outputs as the caller hands them: out [B, Hq, Sq, Dv], logsumexp float32 [B, Hq, Sq]. */
export interface SavedForward {
  readonly out: Tensor;
  readonly logsumexp: Tensor;
}

const NO_FORM: Reason = {
  rule: 'backwardFrom',
  message: 'has no backward from a caller’s out and logsumexp; use sdpaForward + sdpaBackward, or another backend.',
};

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function checkSavedTensor(
  what: string,
  t: unknown,
  shape: readonly number[],
  dtype: DType,
  p: SdpaParams,
  code: 'ATTN_SAVED' | 'ATTN_GRAD_OUT',
): Tensor {
  if (!Tensor.isTensor(t)) throw new AttnInputError('ATTN_TYPE', `sdpaBackwardFrom: ${what} must be a Tensor.`);
  t.assertLive(what);
  if (!sameShape(t.shape, shape) || t.dtype !== dtype || !sameDevice(t.device, p.device)) {
    throw new AttnInputError(
      code,
      `sdpaBackwardFrom: ${what} must be ${dtype} [${shape.join(', ')}] on ${deviceToString(p.device)} (the call's); ` +
        `got ${t.dtype} [${t.shape.join(', ')}] on ${deviceToString(t.device)}.`,
    );
  }
  return t;
}

/** A candidate's failing checks for this form: the backend's rules and the form's, or that it has no such form. */
function backwardFromReasons(backend: Backend, p: SdpaParams, ctx: RuleContext): Reason[] {
  if (!backend.backwardFrom) return [NO_FORM];
  return [...failingRules(backend, p, ctx), ...checkRules(backend.backwardFrom.rules ?? [], p, ctx)];
}

/** The first candidate that runs the form (sdpa's selection with the form's checks), or NoBackendError. */
function selectBackwardFrom(p: SdpaParams, callBackends: readonly string[] | null): Backend {
  const { backend, report } = selectBackend(p, resolveRestriction(callBackends), false, backwardFromReasons);
  if (backend) return backend;
  throw new NoBackendError({ ...report, call: `${report.call}, backward from a given out and logsumexp` });
}

/**
 * Gradients dq, dk, dv (and dbias with an additive mask) of the dense call (query, key, value, opts)
 * with the forward's out and logsumexp taken from `saved` (see the header). `opts` are sdpaForward's
 * for the same call (mask, causal, scale, dropout with its seed and offset, ...); requiresGrad is
 * implied. Precision: the given logsumexp is float32, so float64 calls get float32-accurate gradients.
 */
export function sdpaBackwardFrom(
  query: Tensor,
  key: Tensor,
  value: Tensor,
  saved: SavedForward,
  gradOut: Tensor,
  opts?: SdpaOptions,
): Gradients {
  // Named before validation, whose requiresGrad refusal would speak of an option the caller did not pass.
  if (Tensor.isTensor(query) && query.dtype === 'float8_e4m3') throw float8BackwardError('sdpaBackwardFrom');
  const options =
    typeof opts === 'object' && opts !== null ? { ...opts, requiresGrad: true } : (opts ?? { requiresGrad: true });
  const call = normalizeCall(query, key, value, options);
  const p = call.params;
  if (typeof saved !== 'object' || saved === null) {
    throw new AttnInputError('ATTN_TYPE', 'sdpaBackwardFrom: saved must be { out, logsumexp } (Tensors).');
  }
  const outShape = [p.batch, p.headsQ, p.seqQ, p.headDimV];
  const out = checkSavedTensor('saved.out', saved.out, outShape, p.dtype, p, 'ATTN_SAVED');
  const lse = checkSavedTensor('saved.logsumexp', saved.logsumexp, outShape.slice(0, 3), 'float32', p, 'ATTN_SAVED');
  const g = checkSavedTensor('gradOut', gradOut, outShape, p.dtype, p, 'ATTN_GRAD_OUT');
  const backend = selectBackwardFrom(p, call.backends);
  const fwd: ForwardOutputs = { out, logsumexp: lse };
  if (deviceCapturing(p.device)) noteCaptureUse(p.device, [g, out, lse, ...callInputs(p).map((i) => i.tensor)]);
  const grads = backend.backwardFrom!.run(p, fwd, g);
  checkGradients(backend.name, p, grads);
  return grads;
}
