import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tensor } from './factory.js';
import { normalizeParams } from './validate.js';
import { float8E4m3Bits, float8E4m3DecodeTable } from './float8.js';

const table = float8E4m3DecodeTable();
const decode = (b: number) => table[b]!;
const isNaNBits = (b: number) => (b & 0x7f) === 0x7f;

/**
 * The oracle: the finite value nearest to x among all 254 finite codes of x's sign (enumerated, not computed
 * from bits), ties to the even code (the even mantissa), magnitudes past 448 to +-448; NaN to 0x7f.
 */
function oracle(x: number): number {
  if (Number.isNaN(x)) return 0x7f;
  const sign = x < 0 || Object.is(x, -0) ? 0x80 : 0;
  const a = Math.min(Math.abs(x), 448);
  let best = 0;
  for (let m = 1; m <= 0x7e; m++) {
    const d = Math.abs(decode(m) - a) - Math.abs(decode(best) - a);
    if (d < 0 || (d === 0 && m % 2 === 0)) best = m;
  }
  return sign | best;
}

const f32FromBits = (bits: number) => new Float32Array(new Uint32Array([bits]).buffer)[0]!;

// torch 2.13.0 (CPU): torch.tensor(float32 values).to(torch.float8_e4m3fn), as [float32 bits, fp8 bits]:
// saturation (448.5 .. 1e6 and infinities to +-448), ties (3 x 2^-10 to 2^-8, 2^-10 to 0), and random values.
const TORCH_2_13: ReadonlyArray<readonly [number, number]> = [
  [0x00000000, 0x00],
  [0x80000000, 0x80],
  [0x3f800000, 0x38],
  [0xbf800000, 0xb8],
  [0x43e00000, 0x7e],
  [0x43e08000, 0x7e],
  [0x43e7f333, 0x7e],
  [0x43e80000, 0x7e],
  [0x43ef8000, 0x7e],
  [0x43f00000, 0x7e],
  [0x49742400, 0x7e],
  [0xc9742400, 0xfe],
  [0x7f800000, 0x7e],
  [0xff800000, 0xfe],
  [0x3a800000, 0x00],
  [0x3b400000, 0x02],
  [0x3ba00000, 0x02],
  [0x3b000000, 0x01],
  [0x3a000000, 0x00],
  [0x3c800000, 0x08],
  [0x3c880000, 0x08],
  [0x3c780000, 0x08],
  [0x43700000, 0x77],
  [0x43780000, 0x78],
  [0x43800000, 0x78],
  [0x43880000, 0x78],
  [0x3f880000, 0x38],
  [0x3f980000, 0x3a],
  [0x3dcccccd, 0x1d],
  [0x3e99999a, 0x2a],
  [0x40490fd0, 0x45],
  [0xc02df84d, 0xc3],
  [0x42c80000, 0x6c],
  [0xc3960000, 0xf9],
  [0x41780000, 0x58],
  [0x41880000, 0x58],
  [0x3eaaaaab, 0x2b],
  [0x3a83126f, 0x01],
  [0x3a6bedfa, 0x00],
  [0xbab4652f, 0x81],
  [0xb8d766c7, 0x80],
  [0xc1dae9a2, 0xde],
  [0xc24fce30, 0xe5],
  [0xc1624df7, 0xd6],
  [0xba121314, 0x80],
  [0xb907e4c6, 0x80],
  [0xc184c7d2, 0xd8],
  [0xc11a95af, 0xd2],
  [0xbcc09d08, 0x8c],
  [0x4185c2cd, 0x58],
  [0x42653a1b, 0x66],
  [0x38af3057, 0x00],
  [0x39f3d7b6, 0x00],
  [0x39e81974, 0x00],
  [0xbad770aa, 0x81],
  [0x40a6a63e, 0x4a],
  [0xc3441d57, 0xf4],
  [0xc22377d5, 0xe2],
  [0x3b11d39c, 0x01],
  [0xc102aa38, 0xd0],
  [0x41d93391, 0x5e],
  [0xbc617bf5, 0x87],
  [0xbe6afaca, 0xa7],
];

describe('float8_e4m3', () => {
  it('decodes the format: signed zeros, subnormals in 2^-9, 1.0, 448, the two NaNs', () => {
    expect(Object.is(decode(0x00), 0)).toBe(true);
    expect(Object.is(decode(0x80), -0)).toBe(true);
    expect([decode(0x01), decode(0x07), decode(0x08)]).toEqual([2 ** -9, 7 * 2 ** -9, 2 ** -6]);
    expect([decode(0x38), decode(0x77), decode(0x78), decode(0x7e), decode(0xfe)]).toEqual([1, 240, 256, 448, -448]);
    expect(Number.isNaN(decode(0x7f)) && Number.isNaN(decode(0xff))).toBe(true);
    for (let b = 1; b <= 0x7e; b++) expect(decode(b)).toBeGreaterThan(decode(b - 1)); // strictly increasing
    for (let b = 0; b < 0x80; b++) if (b !== 0x7f) expect(decode(b | 0x80)).toBe(-decode(b));
  });

  it('encodes every finite code back to itself, NaN to 0x7f', () => {
    for (let b = 0; b < 256; b++) expect(float8E4m3Bits(decode(b))).toBe(isNaNBits(b) ? 0x7f : b);
  });

  it('rounds to nearest even and saturates, as the enumerated oracle: ties, their neighbours, specials', () => {
    const xs: number[] = [Infinity, -Infinity, Number.NaN, 0, -0, 448, 449, 464, 480, 1e300, -1e-300, 2 ** -10];
    for (let b = 0; b < 0x7e; b++) {
      const tie = (decode(b) + decode(b + 1)) / 2;
      xs.push(tie, -tie, tie * (1 + 2 ** -40), tie * (1 - 2 ** -40), tie + 2 ** -60);
    }
    for (const x of xs) expect(float8E4m3Bits(x), `x = ${x}`).toBe(oracle(x));
    fc.assert(
      fc.property(fc.double({ noNaN: true, min: -1024, max: 1024 }), (x) => float8E4m3Bits(x) === oracle(x)),
      { numRuns: 20000 },
    );
  });

  it("matches torch's float32 -> float8_e4m3fn cast bit for bit", () => {
    for (const [f32, want] of TORCH_2_13) {
      const x = f32FromBits(f32);
      expect(float8E4m3Bits(x), `0x${f32.toString(16)} (${x})`).toBe(want);
    }
  });

  it('is a tensor dtype: one byte an element, toDType both ways, an attention input only with descale', () => {
    const values = [0.1, -2.5, 448, 1000, -0, 2 ** -10, Number.NaN];
    const t = tensor(values, [7], { dtype: 'float8_e4m3' });
    expect(t.hostData()).toBeInstanceOf(Uint8Array);
    expect(Array.from(t.hostData())).toEqual(values.map(float8E4m3Bits));
    const back = Array.from(t.toFloat64Array());
    expect(back.slice(0, 6)).toEqual([0.1015625, -2.5, 448, 448, -0, 0]);
    expect(Number.isNaN(back[6])).toBe(true);
    const viaF32 = tensor(values, [7], { dtype: 'float32' }).toDType('float8_e4m3');
    expect(Array.from(viaF32.hostData())).toEqual(Array.from(t.hostData()));
    expect(Array.from(t.toDType('bfloat16').toFloat64Array().slice(0, 6))).toEqual(back.slice(0, 6));
    const q = tensor(new Array(16).fill(0.5), [1, 1, 2, 8], { dtype: 'float8_e4m3' });
    expect(() => normalizeParams(q, q, q)).toThrow(expect.objectContaining({ code: 'ATTN_DESCALE' }));
    const p = normalizeParams(q, q, q, { descale: { q: 2, k: 0.5, v: 1 } });
    expect(p.dtype).toBe('bfloat16');
    expect(p.query.dtype).toBe('float8_e4m3');
    expect(p.descale).toEqual({ q: 2, k: 0.5, v: 1 });
  });

  it('converts with toDType bit-exactly: float64 to float8_e4m3 as float8E4m3Bits, every code back as the table', () => {
    const values = Array.from({ length: 2000 }, (_, i) => (Math.sin(i * 12.9898) * 43758.5453) % 600);
    values.push(448.5, -1e9, Infinity, -Infinity, 2 ** -10, 3 * 2 ** -10);
    const t = tensor(values, [values.length], { dtype: 'float64' }).toDType('float8_e4m3');
    expect(Array.from(t.hostData())).toEqual(values.map(float8E4m3Bits));
    const codes = tensor(
      new Uint8Array(256).map((_, i) => i),
      [256],
      { dtype: 'float8_e4m3' },
    );
    const f64 = codes.toDType('float64').toFloat64Array();
    for (let bits = 0; bits < 256; bits++) expect(Object.is(f64[bits], table[bits]), `code ${bits}`).toBe(true);
    const bf16 = codes.toDType('bfloat16').toFloat64Array();
    for (let bits = 0; bits < 256; bits++) expect(Object.is(bf16[bits], table[bits]), `bf16 of ${bits}`).toBe(true);
  });
});
