// blockTable: paged K/V for sdpaVarlen (FlashAttention's block_table). Key and value are pools of
// fixed-size blocks [numBlocks, blockSize, Hk, D]; row b of the table lists the blocks of sequence b
// in order.
import { AttnInputError } from './errors.js';
import type { PagedKvParams } from './params.js';
import type { Device } from './device.js';
import type { Tensor } from './tensor.js';
import { checkSameDevice, checkTensorArg, shapeStr } from './validate-tensors.js';

export function blockTableError(message: string): AttnInputError {
  return new AttnInputError('ATTN_BLOCK_TABLE', message);
}

/**
 * Checks the paged pools' shapes: key [numBlocks, blockSize, Hk, D] and value [numBlocks,
 * blockSize, Hk, Dv], the same pool geometry. Returns it.
 */
export function pagedPoolShape(k: Tensor, v: Tensor): { numBlocks: number; blockSize: number } {
  if (k.rank !== 4 || v.rank !== 4) {
    throw new AttnInputError(
      'ATTN_RANK',
      `With blockTable, key and value are block pools [numBlocks, blockSize, heads, headDim]; got key ${shapeStr(k)}, value ${shapeStr(v)}.`,
    );
  }
  const [nk, bk] = k.shape as [number, number];
  const [nv, bv] = v.shape as [number, number];
  if (nk !== nv || bk !== bv) {
    throw blockTableError(
      `key and value pools must have the same [numBlocks, blockSize]; got [${nk}, ${bk}] and [${nv}, ${bv}].`,
    );
  }
  if (bk < 1) throw blockTableError('The block size (dim 1 of key and value) must be at least 1; got 0.');
  return { numBlocks: nk, blockSize: bk };
}

/**
 * int32 [batch, maxBlocksPerSeq], contiguous, on the call's device; every block a sequence reads
 * (its first ceil(keys(b) / blockSize)) indexes the pool. Returns the params with a host copy of the
 * table (reading a device tensor synchronizes, as cuSeqlens does). `keys` null: the values stay on the
 * device (graph capture, or indexValuesOnDevice), so the entries are not read (table null) and the
 * kernels clamp each one.
 */
export function checkBlockTable(
  value: unknown,
  batch: number,
  keys: ((b: number) => number) | null,
  pool: { numBlocks: number; blockSize: number },
  device: Device,
): PagedKvParams {
  const t = checkTensorArg(value, 'blockTable');
  if (t.dtype !== 'int32' || t.rank !== 2 || t.shape[0] !== batch) {
    throw blockTableError(
      `blockTable must be an int32 tensor of shape [${batch}, maxBlocksPerSeq] (one row of block indices per sequence); got ${t.dtype} ${shapeStr(t)}.`,
    );
  }
  if (!t.isContiguous())
    throw blockTableError('blockTable must be contiguous (kernels read it as a plain array); call .contiguous().');
  checkSameDevice(t, 'blockTable', device);
  const { numBlocks, blockSize } = pool;
  const maxBlocksPerSeq = t.shape[1]!;
  if (keys === null) return Object.freeze({ blockTable: t, blockSize, numBlocks, maxBlocksPerSeq, table: null });
  const table = Int32Array.from(t.toFloat64Array());
  for (let b = 0; b < batch; b++) {
    const n = keys(b);
    const needed = Math.ceil(n / blockSize);
    if (needed > maxBlocksPerSeq) {
      throw blockTableError(
        `Sequence ${b} has ${n} keys, ${needed} blocks of ${blockSize}, but blockTable has ${maxBlocksPerSeq} columns; widen the table or shorten cuSeqlensK.`,
      );
    }
    for (let i = 0; i < needed; i++) {
      const block = table[b * maxBlocksPerSeq + i]!;
      if (block < 0 || block >= numBlocks) {
        throw blockTableError(
          `blockTable[${b}, ${i}] = ${block} is outside the pool's ${numBlocks} blocks [0, ${numBlocks}); sequence ${b} reads it.`,
        );
      }
    }
  }
  return Object.freeze({ blockTable: t, blockSize, numBlocks, maxBlocksPerSeq, table });
}
