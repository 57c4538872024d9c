// What sdpaBackward needs from a forward call, kept where the caller cannot reach it: a WeakMap
// from the (frozen) result object to the params, outputs and backend of the call that made it.
// A result the user built, copied or edited is not in the map, so backward never runs on params
// that validation did not produce (a changed seqK or query would give gradients of the wrong shape
// or from the wrong data).
import { AttnInputError } from './errors.js';
import type { SdpaParams } from './params.js';
import type { Tensor } from './tensor.js';

export interface ForwardRecord {
  readonly params: SdpaParams;
  readonly out: Tensor;
  readonly logsumexp: Tensor;
  readonly backend: string;
}

const records = new WeakMap<object, ForwardRecord>();

/** Freezes the result and remembers the call behind it. */
export function recordForward<R extends object>(result: R, record: ForwardRecord): Readonly<R> {
  const frozen = Object.freeze(result);
  records.set(frozen, Object.freeze({ ...record }));
  return frozen;
}

/** The record of a result returned by sdpaForward / sdpaVarlen (or their async forms); else ATTN_FORWARD_RESULT. */
export function forwardRecordOf(fwd: unknown): ForwardRecord {
  const record = typeof fwd === 'object' && fwd !== null ? records.get(fwd) : undefined;
  if (!record) {
    throw new AttnInputError(
      'ATTN_FORWARD_RESULT',
      'sdpaBackward(gradOut, fwd): fwd must be the object returned by sdpaForward or sdpaVarlen (or their async forms), ' +
        'unchanged; a copy or a hand-built result is not accepted. Run the forward again with requiresGrad: true.',
    );
  }
  return record;
}
