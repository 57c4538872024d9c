// The options of a ring call and their checks against a rank's shard.
import type { Tensor } from '@attn/core';
import { cpError } from './errors.js';
import type { ShardLayout } from './layout.js';
import type { RingMath } from './math.js';
import type { RingTrace } from './trace.js';
import type { RingTransport } from './transport.js';

export interface RingOptions {
  /** How the sequence is dealt to the ranks; q and k/v share it (self-attention over one sequence). */
  readonly layout: ShardLayout;
  /** Upper-left causal over the whole sequence (PyTorch's is_causal). Default false. */
  readonly isCausal?: boolean;
  /** Default 1/sqrt(D), D the query's head dim. */
  readonly scale?: number;
  /** Hq a multiple of Hk (grouped-query attention). Default false. */
  readonly enableGqa?: boolean;
  /** Restricts the local calls to these backends (core's `backends` option). */
  readonly backends?: readonly string[];
  /** Where the merge and the gradient accumulation run (math.ts). Default hostMath. */
  readonly math?: RingMath;
  /** Marks where the driver waits on the transport (trace.ts), for profilers. Default none. */
  readonly trace?: RingTrace;
}

/** A rank's inputs: its chunks of q [B, Hq, *, D], k [B, Hk, *, D], v [B, Hk, *, Dv], in layout order. */
export interface RankShard {
  readonly q: readonly Tensor[];
  readonly k: readonly Tensor[];
  readonly v: readonly Tensor[];
}

/** What every local call gets (the scale resolved once, so every block uses the same). */
export interface LocalCallOptions {
  readonly scale: number;
  readonly enableGqa: boolean;
  readonly backends: readonly string[] | undefined;
}

export function checkShard(transport: RingTransport, shard: RankShard, opts: RingOptions): LocalCallOptions {
  const { layout } = opts;
  if (transport.size !== layout.ranks) {
    throw cpError(
      'ATTN_CP_TRANSPORT',
      `the transport has ${transport.size} ranks and the layout ${layout.ranks}; build both for the same ring.`,
    );
  }
  const chunks = layout.chunksOf(transport.rank);
  for (const [name, list] of [
    ['q', shard.q],
    ['k', shard.k],
    ['v', shard.v],
  ] as const) {
    if (list.length !== chunks.length) {
      throw cpError(
        'ATTN_CP_SHARD',
        `rank ${transport.rank}: ${name} has ${list.length} chunks; the ${layout.kind} layout gives it ${chunks.length}.`,
      );
    }
    list.forEach((t, i) => {
      if (t.rank !== 4 || t.shape[2] !== chunks[i]!.length) {
        throw cpError(
          'ATTN_CP_SHARD',
          `rank ${transport.rank}: ${name} chunk ${i} is [${t.shape.join(', ')}]; expected [B, H, ${chunks[i]!.length}, D].`,
        );
      }
    });
  }
  const d = shard.q[0]!.shape[3]!;
  const scale = opts.scale ?? 1 / Math.sqrt(d);
  return { scale, enableGqa: opts.enableGqa ?? false, backends: opts.backends };
}
