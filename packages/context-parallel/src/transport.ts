// The one thing the ring needs from the machinery that connects ranks. A rank sends the blocks in its
// hand to rank+1 and receives what rank-1 sent, on a named channel. Implementations:
// - LoopbackRing (loopback.ts): R ranks in one process, for tests and for the CPU;
// - an NCCL transport (README, "Transport"): ncclSend/ncclRecv grouped on one CUDA stream; NCCL
//   matches sends to receives by the order of calls, so every rank must issue the same sequence of
//   sendRecv calls, which the drivers do (the channel then only names the traffic, it does not match it).
import type { Tensor } from '@attn/core';

/** 'kv': K/V blocks (forward and backward); 'grad': the dK/dV accumulators of the backward. */
export type RingChannel = 'kv' | 'grad';

export interface RingTransport {
  readonly rank: number;
  readonly size: number;
  /**
   * Sends `blocks` to (rank + 1) mod size and resolves with the blocks (rank - 1) mod size sent on the
   * same channel, in call order. What is sent must stay alive, unchanged, until the promise settles
   * (NCCL reads it in place); the receiver owns what it receives. `incoming` gives the shapes of what
   * arrives (uneven shards: rank-1's blocks may be longer or shorter than these), each in the dtype
   * and on the device of the sent block at the same index; a transport sizes its buffers by them.
   * Rejects (never hangs) when the ring is aborted.
   */
  sendRecv(
    channel: RingChannel,
    blocks: readonly Tensor[],
    incoming: readonly (readonly number[])[],
  ): Promise<Tensor[]>;
}
