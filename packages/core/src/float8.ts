// float8_e4m3: the E4M3 format of FlashAttention-3's fp8 inputs (torch.float8_e4m3fn): 1 sign, 4 exponent
// (bias 7) and 3 mantissa bits, no infinities, S.1111.111 the only NaN, largest finite 448, smallest subnormal
// 2^-9. It is a storage type (one byte an element, in a Uint8Array): attention takes it only where a backend
// has an fp8 kernel with descale factors, so it is not a FloatDType.
//
// Encoding rounds a JS number once, to nearest even (as half.ts's exact path: no detour through float32), and
// saturates: magnitudes that round past 448, infinities included, become +-448, as torch's cast from float32
// does (NVIDIA's satfinite conversion). NaN becomes 0x7f (the sign of a NaN is not kept, as for the half types).

import { exponentOf, roundHalfEven } from './exact-rounding.js';

const MAX_BITS = 0x7e; // 448 = 1.110b x 2^8
const NAN_BITS = 0x7f;
const MAX_FINITE = 448;

/** The float8_e4m3 bits of x (round to nearest even, saturating at +-448; NaN to 0x7f). */
export function float8E4m3Bits(x: number): number {
  if (Number.isNaN(x)) return NAN_BITS;
  const sign = x < 0 || Object.is(x, -0) ? 0x80 : 0;
  const a = Math.abs(x);
  if (a >= MAX_FINITE) return sign | MAX_BITS;
  if (a === 0) return sign;
  const e = exponentOf(a);
  // One unit in the last place scaled to 1, then rounded; a carry out of the mantissa moves into the exponent
  // field by plain addition (IEEE rounding). Below 2^-6 the values are subnormal: units of 2^-9.
  if (e < -6) return sign | roundHalfEven(a * 2 ** 9); // 8 is exactly the smallest normal's bits
  const m = roundHalfEven(a * 2 ** (3 - e)); // in [8, 16]
  return sign | Math.min(((e + 7) << 3) + (m - 8), MAX_BITS); // a < 448 never rounds past it
}

let decodeTable: Float64Array | undefined;

/** The value of each of the 256 float8_e4m3 bit patterns (NaN for 0x7f and 0xff). */
export function float8E4m3DecodeTable(): Float64Array {
  if (decodeTable) return decodeTable;
  const t = new Float64Array(256);
  for (let bits = 0; bits < 256; bits++) {
    const sign = bits & 0x80 ? -1 : 1;
    const e = (bits >> 3) & 0xf;
    const m = bits & 7;
    if (e === 15 && m === 7) t[bits] = Number.NaN;
    else if (e === 0) t[bits] = sign * m * 2 ** -9;
    else t[bits] = sign * (1 + m / 8) * 2 ** (e - 7);
  }
  decodeTable = t;
  return t;
}
