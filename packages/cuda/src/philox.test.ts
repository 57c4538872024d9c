// attn/philox.h (the C++ twin kernels include) against core's TypeScript Philox, bit for bit: its
// host path wherever the addon is built, its device path on a GPU.
import { dropoutKeep, dropoutThreshold, philox4x32_10, philox4x32Into, seedKey } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { announceSkip, gpu } from '../test/gpu.js';
import { makeRng } from '../test/random.js';
import { cuda } from './cuda-runtime.js';
import { dropoutWordsOnDevice, philoxOnDevice, philoxOnHostNative } from './testing.js';

const addonLoaded = cuda.native.state().load.ok;
if (!addonLoaded) {
  const s = cuda.native.state().load;
  console.log(`[@attn/cuda] host Philox suite skipped: ${s.ok ? '' : s.reason}`);
}
announceSkip('device Philox');

// Random123's known answers for Philox4x32-10 (counter x4, key x2 -> output x4).
const KNOWN_ANSWERS: readonly (readonly number[])[] = [
  [0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8],
  [
    0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e, 0xa20bc7c6,
    0x6d5451fd,
  ],
  [
    0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb, 0x5001e420,
    0x24126ea1,
  ],
];

/** n items of 6 words: the known-answer inputs, edge words, then random words. */
function philoxInputs(n: number, seed?: number): { inputs: Uint32Array; rngSeed: number } {
  const rng = makeRng(seed);
  const edges = [0, 1, 2, 3, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff];
  const inputs = new Uint32Array(6 * n);
  KNOWN_ANSWERS.forEach((kat, t) => inputs.set(kat.slice(0, 6), 6 * t));
  for (let t = KNOWN_ANSWERS.length; t < n; t++) {
    for (let w = 0; w < 6; w++) inputs[6 * t + w] = t % 3 === 0 ? edges[rng.int(edges.length)]! : rng.u32();
  }
  return { inputs, rngSeed: rng.seed };
}

function expectMatchesTs(inputs: Uint32Array, out: Uint32Array, rngSeed: number): void {
  const n = inputs.length / 6;
  expect(out.length).toBe(4 * n);
  for (let t = 0; t < n; t++) {
    const p = inputs.subarray(6 * t, 6 * t + 6);
    const want = philox4x32_10(p.subarray(0, 4), p.subarray(4, 6));
    const got = out.subarray(4 * t, 4 * t + 4);
    if (!want.every((w, k) => got[k] === w)) {
      expect.fail(
        `item ${t} (inputs ${[...p].map((x) => x.toString(16))}, rng seed ${rngSeed}): got ${[...got].map((x) => x.toString(16))}, TS gives ${[...want].map((x) => x.toString(16))}`,
      );
    }
  }
  for (let t = 0; t < KNOWN_ANSWERS.length; t++)
    expect([...out.subarray(4 * t, 4 * t + 4)]).toEqual(KNOWN_ANSWERS[t]!.slice(6));
}

describe.skipIf(!addonLoaded)('attn/philox.h, host path', () => {
  it("equals core's philox4x32_10 on known answers, edge words and random words", () => {
    const { inputs, rngSeed } = philoxInputs(4096);
    expectMatchesTs(inputs, philoxOnHostNative(inputs), rngSeed);
  });
});

describe.skipIf(!gpu)('attn/philox.h, device path', () => {
  it("equals core's philox4x32_10 on known answers, edge words and random words", () => {
    const { inputs, rngSeed } = philoxInputs(1 << 16);
    expectMatchesTs(inputs, philoxOnDevice(inputs), rngSeed);
  });

  it("drops exactly the elements core's dropoutKeep drops (the one counter mapping)", () => {
    const rng = makeRng();
    const cases = [
      { seed: 0n, offset: 0, B: 1, H: 1, Sq: 4, Sk: 4, p: 0.5 },
      { seed: 0x1234_5678_9abc_def0n, offset: 7, B: 2, H: 3, Sq: 5, Sk: 13, p: 0.3 },
      { seed: (1n << 64n) - 1n, offset: 0xffffffff, B: 1, H: 2, Sq: 3, Sk: 33, p: 0.9 },
      { seed: (BigInt(rng.u32()) << 32n) | BigInt(rng.u32()), offset: rng.u32(), B: 3, H: 4, Sq: 17, Sk: 70, p: 0.1 },
    ];
    for (const c of cases) {
      const threshold = dropoutThreshold(c.p);
      const { words, keep } = dropoutWordsOnDevice({
        seed: c.seed,
        offset: c.offset,
        bhCount: c.B * c.H,
        seqQ: c.Sq,
        seqK: c.Sk,
        threshold,
      });
      const [k0, k1] = seedKey(c.seed);
      const w4 = new Uint32Array(4);
      let mismatches = 0;
      let kept = 0;
      for (let b = 0; b < c.B; b++) {
        for (let h = 0; h < c.H; h++) {
          for (let i = 0; i < c.Sq; i++) {
            for (let j = 0; j < c.Sk; j++) {
              const idx = ((b * c.H + h) * c.Sq + i) * c.Sk + j;
              philox4x32Into(w4, j >>> 2, i, b * c.H + h, c.offset, k0, k1);
              const tsKeep = dropoutKeep(c.seed, c.offset, b, h, i, j, c.H, threshold);
              if (words[idx] !== w4[j & 3] || keep[idx] !== (tsKeep ? 1 : 0)) mismatches++;
              kept += tsKeep ? 1 : 0;
            }
          }
        }
      }
      expect(mismatches, `case ${JSON.stringify({ ...c, seed: c.seed.toString() })}`).toBe(0);
      // Sanity on the mapping's statistics, loose enough never to flake at these sizes.
      const n = c.B * c.H * c.Sq * c.Sk;
      if (n >= 1000) expect(Math.abs(kept / n - (1 - c.p))).toBeLessThan(0.05);
    }
  });
});
