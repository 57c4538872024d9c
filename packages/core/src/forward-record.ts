// What sdpaBackward needs from a forward call, kept where the caller cannot reach it: a private field
// of the (frozen) result object holding the params, outputs and backend of the call that made it.
// A result the user built, copied or edited has no such field, so backward never runs on params
// that validation did not produce (a changed seqK or query would give gradients of the wrong shape
// or from the wrong data). A private field, not a WeakMap: the brand check costs nothing and adds
// no ephemeron-table work to each call (a WeakMap entry per forward was a fifth of core's host time).
import { AttnInputError } from './errors.js';
import type { SdpaParams } from './params.js';
import type { Tensor } from './tensor.js';

export interface ForwardResult {
  readonly out: Tensor;
  /** float32 [B, Hq, Sq] (varlen [Hq, totalQ]), natural log; -inf for fully masked rows, NaN for rows with a NaN score. */
  readonly logsumexp: Tensor;
  /** The Philox key and counter offset dropout used (seed 0n when dropout was off and no seed given). */
  readonly rng: { readonly seed: bigint; readonly offset: number };
  /** Name of the backend that ran; sdpaBackward runs on the same one. */
  readonly backend: string;
}

export interface ForwardRecord {
  readonly params: SdpaParams;
  readonly out: Tensor;
  readonly logsumexp: Tensor;
  readonly backend: string;
}

/** The ForwardResult the entry points return: frozen, with its call's record in a private field. */
class RecordedForward implements ForwardResult {
  readonly #record: ForwardRecord;
  readonly out: Tensor;
  readonly logsumexp: Tensor;
  readonly rng: ForwardResult['rng'];
  readonly backend: string;

  constructor(params: SdpaParams, out: Tensor, logsumexp: Tensor, rng: ForwardResult['rng'], backend: string) {
    this.out = out;
    this.logsumexp = logsumexp;
    this.rng = rng;
    this.backend = backend;
    // The record's fields are the constructor's arguments: editing the result cannot reach them.
    this.#record = { params, out, logsumexp, backend };
    Object.freeze(this);
  }

  static recordOf(x: unknown): ForwardRecord | undefined {
    return typeof x === 'object' && x !== null && #record in x ? (x as RecordedForward).#record : undefined;
  }
}

/** A frozen result that remembers the call behind it. */
export function recordForward(
  params: SdpaParams,
  out: Tensor,
  logsumexp: Tensor,
  rng: ForwardResult['rng'],
  backend: string,
): ForwardResult {
  return new RecordedForward(params, out, logsumexp, rng, backend);
}

/** The record of a result returned by sdpaForward / sdpaVarlen (or their async forms); else ATTN_FORWARD_RESULT. */
export function forwardRecordOf(fwd: unknown): ForwardRecord {
  const record = RecordedForward.recordOf(fwd);
  if (!record) {
    throw new AttnInputError(
      'ATTN_FORWARD_RESULT',
      'sdpaBackward(gradOut, fwd): fwd must be the object returned by sdpaForward or sdpaVarlen (or their async forms), ' +
        'unchanged; a copy or a hand-built result is not accepted. Run the forward again with requiresGrad: true.',
    );
  }
  return record;
}
