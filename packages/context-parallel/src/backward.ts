// The ring backward of one rank. Each query chunk keeps its dQ; each K/V block travels with its dK/dV
// accumulators. Step s: post the K/V send (it does not depend on this step's work), queue this rank's
// block gradients (block.ts: one sdpaBackwardFrom with the merged out and lse of the forward), and
// only then wait for the accumulators of the block in hand (sent by rank-1 after its step s-1), add
// the step's parts into them and send them on to rank+1. Waiting after the compute is queued lets
// that transfer run beside it; waiting before would leave every hop but the first exposed. After
// the last step one more hop brings every block's accumulators home: R hops of dK/dV in all.
//
// The hop home is the one transfer that no later step can hide. So when the rank's own block has two
// or more tasks (zigzag, or a non-causal layout with several chunks), the later half of them is held
// back from step 0 and queued after the last step's send, while the accumulators travel home; their
// dK/dV parts are added at home. Step 0's K/V send still overlaps the earlier half.
//
// Accumulators are the RingMath's (float64 on the host, float32 on the device), rounded once to the
// inputs' dtype. Without held-back tasks the rounding happens before the hop home: the block's sum is
// complete there, so rounding on either side gives the same bits, and that exposed transfer carries
// half (float32 -> bf16/fp16) the bytes. With them, the hop home carries the accumulation dtype (it is
// hidden under those tasks) and the sum is rounded at home after their parts are added.
import type { Tensor } from '@attn/core';
import { blockBackward, type RowState } from './block.js';
import { disposeReceived, type RankForward } from './forward.js';
import { hostMath } from './math.js';
import { checkShard, type RankShard, type RingOptions } from './options.js';
import { incomingShapes, stepTasks, type BlockTask } from './schedule.js';
import { tracedWait } from './trace.js';
import type { RingTransport } from './transport.js';
import { cpError } from './errors.js';

export interface RankGradients {
  readonly dq: Tensor[];
  readonly dk: Tensor[];
  readonly dv: Tensor[];
}

function rowStates(shard: RankShard, fwd: RankForward, gradOut: readonly Tensor[]): RowState[] {
  return shard.q.map((_q, i) => {
    const out = fwd.out[i]!;
    const g = gradOut[i];
    if (!g || g.rank !== out.rank || !g.shape.every((n, d) => n === out.shape[d])) {
      throw cpError(
        'ATTN_CP_SHARD',
        `gradOut chunk ${i} must match the forward's out chunk [${out.shape.join(', ')}]; got ${g ? `[${g.shape.join(', ')}]` : 'none'}.`,
      );
    }
    return { out, lse: fwd.logsumexp[i]!, gradOut: g };
  });
}

interface Part {
  readonly ki: number;
  readonly dk: Tensor;
  readonly dv: Tensor;
}

function disposeParts(parts: readonly Part[]): void {
  for (const p of parts) for (const g of [p.dk, p.dv]) g.dispose();
}

export async function ringBackward(
  transport: RingTransport,
  shard: RankShard,
  fwd: RankForward,
  gradOut: readonly Tensor[],
  opts: RingOptions,
): Promise<RankGradients> {
  const local = checkShard(transport, shard, opts);
  const { layout } = opts;
  const math = opts.math ?? hostMath;
  const causal = opts.isCausal ?? false;
  const rows = rowStates(shard, fwd, gradOut);
  const own = [...shard.k, ...shard.v];
  const nk = shard.k.length;
  const dqAcc = shard.q.map((q) => math.gradZeros(q));
  const ownTasks = stepTasks(layout, transport.rank, 0, causal).tasks;
  const heldBack = layout.ranks > 1 ? ownTasks.slice(Math.ceil(ownTasks.length / 2)) : [];
  // Queues the tasks' backward on the block `kv`; dQ is added here, the dK/dV parts are returned.
  const queue = (tasks: readonly BlockTask[], kv: readonly Tensor[]): Part[] => {
    const parts: Part[] = [];
    try {
      for (const t of tasks) {
        const b = blockBackward(shard.q[t.qi]!, kv[t.ki]!, kv[nk + t.ki]!, t.kind === 'causal', rows[t.qi]!, local);
        parts.push({ ki: t.ki, dk: b.dk, dv: b.dv });
        try {
          dqAcc[t.qi] = math.addGrad(dqAcc[t.qi]!, b.dq);
        } finally {
          b.dq.dispose();
        }
      }
    } catch (e) {
      disposeParts(parts);
      throw e;
    }
    return parts;
  };
  const addParts = (grads: Tensor[], parts: readonly Part[]): void => {
    for (const p of parts) {
      grads[p.ki] = math.addGrad(grads[p.ki]!, p.dk);
      grads[nk + p.ki] = math.addGrad(grads[nk + p.ki]!, p.dv);
    }
  };
  let kv: Tensor[] = own;
  // The accumulators of the block in hand: [dk chunks..., dv chunks...].
  let grads: Tensor[] = own.map((t) => math.gradZeros(t));
  let pendingGrads: Promise<Tensor[]> | null = null;
  for (let s = 0; s < layout.ranks; s++) {
    const incoming = incomingShapes(layout, transport.rank, s, own);
    const nextKv = s < layout.ranks - 1 ? transport.sendRecv('kv', kv, incoming) : null;
    try {
      const tasks =
        s === 0
          ? ownTasks.slice(0, ownTasks.length - heldBack.length)
          : stepTasks(layout, transport.rank, s, causal).tasks;
      // This step's dK/dV parts, kept until the block's accumulators arrive (same adds, same order).
      const parts = queue(tasks, kv);
      try {
        if (pendingGrads) grads = await tracedWait(opts.trace, 'grad', s, pendingGrads);
        addParts(grads, parts);
      } finally {
        disposeParts(parts);
      }
      const last = s === layout.ranks - 1;
      // Without held-back tasks the hop home carries the finished gradients in the inputs' dtype (see the top).
      const sent = last && heldBack.length === 0 ? grads.map((g, i) => math.finishGrad(g, kv[i]!)) : grads;
      if (sent !== grads) for (const g of grads) g.dispose();
      // What is sent stays alive until its sendRecv settles (the transport's contract).
      pendingGrads = transport.sendRecv('grad', sent, incoming).finally(() => {
        for (const t of sent) t.dispose();
      });
    } catch (e) {
      nextKv?.catch(() => undefined);
      pendingGrads?.catch(() => undefined);
      throw e;
    }
    const held = kv;
    if (nextKv) kv = await tracedWait(opts.trace, 'kv', s, nextKv);
    disposeReceived(held, own); // at the last step, the last block received
  }
  let home: Tensor[];
  if (heldBack.length === 0) {
    home = await tracedWait(opts.trace, 'grad', layout.ranks, pendingGrads!);
  } else {
    let parts: Part[] = [];
    try {
      parts = queue(heldBack, own);
      const acc = await tracedWait(opts.trace, 'grad', layout.ranks, pendingGrads!);
      addParts(acc, parts);
      home = acc.map((g, i) => math.finishGrad(g, own[i]!));
      for (const g of acc) g.dispose();
    } catch (e) {
      pendingGrads!.catch(() => undefined);
      throw e;
    } finally {
      disposeParts(parts);
    }
  }
  const result: RankGradients = {
    dq: shard.q.map((q, i) => math.finishGrad(dqAcc[i]!, q)),
    dk: home.slice(0, nk),
    dv: home.slice(nk),
  };
  for (const t of dqAcc) t.dispose();
  return result;
}
