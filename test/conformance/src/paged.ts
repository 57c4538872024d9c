// Paged K/V for the cases: a block table that scatters each sequence's keys over a shuffled pool
// larger than needed (FlashAttention's block_table layout), with every row no sequence reads set to
// a poison value, so that a kernel reading a wrong block, a row past a sequence's end, or an entry
// past its last block shows in its output.

/** A pool [numBlocks, blockSize, H, C] and the table [B, maxBlocksPerSeq] that addresses it. */
export interface PagedLayout {
  readonly blockSize: number;
  readonly numBlocks: number;
  readonly maxBlocksPerSeq: number;
  /** Row-major [B, maxBlocksPerSeq]; entries past a sequence's last block are garbage, never read. */
  readonly table: Int32Array;
}

/** Blocks each sequence needs: ceil(length / blockSize). */
function blocksOf(lengths: readonly number[], blockSize: number): number[] {
  return lengths.map((n) => Math.ceil(n / blockSize));
}

/** A small deterministic generator (the same stream for the same seed). */
function lcg(seed: bigint): () => number {
  let s = seed & 0xffffffffffffffffn;
  return () => {
    s = (s * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
    return Number(s >> 33n) / 2 ** 31;
  };
}

/**
 * The sequences' blocks in a random order inside a pool with `spare` unused blocks, and one extra
 * table column per row: the entries no sequence reads hold out-of-pool garbage (-1, numBlocks + 7).
 */
export function pagedLayout(lengths: readonly number[], blockSize: number, seed: bigint, spare = 3): PagedLayout {
  const blocks = blocksOf(lengths, blockSize);
  const used = blocks.reduce((a, b) => a + b, 0);
  const numBlocks = used + spare;
  const next = lcg(seed);
  const perm = Array.from({ length: numBlocks }, (_, i) => i);
  for (let i = numBlocks - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [perm[i], perm[j]] = [perm[j]!, perm[i]!];
  }
  const maxBlocksPerSeq = Math.max(1, ...blocks) + 1;
  const table = new Int32Array(lengths.length * maxBlocksPerSeq);
  let taken = 0;
  lengths.forEach((_, b) => {
    for (let i = 0; i < maxBlocksPerSeq; i++) {
      table[b * maxBlocksPerSeq + i] = i < blocks[b]! ? perm[taken++]! : i % 2 === 0 ? -1 : numBlocks + 7;
    }
  });
  return { blockSize, numBlocks, maxBlocksPerSeq, table };
}

/** Element offset of (sequence b, key j, head h, column 0) in a pool of `heads` x `cols`. */
function poolAt(layout: PagedLayout, heads: number, cols: number, b: number, j: number, h: number): number {
  const { blockSize, maxBlocksPerSeq, table } = layout;
  const block = table[b * maxBlocksPerSeq + Math.floor(j / blockSize)]!;
  return ((block * blockSize + (j % blockSize)) * heads + h) * cols;
}

/**
 * Packed rows [total, heads, cols] (sequence b at rows cu[b]..cu[b + 1]) laid out in the pool
 * [numBlocks, blockSize, heads, cols]; every element no sequence reads is `fill`.
 */
export function toPool(
  packed: Float64Array,
  lengths: readonly number[],
  heads: number,
  cols: number,
  layout: PagedLayout,
  fill: number,
): Float64Array {
  const pool = new Float64Array(layout.numBlocks * layout.blockSize * heads * cols).fill(fill);
  let row = 0;
  lengths.forEach((n, b) => {
    for (let j = 0; j < n; j++, row++)
      for (let h = 0; h < heads; h++) {
        const at = poolAt(layout, heads, cols, b, j, h);
        pool.set(packed.subarray((row * heads + h) * cols, (row * heads + h + 1) * cols), at);
      }
  });
  return pool;
}

/** The inverse of toPool: the first lengths[b] keys of each sequence gathered, packed [total, heads, cols]. */
export function fromPool(
  pool: Float64Array,
  lengths: readonly number[],
  heads: number,
  cols: number,
  layout: PagedLayout,
): Float64Array {
  const total = lengths.reduce((a, b) => a + b, 0);
  const packed = new Float64Array(total * heads * cols);
  let row = 0;
  lengths.forEach((n, b) => {
    for (let j = 0; j < n; j++, row++)
      for (let h = 0; h < heads; h++) {
        const at = poolAt(layout, heads, cols, b, j, h);
        packed.set(pool.subarray(at, at + cols), (row * heads + h) * cols);
      }
  });
  return packed;
}
