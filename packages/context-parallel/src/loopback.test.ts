import '@attn/cpu';
import { randn, tensor } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { shardLayout } from './layout.js';
import { LoopbackRing } from './loopback.js';
import { ringAttentionLoopback } from './loopback-run.js';
import { ringForward } from './forward.js';

const t = (x: number) => tensor([x], [1], { dtype: 'float64' });
const ONE = [[1]];

describe('LoopbackRing', () => {
  it('delivers copies from rank-1, in call order per channel', async () => {
    const ring = new LoopbackRing(3);
    const sent = [0, 1, 2].map((r) => t(r));
    const got = await Promise.all([0, 1, 2].map((r) => ring.endpoint(r).sendRecv('kv', [sent[r]!], ONE)));
    expect(got.map((g) => g[0]!.toFloat64Array()[0])).toEqual([2, 0, 1]);
    got.forEach((g, r) => expect(g[0]).not.toBe(sent[(r + 2) % 3]));
    // Two calls in a row on one channel, and one on another, are matched in order.
    const e = [0, 1].map((r) => ring.endpoint(r));
    const a1 = e[0]!.sendRecv('grad', [t(10)], ONE);
    const a2 = e[0]!.sendRecv('grad', [t(11)], ONE);
    const b1 = e[1]!.sendRecv('grad', [t(20)], ONE);
    const b2 = e[1]!.sendRecv('grad', [t(21)], ONE);
    expect((await b1)[0]!.toFloat64Array()[0]).toBe(10);
    expect((await b2)[0]!.toFloat64Array()[0]).toBe(11);
    void a1.catch(() => undefined);
    void a2.catch(() => undefined);
    expect(ring.stats.messages).toEqual({ kv: 3, grad: 4 });
    expect(ring.stats.bytes.kv).toBe(24);
  });

  it('a delivery whose shapes are not the announced ones rejects with ATTN_CP_TRANSPORT', async () => {
    const ring = new LoopbackRing(2);
    const a = ring.endpoint(0).sendRecv('kv', [t(1)], [[2]]);
    const b = ring.endpoint(1).sendRecv('kv', [t(2)], ONE);
    await expect(a).rejects.toMatchObject({ code: 'ATTN_CP_TRANSPORT' });
    expect((await b)[0]!.toFloat64Array()[0]).toBe(1);
  });

  it('abort rejects pending and later receives with ATTN_CP_TRANSPORT', async () => {
    const ring = new LoopbackRing(2);
    const pending = ring.endpoint(0).sendRecv('kv', [t(1)], ONE);
    ring.abort(new Error('rank 1 failed'));
    await expect(pending).rejects.toMatchObject({ code: 'ATTN_CP_TRANSPORT' });
    await expect(ring.endpoint(1).sendRecv('kv', [t(1)], ONE)).rejects.toMatchObject({ code: 'ATTN_CP_TRANSPORT' });
  });
});

describe('ring drivers: bad input', () => {
  const [q, k, v] = [
    randn([1, 2, 8, 4], { seed: 1n }),
    randn([1, 2, 8, 4], { seed: 2n }),
    randn([1, 2, 8, 4], { seed: 3n }),
  ];

  it('a failing local call rejects every rank with its error and leaves none hanging', async () => {
    await expect(
      ringAttentionLoopback(q, k, v, { ranks: 2, layout: 'zigzag', backends: ['no-such-backend'] }),
    ).rejects.toMatchObject({
      code: 'ATTN_UNKNOWN_BACKEND',
    });
  });

  it("a transport whose size is not the layout's is refused", async () => {
    const ring = new LoopbackRing(3);
    await expect(
      ringForward(ring.endpoint(0), { q: [q], k: [k], v: [v] }, { layout: shardLayout('contiguous', 8, 2) }),
    ).rejects.toMatchObject({
      code: 'ATTN_CP_TRANSPORT',
    });
  });

  it('a shard that does not match the layout is refused', async () => {
    const ring = new LoopbackRing(2);
    await expect(
      ringForward(ring.endpoint(0), { q: [q], k: [k], v: [v] }, { layout: shardLayout('zigzag', 8, 2) }),
    ).rejects.toMatchObject({
      code: 'ATTN_CP_SHARD',
    });
  });

  it('q and k/v over different sequence lengths are refused', async () => {
    await expect(
      ringAttentionLoopback(q, randn([1, 2, 9, 4]), randn([1, 2, 9, 4]), { ranks: 2, layout: 'zigzag' }),
    ).rejects.toMatchObject({
      code: 'ATTN_CP_SHARD',
    });
  });
});
