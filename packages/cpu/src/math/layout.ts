// Where the rows of one (sequence, head) live in a tensor, for every layout the backend receives:
// dense [B, H, S, D] (any strides), varlen packed [total, H, D] with cumulative offsets, and paged
// block pools [numBlocks, blockSize, H, D] addressed through a block table.
import { hostIndexCopies, kvHostCopies, type PagedKvParams, type SdpaParams, type Tensor } from '@attn/core';

/**
 * Row r of head h of sequence b starts at element row(b, h, r); column c adds c * colStride. One
 * function for every layout: dense and packed rows are affine in r, paged rows are not (they jump
 * from block to block), and the callers never need to know which.
 */
export interface RowAddressing {
  row(b: number, h: number, r: number): number;
  readonly colStride: number;
}

/**
 * The sequences of a call: how many, and the query and key length of each. With sequsedK the key
 * length of sequence b is sequsedK[b]: its keys stay where they are (startK), only the first that
 * many are read, so a call behaves exactly as one on the truncated key and value.
 */
export interface Sequences {
  readonly count: number;
  seqQ(b: number): number;
  seqK(b: number): number;
  /** First packed row of sequence b (0 for dense, where each sequence has its own batch index). */
  startQ(b: number): number;
  startK(b: number): number;
}

export function sequencesOf(params: SdpaParams): Sequences {
  const kv = params.kvCache;
  if (kv) {
    // KV cache: row b attends to keyCount[b] keys; the addressing starts them at keyStart[b].
    const { keyCount } = kvHostCopies(kv);
    return {
      count: params.batch,
      seqQ: () => params.seqQ,
      seqK: (b) => keyCount[b]!,
      startQ: () => 0,
      startK: () => 0,
    };
  }
  const v = params.varlen;
  const { seqlensQ, seqlensK, sequsedK: used } = hostIndexCopies(params);
  if (!v) {
    return {
      count: params.batch,
      seqQ: () => params.seqQ,
      seqK: used ? (b) => used[b]! : () => params.seqK,
      startQ: () => 0,
      startK: () => 0,
    };
  }
  const cuQ = seqlensQ!;
  const cuK = seqlensK!;
  return {
    count: cuQ.length - 1,
    seqQ: (b) => cuQ[b + 1]! - cuQ[b]!,
    seqK: used ? (b) => used[b]! : (b) => cuK[b + 1]! - cuK[b]!,
    startQ: (b) => cuQ[b]!,
    startK: (b) => cuK[b]!,
  };
}

/**
 * Addressing of a dense [B, H, S, D] tensor or a packed [total, H, D] one whose sequence b starts at
 * packed row start(b).
 */
export function rowsOf(t: Tensor, start: ((b: number) => number) | null): RowAddressing {
  const s = t.strides;
  const offset = t.offset;
  if (start === null) {
    if (t.rank !== 4)
      throw new RangeError(`cpu-math: expected a rank-4 [B, H, S, D] tensor, got shape [${t.shape.join(', ')}]`);
    const [sb, sh, ss, sd] = s as [number, number, number, number];
    return { row: (b, h, r) => offset + b * sb + h * sh + r * ss, colStride: sd };
  }
  if (t.rank !== 3)
    throw new RangeError(`cpu-math: expected a packed rank-3 [total, H, D] tensor, got shape [${t.shape.join(', ')}]`);
  const [st, sh, sd] = s as [number, number, number];
  return { row: (b, h, r) => offset + (start(b) + r) * st + h * sh, colStride: sd };
}

/** Blocks of a pool: key position pos of sequence b is in block table[b * tableStride + floor(pos / blockSize)]. */
export interface PoolPages {
  readonly table: Int32Array;
  readonly tableStride: number;
  readonly blockSize: number;
}

/**
 * Addressing of a block pool [numBlocks, blockSize, H, D]: row r of sequence b is key position
 * r + start[b] (start null: r) of its blocks (validation put every block a sequence reads in the pool).
 */
export function pagedRowsOf(t: Tensor, pages: PoolPages, start: Int32Array | null): RowAddressing {
  if (t.rank !== 4)
    throw new RangeError(
      `cpu-math: expected a block pool [numBlocks, blockSize, H, D], got shape [${t.shape.join(', ')}]`,
    );
  const [sn, sr, sh, sd] = t.strides as [number, number, number, number];
  const offset = t.offset;
  const { table, blockSize, tableStride } = pages;
  return {
    row: (b, h, r) => {
      const pos = start ? r + start[b]! : r;
      const block = table[b * tableStride + Math.floor(pos / blockSize)]!;
      return offset + block * sn + (pos % blockSize) * sr + h * sh;
    },
    colStride: sd,
  };
}

/** The pages of a varlen call's paged K/V (its host copy of the block table). */
export function varlenPages(params: SdpaParams, paged: PagedKvParams): PoolPages {
  return { table: hostIndexCopies(params).blockTable!, tableStride: paged.maxBlocksPerSeq, blockSize: paged.blockSize };
}
