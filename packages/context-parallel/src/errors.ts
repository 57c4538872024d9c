// The stable codes this package raises, each message saying what to change: AttnInputError (core's
// class for bad input) for all but ATTN_CP_TIMEOUT, a runtime failure (a peer rank), a DeviceError.
import { AttnInputError, DeviceError } from '@attn/core';

export const CONTEXT_PARALLEL_CODES = [
  'ATTN_CP_LAYOUT', // ranks or sequence length not usable for a layout, or a block the schedule cannot express
  'ATTN_CP_SHARD', // a rank's shard does not match the layout (chunk count, lengths, shapes)
  'ATTN_CP_TRANSPORT', // a transport's rank/size disagree with the layout, or the ring was aborted
  'ATTN_CP_TIMEOUT', // a transfer did not complete in time: a peer rank stalled or died; the ring is aborted
] as const;

export type ContextParallelCode = (typeof CONTEXT_PARALLEL_CODES)[number];

export function cpError(code: ContextParallelCode, message: string, cause?: unknown): AttnInputError | DeviceError {
  const options = cause === undefined ? undefined : { cause };
  return code === 'ATTN_CP_TIMEOUT'
    ? new DeviceError(code, message, options)
    : new AttnInputError(code, message, options);
}
