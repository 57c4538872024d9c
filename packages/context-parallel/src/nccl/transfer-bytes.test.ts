import { describe, expect, it } from 'vitest';
import { shardLayout } from '../layout.js';
import { incomingShapes } from '../schedule.js';
import { transferBytes } from './transfer-bytes.js';

const numel = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

describe('transferBytes', () => {
  it('sizes sends by the blocks sent and receives by the blocks announced, which differ for uneven shards', () => {
    // S 1001 over 2 ranks, zigzag: the chunks rank 0 holds and the ones rank 1 holds differ in length.
    const layout = shardLayout('zigzag', 1001, 2);
    for (let rank = 0; rank < 2; rank++) {
      const own = layout.chunksOf(rank).map((c) => ({ shape: [1, 2, c.length, 64], dtype: 'bfloat16' as const }));
      const sent = own.map((t) => ({ numel: numel(t.shape), dtype: t.dtype }));
      const incoming = incomingShapes(layout, rank, 0, own).map((s) => ({
        numel: numel(s),
        dtype: 'bfloat16' as const,
      }));
      const { send, recv } = transferBytes(sent, incoming);
      expect([...send]).toEqual(sent.map((t) => BigInt(t.numel * 2)));
      expect([...recv]).toEqual(incoming.map((t) => BigInt(t.numel * 2)));
      // What this rank sends is what rank+1 receives from it.
      const peer = 1 - rank;
      const peerOwn = layout.chunksOf(peer).map((c) => ({ shape: [1, 2, c.length, 64] }));
      const peerIncoming = incomingShapes(layout, peer, 0, peerOwn);
      expect([...send]).toEqual(peerIncoming.map((s) => BigInt(numel(s) * 2)));
    }
    // The bug this guards against: one count array for both sides.
    const l = shardLayout('zigzag', 1001, 2);
    expect(l.chunksOf(0).map((c) => c.length)).not.toEqual(l.chunksOf(1).map((c) => c.length));
  });
});
