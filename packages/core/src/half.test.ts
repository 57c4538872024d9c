import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  bfloat16ArrayToFloat32,
  bfloat16BitsToFloat32,
  float16ArrayToFloat32,
  float16BitsToFloat32,
  float32ArrayToBfloat16,
  float32ArrayToFloat16,
  float32ToBfloat16Bits,
  float32ToFloat16Bits,
} from './half.js';

const isF16NaN = (b: number): boolean => (b & 0x7c00) === 0x7c00 && (b & 0x3ff) !== 0;
const isBf16NaN = (b: number): boolean => (b & 0x7f80) === 0x7f80 && (b & 0x7f) !== 0;

/**
 * Independent check of round-to-nearest-even: the chosen bits are no farther from x than either
 * neighbour, and on a tie the chosen mantissa is even. Works from decoded values only.
 */
function isNearestEven(x: number, bits: number, decode: (b: number) => number, maxFinite: number): boolean {
  const v = decode(bits);
  if (Math.abs(x) > maxFinite) {
    // Beyond the largest finite value: either the largest finite (when closer) or Inf.
    if (Math.abs(v) === Infinity) return true;
  }
  const mag = bits & 0x7fff;
  const sign = bits & 0x8000;
  const neighbours = [mag - 1, mag + 1].filter((m) => m >= 0).map((m) => decode(sign | m));
  const d = Math.abs(v - x);
  for (const n of neighbours) {
    const dn = Math.abs(n - x);
    if (dn < d) return false;
    if (dn === d && (bits & 1) === 1) return false;
  }
  return true;
}

describe('float16', () => {
  it.each([
    [1, 0x3c00],
    [-2, 0xc000],
    [65504, 0x7bff],
    [2 ** -24, 0x0001],
    [2 ** -14, 0x0400],
    [2 ** -14 - 2 ** -24, 0x03ff],
    [0, 0x0000],
    [-0, 0x8000],
    [Infinity, 0x7c00],
    [-Infinity, 0xfc00],
    [0.333251953125, 0x3555],
  ])('encodes %d as %s', (x, bits) => {
    expect(float32ToFloat16Bits(x)).toBe(bits);
  });

  it('rounds ties to even', () => {
    expect(float32ToFloat16Bits(1 + 2 ** -11)).toBe(0x3c00); // halfway to 0x3c01: even is 0x3c00
    expect(float32ToFloat16Bits(1 + 3 * 2 ** -11)).toBe(0x3c02); // halfway between 0x3c01 and 0x3c02
    expect(float32ToFloat16Bits(2 ** -25)).toBe(0x0000); // half the smallest subnormal ties to 0
    expect(float32ToFloat16Bits(3 * 2 ** -25)).toBe(0x0002); // subnormal tie rounds to even
    expect(float32ToFloat16Bits(2 ** -25 * (1 + 2 ** -20))).toBe(0x0001); // just above half: up
  });

  it('overflows to Inf exactly at the rounding boundary', () => {
    expect(float32ToFloat16Bits(65519)).toBe(0x7bff);
    expect(float32ToFloat16Bits(65519.99609375)).toBe(0x7bff);
    expect(float32ToFloat16Bits(65520)).toBe(0x7c00); // tie between 65504 and 2^16: even is Inf
    expect(float32ToFloat16Bits(-1e6)).toBe(0xfc00);
    expect(float32ToFloat16Bits(2 ** -14 - 2 ** -25)).toBe(0x0400); // subnormal carries into the smallest normal
  });

  it('rounds doubles once, not through float32', () => {
    // float32 would first round this to 1 + 2^-11 (a tie), then to even 0x3c00; the true answer is up.
    expect(float32ToFloat16Bits(1 + 2 ** -11 + 2 ** -40)).toBe(0x3c01);
    expect(float32ToFloat16Bits(-(1 + 2 ** -11 + 2 ** -40))).toBe(0xbc01);
    expect(float32ToFloat16Bits(65520 - 2 ** -30)).toBe(0x7bff);
  });

  it('keeps NaN a NaN (quiet, sign kept)', () => {
    expect(isF16NaN(float32ToFloat16Bits(NaN))).toBe(true);
    const f = new Float32Array(new Uint32Array([0xff800001]).buffer)[0]!; // signalling NaN, tiny payload
    const bits = float32ToFloat16Bits(f);
    expect(isF16NaN(bits)).toBe(true);
    expect(bits & 0x0200).toBe(0x0200);
    expect(Number.isNaN(float16BitsToFloat32(0x7e00))).toBe(true);
    expect(Number.isNaN(float16BitsToFloat32(0x7c01))).toBe(true);
  });

  it.each([
    [0x3c00, 1],
    [0x7bff, 65504],
    [0x0001, 2 ** -24],
    [0x0400, 2 ** -14],
    [0x03ff, 2 ** -14 - 2 ** -24],
    [0xfc00, -Infinity],
    [0x7c00, Infinity],
  ])('decodes %s as %d', (bits, x) => {
    expect(float16BitsToFloat32(bits)).toBe(x);
  });

  it('decodes -0 with its sign', () => {
    expect(Object.is(float16BitsToFloat32(0x8000), -0)).toBe(true);
  });

  it('round-trips every one of the 65536 bit patterns', () => {
    for (let b = 0; b < 65536; b++) {
      const x = float16BitsToFloat32(b);
      if (isF16NaN(b)) expect(isF16NaN(float32ToFloat16Bits(x))).toBe(true);
      else expect(float32ToFloat16Bits(x)).toBe(b);
    }
  });

  it('is nearest-even for random float32 and double inputs', () => {
    const check = (x: number): boolean =>
      Number.isNaN(x) || isNearestEven(x, float32ToFloat16Bits(x), float16BitsToFloat32, 65504);
    fc.assert(fc.property(fc.float({ min: -70000, max: 70000, noNaN: true }), check), { numRuns: 3000 });
    fc.assert(fc.property(fc.double({ min: -70000, max: 70000, noNaN: true }), check), { numRuns: 3000 });
    fc.assert(fc.property(fc.double({ min: -(2 ** -13), max: 2 ** -13, noNaN: true }), check), { numRuns: 3000 });
  });

  it('has array forms that match the scalar ones', () => {
    const src = new Float32Array([1, -0, 65520, 2 ** -24, NaN, 0.1]);
    const bits = float32ArrayToFloat16(src);
    expect([...bits]).toEqual([...src].map(float32ToFloat16Bits));
    const back = float16ArrayToFloat32(bits);
    expect([...back].map((v, i) => Object.is(v, float16BitsToFloat32(bits[i]!)))).toEqual(new Array(6).fill(true));
    expect(() => float32ArrayToFloat16(src, new Uint16Array(2))).toThrow(RangeError);
  });
});

describe('bfloat16', () => {
  const BF16_MAX = (2 - 2 ** -7) * 2 ** 127;

  it.each([
    [1, 0x3f80],
    [-1, 0xbf80],
    [BF16_MAX, 0x7f7f],
    [2 ** -133, 0x0001],
    [2 ** -126, 0x0080],
    [-0, 0x8000],
    [Infinity, 0x7f80],
    [-Infinity, 0xff80],
  ])('encodes %d as %s', (x, bits) => {
    expect(float32ToBfloat16Bits(x)).toBe(bits);
  });

  it('rounds ties to even and overflows to Inf', () => {
    expect(float32ToBfloat16Bits(1 + 2 ** -8)).toBe(0x3f80);
    expect(float32ToBfloat16Bits(1 + 3 * 2 ** -8)).toBe(0x3f82);
    expect(float32ToBfloat16Bits(3.4028234663852886e38)).toBe(0x7f80); // float32 max is past the tie
    expect(float32ToBfloat16Bits(BF16_MAX + 2 ** 119)).toBe(0x7f80); // exactly the tie: even is Inf
    expect(float32ToBfloat16Bits(BF16_MAX + 2 ** 118)).toBe(0x7f7f);
  });

  it('rounds doubles once, not through float32', () => {
    expect(float32ToBfloat16Bits(1 + 2 ** -8 + 2 ** -40)).toBe(0x3f81);
    expect(float32ToBfloat16Bits(2 ** -134 + 2 ** -180)).toBe(0x0001); // above half the smallest subnormal
    expect(float32ToBfloat16Bits(2 ** -134)).toBe(0x0000);
  });

  it('keeps NaN a NaN', () => {
    expect(isBf16NaN(float32ToBfloat16Bits(NaN))).toBe(true);
    const f = new Float32Array(new Uint32Array([0x7f800001]).buffer)[0]!; // payload only in low bits
    expect(isBf16NaN(float32ToBfloat16Bits(f))).toBe(true);
    expect(Number.isNaN(bfloat16BitsToFloat32(0x7fc0))).toBe(true);
  });

  it('decodes known patterns', () => {
    expect(bfloat16BitsToFloat32(0x3f80)).toBe(1);
    expect(bfloat16BitsToFloat32(0x7f7f)).toBe(BF16_MAX);
    expect(bfloat16BitsToFloat32(0x0001)).toBe(2 ** -133);
    expect(Object.is(bfloat16BitsToFloat32(0x8000), -0)).toBe(true);
    expect(bfloat16BitsToFloat32(0xff80)).toBe(-Infinity);
  });

  it('round-trips every bit pattern and is nearest-even on random inputs', () => {
    for (let b = 0; b < 65536; b++) {
      const x = bfloat16BitsToFloat32(b);
      if (isBf16NaN(b)) expect(isBf16NaN(float32ToBfloat16Bits(x))).toBe(true);
      else expect(float32ToBfloat16Bits(x)).toBe(b);
    }
    const check = (x: number): boolean =>
      Number.isNaN(x) || isNearestEven(x, float32ToBfloat16Bits(x), bfloat16BitsToFloat32, BF16_MAX);
    fc.assert(fc.property(fc.float({ noNaN: true, noDefaultInfinity: true }), check), { numRuns: 3000 });
    fc.assert(fc.property(fc.double({ min: -1e30, max: 1e30, noNaN: true }), check), { numRuns: 3000 });
  });

  it('has array forms that match the scalar ones', () => {
    const src = [1, -0, 3.5e38, 2 ** -133, NaN, 0.1];
    const bits = float32ArrayToBfloat16(src);
    expect([...bits]).toEqual(src.map(float32ToBfloat16Bits));
    const back = bfloat16ArrayToFloat32(bits);
    expect([...back].map((v, i) => Object.is(v, bfloat16BitsToFloat32(bits[i]!)))).toEqual(new Array(6).fill(true));
  });
});
