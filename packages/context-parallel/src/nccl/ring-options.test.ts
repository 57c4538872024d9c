// NcclRing.create's own checks, which run before the addon or any device is touched: the rank and
// size, and both deadlines (a NaN or negative deadline would never fire, so a wait could hang).
import { expect, it } from 'vitest';
import { FileRendezvous } from '../rendezvous/file.js';
import { NcclRing } from './ring.js';

const rendezvous = new FileRendezvous('/nonexistent-attn-cp-test');

it.each([
  [{ rank: 2, size: 2 }, /rank 2 of 2/],
  [{ rank: 0, size: 0 }, /rank 0 of 0/],
  [{ rank: 0.5, size: 2 }, /rank 0.5 of 2/],
  [{ rank: 0, size: 2, timeoutMs: Number.NaN }, /timeoutMs NaN/],
  [{ rank: 0, size: 2, timeoutMs: -1 }, /timeoutMs -1/],
  [{ rank: 0, size: 2, transferTimeoutMs: 0 }, /transferTimeoutMs 0/],
  [{ rank: 0, size: 2, transferTimeoutMs: Infinity }, /transferTimeoutMs Infinity/],
])('NcclRing.create refuses %j', async (o, message) => {
  await expect(NcclRing.create({ device: 0, rendezvous, ...o })).rejects.toMatchObject({
    code: 'ATTN_CP_TRANSPORT',
    message: expect.stringMatching(message),
  });
});
