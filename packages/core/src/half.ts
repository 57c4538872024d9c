// IEEE binary16 (float16) and bfloat16 conversions, round to nearest even, NaN/Inf/subnormals exact.
//
// Encoding takes any JS number. Values that are exact float32 take a fast path on the float32 bit
// pattern; any other double is rounded once, directly from the double, because going through
// float32 first would round twice and can land one ulp off.

import { exponentOf, roundHalfEven } from './exact-rounding.js';

const scratch = new ArrayBuffer(4);
const scratchF32 = new Float32Array(scratch);
const scratchU32 = new Uint32Array(scratch);

/** The format facts the exact (double) encoder needs. */
interface HalfFormat {
  readonly mantissaBits: number;
  readonly exponentBias: number;
  /** Bits of +Inf; the largest finite value is infBits - 1. */
  readonly infBits: number;
  /** Bits of the quiet NaN produced from a NaN with no payload to keep. */
  readonly quietNaN: number;
}

const FLOAT16: HalfFormat = { mantissaBits: 10, exponentBias: 15, infBits: 0x7c00, quietNaN: 0x7e00 };
const BFLOAT16: HalfFormat = { mantissaBits: 7, exponentBias: 127, infBits: 0x7f80, quietNaN: 0x7fc0 };

/** Rounds a double straight to the format: one rounding, ties to even. */
function encodeExact(x: number, f: HalfFormat): number {
  if (Number.isNaN(x)) return f.quietNaN;
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  if (a === Infinity) return sign | f.infBits;
  if (a === 0) return sign;
  const minNormalExp = 1 - f.exponentBias;
  const e = exponentOf(a);
  // Scale so that one unit in the last place of the target is 1, then round; a carry out of the
  // mantissa moves into the exponent field by plain addition, which is what IEEE rounding does.
  if (e < minNormalExp) {
    const q = roundHalfEven(a * 2 ** (f.mantissaBits - minNormalExp));
    return sign | q; // q == 2^mantissaBits is exactly the smallest normal's bit pattern
  }
  const m = roundHalfEven(a * 2 ** (f.mantissaBits - e)); // in [2^mb, 2^(mb+1)]
  const bits = ((e + f.exponentBias) << f.mantissaBits) + (m - 2 ** f.mantissaBits);
  return sign | Math.min(bits, f.infBits);
}

function float32BitsToFloat16Bits(x: number): number {
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  const mant = x & 0x7fffff;
  if (exp === 0xff) {
    // Inf stays Inf; NaN keeps its top payload bits and is made quiet so it cannot become Inf.
    return mant === 0 ? sign | 0x7c00 : sign | 0x7e00 | (mant >>> 13);
  }
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal (or zero) in float16: shift the full significand and round on the dropped bits.
    if (e < -10) return sign; // below half of the smallest subnormal, even with the implicit bit
    const sig = mant | 0x800000;
    const shift = 14 - e; // 14..24
    const kept = sig >>> shift;
    const rem = sig & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    const up = rem > half || (rem === half && (kept & 1) === 1) ? 1 : 0;
    return sign | (kept + up);
  }
  const kept = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  const up = rem > 0x1000 || (rem === 0x1000 && (kept & 1) === 1) ? 1 : 0;
  return sign | (kept + up); // a carry may reach 0x7c00 (Inf), which is the correct overflow
}

function float32BitsToBfloat16Bits(x: number): number {
  if ((x & 0x7f800000) === 0x7f800000 && (x & 0x7fffff) !== 0) {
    return ((x >>> 16) | 0x0040) & 0xffff; // NaN: keep sign and top payload, force quiet
  }
  const rounding = 0x7fff + ((x >>> 16) & 1);
  return ((x + rounding) >>> 16) & 0xffff; // x + rounding < 2^32 + 2^15; >>> wraps modulo 2^32
}

/** Rounds a number to float16 (RNE) and returns its 16 bits. Exact for any double, not only float32. */
export function float32ToFloat16Bits(value: number): number {
  scratchF32[0] = value;
  if (scratchF32[0] === value || Number.isNaN(value)) return float32BitsToFloat16Bits(scratchU32[0]!);
  return encodeExact(value, FLOAT16);
}

/** Rounds a number to bfloat16 (RNE) and returns its 16 bits. Exact for any double, not only float32. */
export function float32ToBfloat16Bits(value: number): number {
  scratchF32[0] = value;
  if (scratchF32[0] === value || Number.isNaN(value)) return float32BitsToBfloat16Bits(scratchU32[0]!);
  return encodeExact(value, BFLOAT16);
}

let float16Table: Float32Array | null = null;

/**
 * All 65536 float16 values indexed by bit pattern, built once on first use: decoding becomes one
 * load. Exported for kernels that convert many values in a tight loop; do not write to it.
 */
export function float16DecodeTable(): Float32Array {
  if (float16Table) return float16Table;
  const table = new Float32Array(65536);
  for (let bits = 0; bits < 65536; bits++) {
    const sign = bits & 0x8000 ? -1 : 1;
    const exp = (bits >>> 10) & 0x1f;
    const mant = bits & 0x3ff;
    let v: number;
    if (exp === 0) v = mant * 2 ** -24;
    else if (exp === 0x1f) v = mant === 0 ? Infinity : NaN;
    else v = (1024 + mant) * 2 ** (exp - 25);
    table[bits] = sign * v;
  }
  float16Table = table;
  return table;
}

export function float16BitsToFloat32(bits: number): number {
  return float16DecodeTable()[bits & 0xffff]!;
}

export function bfloat16BitsToFloat32(bits: number): number {
  scratchU32[0] = (bits & 0xffff) << 16;
  return scratchF32[0]!;
}

function checkLength(what: string, src: ArrayLike<number>, dst: ArrayLike<number>): void {
  if (dst.length < src.length) {
    throw new RangeError(`${what}: destination holds ${dst.length} elements, source has ${src.length}.`);
  }
}

export function float32ArrayToFloat16(
  src: ArrayLike<number>,
  dst: Uint16Array = new Uint16Array(src.length),
): Uint16Array {
  checkLength('float32ArrayToFloat16', src, dst);
  for (let i = 0; i < src.length; i++) dst[i] = float32ToFloat16Bits(src[i]!);
  return dst;
}

export function float16ArrayToFloat32(
  src: Uint16Array,
  dst: Float32Array = new Float32Array(src.length),
): Float32Array {
  checkLength('float16ArrayToFloat32', src, dst);
  const table = float16DecodeTable();
  for (let i = 0; i < src.length; i++) dst[i] = table[src[i]!]!;
  return dst;
}

export function float32ArrayToBfloat16(
  src: ArrayLike<number>,
  dst: Uint16Array = new Uint16Array(src.length),
): Uint16Array {
  checkLength('float32ArrayToBfloat16', src, dst);
  for (let i = 0; i < src.length; i++) dst[i] = float32ToBfloat16Bits(src[i]!);
  return dst;
}

export function bfloat16ArrayToFloat32(
  src: Uint16Array,
  dst: Float32Array = new Float32Array(src.length),
): Float32Array {
  checkLength('bfloat16ArrayToFloat32', src, dst);
  // Widening is a 16-bit shift; doing it through a Uint32 view of dst avoids a per-element scratch.
  const wide = new Uint32Array(dst.buffer, dst.byteOffset, dst.length);
  for (let i = 0; i < src.length; i++) wide[i] = src[i]! << 16;
  return dst;
}
