// One sharded call over an in-process ring: shard the full tensors, run every rank's driver as a
// promise on a LoopbackRing, put the results back together. What the tests compare against the
// unsharded call, and the way to run the algorithm on the CPU.
import type { Tensor } from '@attn/core';
import { ringBackward, type RankGradients } from './backward.js';
import { ringForward, type RankForward } from './forward.js';
import { type LayoutKind, shardLayout } from './layout.js';
import { LoopbackRing, type LoopbackStats } from './loopback.js';
import type { RankShard, RingOptions } from './options.js';
import { shardTensor, unshardTensor } from './shard.js';
import { cpError } from './errors.js';

export interface LoopbackCallOptions extends Omit<RingOptions, 'layout'> {
  readonly ranks: number;
  readonly layout: LayoutKind;
  /** With gradOut [B, Hq, S, Dv], the backward runs too. */
  readonly gradOut?: Tensor;
}

export interface LoopbackResult {
  readonly out: Tensor;
  readonly logsumexp: Tensor;
  readonly grads: { readonly dq: Tensor; readonly dk: Tensor; readonly dv: Tensor } | null;
  readonly stats: LoopbackStats;
}

/** Runs every rank; the first failure aborts the ring so that no rank waits forever. */
async function allRanks<T>(ring: LoopbackRing, run: (rank: number) => Promise<T>): Promise<T[]> {
  const runs = Array.from({ length: ring.size }, (_, r) =>
    run(r).catch((e: unknown) => {
      ring.abort(e);
      throw e;
    }),
  );
  const settled = await Promise.allSettled(runs);
  // The first failure that is not just the abort it caused elsewhere.
  const failed = settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed.length > 0) {
    const root = failed.find((f) => (f.reason as { code?: string }).code !== 'ATTN_CP_TRANSPORT') ?? failed[0]!;
    throw root.reason;
  }
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}

export async function ringAttentionLoopback(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  opts: LoopbackCallOptions,
): Promise<LoopbackResult> {
  if (q.rank !== 4 || k.rank !== 4 || v.rank !== 4 || q.shape[2] !== k.shape[2] || k.shape[2] !== v.shape[2]) {
    throw cpError(
      'ATTN_CP_SHARD',
      `context parallelism shards one sequence: q, k, v must be [B, H, S, D] with one S; got [${q.shape.join(', ')}], [${k.shape.join(', ')}], [${v.shape.join(', ')}].`,
    );
  }
  const { ranks, layout: kind, gradOut, ...rest } = opts;
  const layout = shardLayout(kind, q.shape[2]!, ranks);
  const ringOpts: RingOptions = { ...rest, layout };
  const [qs, ks, vs] = [shardTensor(q, layout), shardTensor(k, layout), shardTensor(v, layout)];
  const shards: RankShard[] = qs.map((qc, r) => ({ q: qc, k: ks[r]!, v: vs[r]! }));
  const dOs = gradOut ? shardTensor(gradOut, layout) : null;
  const ring = new LoopbackRing(ranks);
  const owned: Tensor[] = [...qs.flat(), ...ks.flat(), ...vs.flat(), ...(dOs?.flat() ?? [])];
  try {
    const fwd: RankForward[] = await allRanks(ring, (r) => ringForward(ring.endpoint(r), shards[r]!, ringOpts));
    owned.push(...fwd.flatMap((f) => [...f.out, ...f.logsumexp]));
    const out = unshardTensor(
      fwd.map((f) => f.out),
      layout,
    );
    const logsumexp = unshardTensor(
      fwd.map((f) => f.logsumexp),
      layout,
    );
    let grads: LoopbackResult['grads'] = null;
    if (dOs) {
      const g: RankGradients[] = await allRanks(ring, (r) =>
        ringBackward(ring.endpoint(r), shards[r]!, fwd[r]!, dOs[r]!, ringOpts),
      );
      owned.push(...g.flatMap((x) => [...x.dq, ...x.dk, ...x.dv]));
      grads = {
        dq: unshardTensor(
          g.map((x) => x.dq),
          layout,
        ),
        dk: unshardTensor(
          g.map((x) => x.dk),
          layout,
        ),
        dv: unshardTensor(
          g.map((x) => x.dv),
          layout,
        ),
      };
    }
    return { out, logsumexp, grads, stats: ring.stats };
  } finally {
    for (const t of owned) t.dispose();
  }
}
