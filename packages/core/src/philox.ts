// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) and the one
// element-to-counter mapping that every backend's dropout uses. Bit-identical to the C++ twin in
// packages/native/include/attn/philox.h.
//
// THE MAPPING (the only place it is defined; kernels implement exactly this):
//   key     = [lo32(seed), hi32(seed)]
//   counter = [j >>> 2, i, b * Hq + h, offset]
//   word    = output word (j & 3)
//   (b, h, i, j) index the [B, Hq, Sq, Sk] score matrix, h the query head. Varlen: b = sequence,
//   i and j positions inside that sequence.
//   The element is dropped when word < threshold, threshold = min(2^32 - 1, floor(p * 2^32));
//   kept probabilities are multiplied by 1 / (1 - p).
//
// 32-bit math without BigInt: Math.imul gives the low word, mulhi32 the high word via 16-bit halves.

const M0 = 0xd2511f53;
const M1 = 0xcd9e8d57;
const W0 = 0x9e3779b9;
const W1 = 0xbb67ae85;
const UINT32_MAX = 0xffffffff;

/** High 32 bits of the 64-bit product of two uint32 values. */
export function mulhi32(a: number, b: number): number {
  const aLo = a & 0xffff;
  const aHi = a >>> 16;
  const bLo = b & 0xffff;
  const bHi = b >>> 16;
  const lohi = aLo * bHi;
  const hilo = aHi * bLo;
  // Carries out of the low 32 bits: every term below is < 2^18, so nothing is lost in doubles.
  const mid = ((aLo * bLo) >>> 16) + (lohi & 0xffff) + (hilo & 0xffff);
  return (aHi * bHi + (lohi >>> 16) + (hilo >>> 16) + (mid >>> 16)) >>> 0;
}

/**
 * Philox4x32 with `rounds` rounds into `out` (4 words). The hot path of dropout: no allocation.
 * All inputs are uint32 (numbers in [0, 2^32)).
 */
export function philox4x32Into(
  out: Uint32Array,
  c0: number,
  c1: number,
  c2: number,
  c3: number,
  k0: number,
  k1: number,
  rounds = 10,
): Uint32Array {
  let x = c0 >>> 0;
  let y = c1 >>> 0;
  let z = c2 >>> 0;
  let w = c3 >>> 0;
  let ka = k0 >>> 0;
  let kb = k1 >>> 0;
  for (let r = 0; r < rounds; r++) {
    const hi0 = mulhi32(M0, x);
    const lo0 = Math.imul(M0, x) >>> 0;
    const hi1 = mulhi32(M1, z);
    const lo1 = Math.imul(M1, z) >>> 0;
    x = (hi1 ^ y ^ ka) >>> 0;
    y = lo1;
    z = (hi0 ^ w ^ kb) >>> 0;
    w = lo0;
    ka = (ka + W0) >>> 0;
    kb = (kb + W1) >>> 0;
  }
  out[0] = x;
  out[1] = y;
  out[2] = z;
  out[3] = w;
  return out;
}

function checkUint32(what: string, v: number): void {
  if (!Number.isInteger(v) || v < 0 || v > UINT32_MAX) {
    throw new RangeError(`${what} must be an integer in [0, 2^32), got ${v}.`);
  }
}

/** Philox4x32-10 of a 4-word counter and a 2-word key; returns the 4 output words. */
export function philox4x32_10(counter: ArrayLike<number>, key: ArrayLike<number>): Uint32Array {
  return philox4x32(counter, key, 10);
}

/** Philox4x32 with a chosen number of rounds (7 and 10 have published known answers). */
export function philox4x32(counter: ArrayLike<number>, key: ArrayLike<number>, rounds: number): Uint32Array {
  if (counter.length !== 4 || key.length !== 2) {
    throw new RangeError(
      `philox4x32 takes a 4-word counter and a 2-word key, got ${counter.length} and ${key.length}.`,
    );
  }
  for (let i = 0; i < 4; i++) checkUint32(`counter[${i}]`, counter[i]!);
  for (let i = 0; i < 2; i++) checkUint32(`key[${i}]`, key[i]!);
  if (!Number.isInteger(rounds) || rounds < 0)
    throw new RangeError(`rounds must be a non-negative integer, got ${rounds}.`);
  return philox4x32Into(
    new Uint32Array(4),
    counter[0]!,
    counter[1]!,
    counter[2]!,
    counter[3]!,
    key[0]!,
    key[1]!,
    rounds,
  );
}

/** Splits a 64-bit seed into the Philox key [lo32, hi32]. */
export function seedKey(seed: bigint): readonly [number, number] {
  if (seed < 0n || seed >= 1n << 64n) throw new RangeError(`seed must be in [0, 2^64), got ${seed}.`);
  return [Number(seed & 0xffffffffn), Number(seed >> 32n)];
}

/** The uint32 threshold for dropout probability p in [0, 1): drop when word < threshold. */
export function dropoutThreshold(p: number): number {
  if (!(p >= 0 && p < 1)) throw new RangeError(`dropout probability must be in [0, 1), got ${p}.`);
  // p * 2^32 is exact in a double (a power-of-two scale), so floor is the true floor.
  return Math.min(UINT32_MAX, Math.floor(p * 2 ** 32));
}

/** True when element (b, h, i, j) of the [B, Hq, Sq, Sk] score matrix is kept. Convenience form. */
export function dropoutKeep(
  seed: bigint,
  offset: number,
  b: number,
  h: number,
  i: number,
  j: number,
  headsQ: number,
  threshold: number,
): boolean {
  const [k0, k1] = seedKey(seed);
  const words = philox4x32Into(new Uint32Array(4), j >>> 2, i, b * headsQ + h, offset, k0, k1);
  return words[j & 3]! >= threshold;
}

/**
 * Keep flags of one score row (b, h, i): keep[j] = 1 when key j is kept, for j in [0, seqK).
 * One Philox call per four keys, which is how kernels use it too. `bh` = b * Hq + h.
 */
export function dropoutKeepRow(
  keep: Uint8Array,
  key: readonly [number, number],
  offset: number,
  bh: number,
  i: number,
  seqK: number,
  threshold: number,
): Uint8Array {
  if (keep.length < seqK) throw new RangeError(`keep holds ${keep.length} flags, row has ${seqK} keys.`);
  const words = new Uint32Array(4);
  for (let j4 = 0; j4 < seqK; j4 += 4) {
    philox4x32Into(words, j4 >>> 2, i, bh, offset, key[0], key[1]);
    const n = Math.min(4, seqK - j4);
    for (let w = 0; w < n; w++) keep[j4 + w] = words[w]! >= threshold ? 1 : 0;
  }
  return keep;
}
