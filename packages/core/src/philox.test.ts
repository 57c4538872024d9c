import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  dropoutKeep,
  dropoutKeepRow,
  dropoutThreshold,
  mulhi32,
  philox4x32,
  philox4x32_10,
  seedKey,
} from './philox.js';

// Random123's examples/kat_vectors (as copied into DEShawResearch/Random123-Boost
// libs/random/test/test_philox.cpp): counter (4 words), key (2 words), expected output.
const KAT: Array<{ rounds: number; ctr: number[]; key: number[]; out: number[] }> = [
  { rounds: 10, ctr: [0, 0, 0, 0], key: [0, 0], out: [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8] },
  {
    rounds: 10,
    ctr: [0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff],
    key: [0xffffffff, 0xffffffff],
    out: [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd],
  },
  {
    rounds: 10,
    ctr: [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
    key: [0xa4093822, 0x299f31d0],
    out: [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
  },
  { rounds: 7, ctr: [0, 0, 0, 0], key: [0, 0], out: [0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48] },
  {
    rounds: 7,
    ctr: [0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff],
    key: [0xffffffff, 0xffffffff],
    out: [0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662],
  },
  {
    rounds: 7,
    ctr: [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
    key: [0xa4093822, 0x299f31d0],
    out: [0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a],
  },
];

describe('Philox4x32', () => {
  it.each(KAT)('matches the Random123 known answer ($rounds rounds, ctr $ctr)', ({ rounds, ctr, key, out }) => {
    const got = rounds === 10 ? philox4x32_10(ctr, key) : philox4x32(ctr, key, rounds);
    expect([...got]).toEqual(out);
  });

  it('computes the high word of 32x32-bit products exactly', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 0xffffffff }), (a, b) => {
        return mulhi32(a, b) === Number((BigInt(a) * BigInt(b)) >> 32n);
      }),
      { numRuns: 5000 },
    );
    expect(mulhi32(0xffffffff, 0xffffffff)).toBe(0xfffffffe);
  });

  it('rejects words outside uint32', () => {
    expect(() => philox4x32_10([0, 0, 0, 2 ** 32], [0, 0])).toThrow(RangeError);
    expect(() => philox4x32_10([0, 0, 0], [0, 0])).toThrow(RangeError);
    expect(() => philox4x32_10([0, 0, 0, 0], [-1, 0])).toThrow(RangeError);
  });
});

describe('the dropout mapping', () => {
  it('splits the seed into [lo32, hi32]', () => {
    expect(seedKey(0x0123456789abcdefn)).toEqual([0x89abcdef, 0x01234567]);
    expect(() => seedKey(1n << 64n)).toThrow(RangeError);
    expect(() => seedKey(-1n)).toThrow(RangeError);
  });

  it('thresholds are floor(p * 2^32), capped at 2^32 - 1', () => {
    expect(dropoutThreshold(0)).toBe(0);
    expect(dropoutThreshold(0.5)).toBe(2 ** 31);
    expect(dropoutThreshold(0.1)).toBe(Math.floor(0.1 * 2 ** 32));
    expect(dropoutThreshold(1 - 2 ** -53)).toBe(2 ** 32 - 1);
    expect(() => dropoutThreshold(1)).toThrow(RangeError);
    expect(() => dropoutThreshold(-0.1)).toThrow(RangeError);
  });

  it('uses counter [j >>> 2, i, b * Hq + h, offset] and word j & 3', () => {
    const seed = 0xdeadbeef_12345678n;
    const [k0, k1] = seedKey(seed);
    const threshold = dropoutThreshold(0.5);
    const [b, h, i, headsQ, offset] = [1, 2, 7, 3, 42];
    for (let j = 0; j < 9; j++) {
      const words = philox4x32_10([j >>> 2, i, b * headsQ + h, offset], [k0, k1]);
      expect(dropoutKeep(seed, offset, b, h, i, j, headsQ, threshold)).toBe(words[j & 3]! >= threshold);
    }
  });

  it('keeps everything at p = 0 and drops about p of the elements', () => {
    const key = seedKey(7n);
    const row = new Uint8Array(4096);
    dropoutKeepRow(row, key, 0, 0, 0, row.length, dropoutThreshold(0));
    expect(row.every((k) => k === 1)).toBe(true);
    dropoutKeepRow(row, key, 0, 0, 0, row.length, dropoutThreshold(0.25));
    const kept = row.reduce((s, k) => s + k, 0) / row.length;
    expect(Math.abs(kept - 0.75)).toBeLessThan(0.03);
  });

  it('rows agree with the element form, including partial groups of four', () => {
    const seed = 123456789n;
    const row = new Uint8Array(11);
    const threshold = dropoutThreshold(0.3);
    dropoutKeepRow(row, seedKey(seed), 5, 2 * 4 + 1, 3, 11, threshold);
    for (let j = 0; j < 11; j++) {
      expect(row[j]).toBe(dropoutKeep(seed, 5, 2, 1, 3, j, 4, threshold) ? 1 : 0);
    }
    expect(() => dropoutKeepRow(new Uint8Array(2), seedKey(seed), 0, 0, 0, 3, threshold)).toThrow(RangeError);
  });

  it('differs across seeds and offsets', () => {
    const a = new Uint8Array(256);
    const b = new Uint8Array(256);
    const c = new Uint8Array(256);
    const t = dropoutThreshold(0.5);
    dropoutKeepRow(a, seedKey(1n), 0, 0, 0, 256, t);
    dropoutKeepRow(b, seedKey(2n), 0, 0, 0, 256, t);
    dropoutKeepRow(c, seedKey(1n), 1, 0, 0, 256, t);
    expect(a).not.toEqual(b);
    expect(a).not.toEqual(c);
  });
});
