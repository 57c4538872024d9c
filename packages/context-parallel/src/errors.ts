// The stable codes this package raises (as AttnInputError, core's class for bad input), each
// message saying what to change.
import { AttnInputError } from '@attn/core';

export const CONTEXT_PARALLEL_CODES = [
  'ATTN_CP_LAYOUT', // ranks or sequence length not usable for a layout, or a block the schedule cannot express
  'ATTN_CP_SHARD', // a rank's shard does not match the layout (chunk count, lengths, shapes)
  'ATTN_CP_TRANSPORT', // a transport's rank/size disagree with the layout, or the ring was aborted
] as const;

export type ContextParallelCode = (typeof CONTEXT_PARALLEL_CODES)[number];

export function cpError(code: ContextParallelCode, message: string, cause?: unknown): AttnInputError {
  return new AttnInputError(code, message, cause === undefined ? undefined : { cause });
}
