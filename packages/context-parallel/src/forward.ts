// The ring forward of one rank. Step s: post the send of the K/V block in hand to rank+1 (and the
// receive of the next from rank-1), then run the local calls on the block in hand while the transfer
// runs, merging each partial into the query chunk's running (out, lse) through the RingMath. On a GPU
// the transfer and the local kernels run on different streams; on the loopback ring the "transfer"
// is a copy.
import type { Tensor } from '@attn/core';
import { blockForward } from './block.js';
import { hostValues } from './host.js';
import { hostMath } from './math.js';
import { checkShard, type RankShard, type RingOptions } from './options.js';
import { incomingShapes, stepTasks } from './schedule.js';
import { tracedWait } from './trace.js';
import type { RingTransport } from './transport.js';

/** A rank's part of the result: per own chunk, out [B, Hq, n, Dv] and logsumexp float32 [B, Hq, n]. */
export interface RankForward {
  readonly out: Tensor[];
  readonly logsumexp: Tensor[];
}

/** Frees received blocks (never the rank's own inputs). */
export function disposeReceived(blocks: readonly Tensor[], own: readonly Tensor[]): void {
  for (const t of blocks) if (!own.includes(t)) t.dispose();
}

export async function ringForward(transport: RingTransport, shard: RankShard, opts: RingOptions): Promise<RankForward> {
  const local = checkShard(transport, shard, opts);
  const { layout } = opts;
  const math = opts.math ?? hostMath;
  const causal = opts.isCausal ?? false;
  const own = [...shard.k, ...shard.v];
  const nk = shard.k.length;
  const dv = shard.v[0]!.shape[3]!;
  const acc = shard.q.map((q) => math.outAccumulator(q, dv));
  let kv: Tensor[] = own;
  for (let s = 0; s < layout.ranks; s++) {
    const next =
      s < layout.ranks - 1 ? transport.sendRecv('kv', kv, incomingShapes(layout, transport.rank, s, own)) : null;
    try {
      for (const t of stepTasks(layout, transport.rank, s, causal).tasks) {
        const part = blockForward(shard.q[t.qi]!, kv[t.ki]!, kv[nk + t.ki]!, t.kind === 'causal', local);
        try {
          acc[t.qi]!.merge(part.out, part.logsumexp);
        } finally {
          part.out.dispose();
          part.logsumexp.dispose();
        }
      }
    } catch (e) {
      // The posted receive must not reject unobserved when this step's compute fails.
      next?.catch(() => undefined);
      throw e;
    }
    const held = kv;
    if (next) kv = await tracedWait(opts.trace, 'kv', s, next);
    disposeReceived(held, own); // at the last step, the last block received
  }
  const done = acc.map((a) => a.finish());
  return { out: done.map((d) => d.out), logsumexp: done.map((d) => d.lse) };
}

/** Host copies of a rank's forward (for tests and for the backward's row state). */
export function forwardValues(f: RankForward): { out: Float64Array[]; lse: Float64Array[] } {
  return { out: f.out.map(hostValues), lse: f.logsumexp.map(hostValues) };
}
