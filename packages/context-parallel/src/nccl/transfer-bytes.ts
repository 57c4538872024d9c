// Byte counts of one ring transfer: each send is sized by the block this rank sends, each receive by
// the buffer sized from the layout for what rank-1 sends. They differ when shards are uneven; NCCL needs
// every ncclSend to match its peer's ncclRecv exactly, or the transfer never completes.
import { DTYPE_BYTES } from '@attn/core';
import type { DType } from '@attn/core';

/** The parts of a tensor the counts read (a Tensor qualifies). */
export interface Sized {
  readonly numel: number;
  readonly dtype: DType;
}

export function transferBytes(
  sent: readonly Sized[],
  received: readonly Sized[],
): { send: BigUint64Array; recv: BigUint64Array } {
  const bytes = (t: Sized) => BigInt(t.numel * DTYPE_BYTES[t.dtype]);
  return { send: BigUint64Array.from(sent, bytes), recv: BigUint64Array.from(received, bytes) };
}
