// Cutting a tensor into the ranks' shards along one dim (2 for [B, H, S, D] and for the logsumexp
// [B, H, S]) and putting the shards back. A rank's shard is the list of its chunks, each a separate
// contiguous tensor: the zigzag pair is never concatenated, since every local attention call runs
// on one query chunk and one key chunk anyway.
import type { Tensor } from '@attn/core';
import { cpError } from './errors.js';
import { hostValues, tensorLike } from './host.js';
import type { ShardLayout } from './layout.js';

export const SEQ_DIM = 2;

/** shards[rank][i]: the i-th chunk rank holds (layout.chunksOf(rank)[i]), as a contiguous copy. */
export function shardTensor(t: Tensor, layout: ShardLayout, dim = SEQ_DIM): Tensor[][] {
  if (t.shape[dim] !== layout.seqLen) {
    throw cpError(
      'ATTN_CP_SHARD',
      `dim ${dim} of [${t.shape.join(', ')}] must be the layout's sequence length ${layout.seqLen}.`,
    );
  }
  return Array.from({ length: layout.ranks }, (_, r) =>
    layout.chunksOf(r).map((c) => {
      const view = t.narrow(dim, c.start, c.length);
      return tensorLike(hostValues(view), view.shape, t);
    }),
  );
}

/** The inverse of shardTensor: one tensor with every chunk back at its positions. */
export function unshardTensor(shards: readonly (readonly Tensor[])[], layout: ShardLayout, dim = SEQ_DIM): Tensor {
  if (shards.length !== layout.ranks)
    throw cpError('ATTN_CP_SHARD', `${shards.length} shards for ${layout.ranks} ranks.`);
  const first = shards[0]?.[0];
  if (!first) throw cpError('ATTN_CP_SHARD', 'unshardTensor needs at least one chunk.');
  const shape = [...first.shape];
  shape[dim] = layout.seqLen;
  const outer = shape.slice(0, dim).reduce((a, b) => a * b, 1);
  const inner = shape.slice(dim + 1).reduce((a, b) => a * b, 1);
  const values = new Float64Array(outer * layout.seqLen * inner);
  shards.forEach((chunks, r) => {
    const want = layout.chunksOf(r);
    if (chunks.length !== want.length)
      throw cpError('ATTN_CP_SHARD', `rank ${r} gave ${chunks.length} chunks; the layout has ${want.length}.`);
    chunks.forEach((t, i) => {
      const c = want[i]!;
      const same = t.rank === shape.length && t.shape.every((n, d) => (d === dim ? n === c.length : n === shape[d]));
      if (!same)
        throw cpError(
          'ATTN_CP_SHARD',
          `rank ${r} chunk ${i} is [${t.shape.join(', ')}]; expected length ${c.length} on dim ${dim} of [${shape.join(', ')}].`,
        );
      const src = hostValues(t);
      for (let o = 0; o < outer; o++) {
        values.set(
          src.subarray(o * c.length * inner, (o + 1) * c.length * inner),
          (o * layout.seqLen + c.start) * inner,
        );
      }
    });
  });
  return tensorLike(values, shape, first);
}
