// How a sequence of S positions is cut into chunks and dealt to R ranks along dim 2 of [B, H, S, D]
// (and of the logsumexp [B, H, S]).
// - contiguous: R chunks, rank r holds chunk r.
// - zigzag: 2R chunks, rank r holds chunks r and 2R-1-r. Under a causal mask the work of a query
//   chunk grows with its position; pairing an early chunk with a late one gives every rank the same
//   work (Megatron-LM's and ring-flash-attn's load balancing).
// S need not divide: the first S mod n chunks get one position more (sizes differ by at most one,
// some may be empty when S < n). Chunks always partition [0, S) into consecutive ranges, so any two
// are either the same chunk or disjoint: the schedule relies on that.
import { cpError } from './errors.js';

export type LayoutKind = 'contiguous' | 'zigzag';

/** One consecutive range of positions [start, start + length). */
export interface Chunk {
  /** Position of the chunk in sequence order (0 .. chunkCount-1). */
  readonly index: number;
  readonly start: number;
  readonly length: number;
}

export interface ShardLayout {
  readonly kind: LayoutKind;
  readonly seqLen: number;
  readonly ranks: number;
  /** Every chunk, in sequence order. */
  readonly chunks: readonly Chunk[];
  /** The chunks rank r holds, in the order its shard lists them. */
  chunksOf(rank: number): readonly Chunk[];
  /** The number of positions rank r holds. */
  lengthOf(rank: number): number;
}

/** S positions in `parts` consecutive chunks whose sizes differ by at most one (larger first). */
export function splitEven(seqLen: number, parts: number): Chunk[] {
  const base = Math.floor(seqLen / parts);
  const extra = seqLen % parts;
  const chunks: Chunk[] = [];
  let start = 0;
  for (let i = 0; i < parts; i++) {
    const length = base + (i < extra ? 1 : 0);
    chunks.push({ index: i, start, length });
    start += length;
  }
  return chunks;
}

/** Which chunk indices rank r holds, for R ranks. */
function chunkIndices(kind: LayoutKind, rank: number, ranks: number): number[] {
  return kind === 'contiguous' ? [rank] : [rank, 2 * ranks - 1 - rank];
}

export function shardLayout(kind: LayoutKind, seqLen: number, ranks: number): ShardLayout {
  if (kind !== 'contiguous' && kind !== 'zigzag')
    throw cpError('ATTN_CP_LAYOUT', `layout must be 'contiguous' or 'zigzag'; got ${String(kind)}.`);
  if (!Number.isInteger(ranks) || ranks < 1)
    throw cpError('ATTN_CP_LAYOUT', `ranks must be an integer >= 1; got ${ranks}.`);
  if (!Number.isInteger(seqLen) || seqLen < 0)
    throw cpError('ATTN_CP_LAYOUT', `the sequence length must be an integer >= 0; got ${seqLen}.`);
  const chunks = splitEven(seqLen, kind === 'contiguous' ? ranks : 2 * ranks);
  const byRank = Array.from({ length: ranks }, (_, r) => chunkIndices(kind, r, ranks).map((i) => chunks[i]!));
  const checkRank = (rank: number) => {
    if (!Number.isInteger(rank) || rank < 0 || rank >= ranks)
      throw cpError('ATTN_CP_LAYOUT', `rank must be in [0, ${ranks}); got ${rank}.`);
  };
  return Object.freeze({
    kind,
    seqLen,
    ranks,
    chunks,
    chunksOf(rank: number) {
      checkRank(rank);
      return byRank[rank]!;
    },
    lengthOf(rank: number) {
      checkRank(rank);
      return byRank[rank]!.reduce((n, c) => n + c.length, 0);
    },
  });
}
