// The ring schedule. At step s (0 .. R-1) rank r holds the K/V block that rank (r - s) mod R started
// with: each step every rank sends the block in hand to r+1 and receives the next from r-1, so after
// R steps every query chunk has met every key chunk once.
//
// Which attention a (query chunk, key chunk) pair needs follows from the positions alone. Causal is
// upper-left over the whole sequence (Sq = Sk): query position i sees key position j iff j <= i.
// - full: every key of the chunk is at or before the chunk's first query;
// - skip: every key is after the chunk's last query (or a chunk is empty);
// - causal: the pair is one chunk against itself, a square block whose visibility is upper-left
//   causal in local coordinates.
// A partly visible pair that is not the diagonal cannot arise from the layouts here (chunks are
// equal or disjoint); it is refused rather than approximated.
import { cpError } from './errors.js';
import type { Chunk, ShardLayout } from './layout.js';

export type BlockKind = 'full' | 'causal' | 'skip';

/** The rank whose K/V block rank `rank` holds at `step`. */
export function ringSource(rank: number, step: number, ranks: number): number {
  return (((rank - step) % ranks) + ranks) % ranks;
}

export function blockKind(q: Chunk, k: Chunk, causal: boolean): BlockKind {
  if (q.length === 0 || k.length === 0) return 'skip';
  if (!causal) return 'full';
  const lastQ = q.start + q.length - 1;
  const lastK = k.start + k.length - 1;
  if (k.start > lastQ) return 'skip';
  if (lastK <= q.start) return 'full';
  if (k.start === q.start && k.length === q.length) return 'causal';
  throw cpError(
    'ATTN_CP_LAYOUT',
    `query positions [${q.start}, ${lastQ + 1}) and key positions [${k.start}, ${lastK + 1}) overlap partly; ` +
      'the schedule runs full, diagonal-causal or skipped blocks only: use a layout whose chunks are equal or disjoint.',
  );
}

/** One local attention call: query chunk qi of the rank against key chunk ki of the block in hand. */
export interface BlockTask {
  /** Index into the rank's own chunks. */
  readonly qi: number;
  /** Index into the chunks of the block in hand (those of `source`). */
  readonly ki: number;
  readonly kind: 'full' | 'causal';
}

export interface RingStep {
  readonly step: number;
  /** The rank whose K/V block is in hand. */
  readonly source: number;
  readonly tasks: readonly BlockTask[];
}

/** What rank `rank` computes at `step`. */
export function stepTasks(layout: ShardLayout, rank: number, step: number, causal: boolean): RingStep {
  const source = ringSource(rank, step, layout.ranks);
  const qs = layout.chunksOf(rank);
  const ks = layout.chunksOf(source);
  const tasks: BlockTask[] = [];
  qs.forEach((q, qi) =>
    ks.forEach((k, ki) => {
      const kind = blockKind(q, k, causal);
      if (kind !== 'skip') tasks.push({ qi, ki, kind });
    }),
  );
  return { step, source, tasks };
}

/** The whole schedule: [rank][step]. */
export function ringSchedule(layout: ShardLayout, causal: boolean): RingStep[][] {
  return Array.from({ length: layout.ranks }, (_, r) =>
    Array.from({ length: layout.ranks }, (_, s) => stepTasks(layout, r, s, causal)),
  );
}

/** Query-key pairs a task covers under the mask (for balance checks: the work of a step). */
export function taskPairs(layout: ShardLayout, rank: number, step: RingStep): number {
  const qs = layout.chunksOf(rank);
  const ks = layout.chunksOf(step.source);
  return step.tasks.reduce((n, t) => {
    const q = qs[t.qi]!.length;
    const k = ks[t.ki]!.length;
    return n + (t.kind === 'full' ? q * k : (q * (q + 1)) / 2);
  }, 0);
}

/**
 * The shapes of what rank receives after step s (the blocks rank ringSource(rank, s + 1) started
 * with, or their accumulators): `own`'s shapes with the sequence dim set to that rank's chunk lengths.
 * Uneven shards make them differ from the sender's own; a transport sizes its receive buffers by them.
 */
export function incomingShapes(
  layout: ShardLayout,
  rank: number,
  step: number,
  own: readonly { readonly shape: readonly number[] }[],
): number[][] {
  const chunks = layout.chunksOf(ringSource(rank, step + 1, layout.ranks));
  const n = chunks.length;
  return own.map((t, i) => {
    const shape = [...t.shape];
    shape[2] = chunks[i % n]!.length;
    return shape;
  });
}
