// Allocating a call's outputs. A failed allocation deep in a backend used to say only
// "Cannot allocate 137438953408 float32 elements": the user could not tell which tensor, or
// which size of their call to shrink. Backends allocate outputs through here instead of empty().
import { DTYPE_BYTES } from './dtype.js';
import { AttnError, AttnInputError, OutOfMemoryError } from './errors.js';
import { empty, emptyUnwritten, type TensorOptions } from './factory.js';
import type { SdpaParams } from './params.js';
import type { Tensor } from './tensor.js';

/** Which output of which call, and what to shrink, for the allocation error. */
export interface OutputName {
  /** e.g. 'the attention output (out)'. */
  readonly what: string;
  /** e.g. 'split the queries (Sq) or the batch into chunks'. */
  readonly shrink: string;
}

function formatBytes(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 ? v : v.toFixed(1)} ${units[u]}`;
}

/**
 * How much of an output the backend's kernel writes: 'whole' (every element, whatever the inputs: host storage
 * then skips its zero fill, see emptyUnwritten) or 'partial' (zero-filled on the host, as empty()).
 */
export type OutputWrite = 'whole' | 'partial';

/** empty(shape, opts), with an allocation failure (ATTN_SIZE, ATTN_OUT_OF_MEMORY) naming the tensor and the fix. */
export function emptyOutput(
  name: OutputName,
  shape: readonly number[],
  opts: TensorOptions,
  write: OutputWrite = 'partial',
): Tensor {
  try {
    return write === 'whole' ? emptyUnwritten(shape, opts) : empty(shape, opts);
  } catch (e) {
    if (!(e instanceof AttnError) || (e.code !== 'ATTN_SIZE' && e.code !== 'ATTN_OUT_OF_MEMORY')) throw e;
    const dtype = opts.dtype ?? 'float32';
    const bytes = shape.reduce((a, s) => a * s, 1) * DTYPE_BYTES[dtype];
    const message = `Cannot allocate ${name.what}, ${dtype} [${shape.join(', ')}] (${formatBytes(bytes)}): ${e.message} To fit, ${name.shrink}.`;
    if (e.code === 'ATTN_OUT_OF_MEMORY') {
      // By code, not class: the device package may hold another copy of core.
      const requested = (e as Partial<OutOfMemoryError>).requestedBytes ?? bytes;
      throw Object.assign(new OutOfMemoryError(message, requested), { cause: e });
    }
    throw new AttnInputError('ATTN_SIZE', message, { cause: e });
  }
}

/**
 * The attention output of a forward call: the user's out (params.out, validated by core: this shape,
 * dtype and device, contiguous) when the call gave one, else a fresh tensor as emptyOutput makes. A
 * backend that cannot write into a given out copies its result into it, or declines the call by a rule.
 */
export function forwardOutput(
  p: SdpaParams,
  shape: readonly number[],
  opts: TensorOptions,
  write: OutputWrite = 'partial',
): Tensor {
  const given = p.out;
  if (!given) return emptyOutput(OUTPUT_NAMES.out, shape, opts, write);
  if (given.rank !== shape.length || given.shape.some((s, i) => s !== shape[i])) {
    throw new AttnError(
      'ATTN_BACKEND_OUTPUT',
      `A backend asked for an out of [${shape.join(', ')}] but the call's out is [${given.shape.join(', ')}]; this is a bug in that backend.`,
    );
  }
  return given;
}

const CHUNK_FORWARD = 'run the call in chunks of queries (Sq), heads or batch and concatenate the outputs';
const CHUNK_BACKWARD = 'run forward and backward in chunks of batch or heads';

/** The outputs every backend allocates, by their field names in ForwardOutputs and Gradients. */
export const OUTPUT_NAMES = Object.freeze({
  out: { what: 'the attention output (out)', shrink: CHUNK_FORWARD },
  logsumexp: { what: 'the logsumexp', shrink: CHUNK_FORWARD },
  dq: { what: 'the query gradient (dq)', shrink: CHUNK_BACKWARD },
  dk: { what: 'the key gradient (dk)', shrink: CHUNK_BACKWARD },
  dv: { what: 'the value gradient (dv)', shrink: CHUNK_BACKWARD },
  dbias: {
    what: 'the mask gradient (dbias)',
    shrink: 'give the mask size-1 (broadcast) dims where it can, or ' + CHUNK_BACKWARD,
  },
} satisfies Record<string, OutputName>);
