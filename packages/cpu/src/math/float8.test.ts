// cpu-math on float8_e4m3 inputs (descale): against an independent float64 computation written here
// (dequantize through core's decode table, softmax over the whole score row, round once to bfloat16),
// on fresh random inputs of odd sizes; every other feature against cpu-math's own float64 path on the
// dequantized values; NaN (0x7f) in gives NaN out; cpu-flash declines by the float8Inputs rule.
import { envTestSeed, explain, float8E4m3DecodeTable, randn, sdpa, sdpaForward, tensor } from '@attn/core';
import type { Descale, SdpaOptions, Tensor } from '@attn/core';
import { describe, expect, it } from 'vitest';
import '../index.js';

const table = float8E4m3DecodeTable();

// A fresh seed per run unless ATTN_CONFORMANCE_SEED pins one; every failure message carries it.
const SEED = Number((envTestSeed('ATTN_CONFORMANCE_SEED') ?? BigInt(Math.floor(Math.random() * 2 ** 31))) % 2n ** 31n);

/** Random float8_e4m3 values (finite: a NaN would make the whole comparison NaN) from N(0, sigma). */
function fp8Random(shape: readonly number[], seed: number, sigma: number): Tensor {
  const x = randn(shape, { dtype: 'float64', seed: SEED + seed }).toFloat64Array();
  return tensor(
    x.map((v) => v * sigma),
    shape,
    { dtype: 'float8_e4m3' },
  );
}

/** The float64 value of each element: the decode table, by the stored bits (never Tensor's own decoder). */
function decoded(t: Tensor): Float64Array {
  return Float64Array.from(t.contiguous().hostData() as Uint8Array, (bits) => table[bits]!);
}

/** Spacing of bfloat16 numbers around x (8 significant bits; subnormals share the smallest normal's). */
function bf16Ulp(x: number): number {
  const a = Math.abs(x);
  return 2 ** (Math.max(Math.floor(Math.log2(a)), -126) - 7);
}

/** got is x rounded to bfloat16: within half a spacing of it (float64 noise aside), and exactly 0 for 0. */
function expectRoundedFrom(got: Float64Array, want: Float64Array, what: string): void {
  expect(got.length).toBe(want.length);
  for (let n = 0; n < want.length; n++) {
    const x = want[n]!;
    const g = got[n]!;
    if (x === 0) {
      expect(g, `${what}[${n}] (seed ${SEED})`).toBe(0);
      continue;
    }
    const err = Math.abs(g - x);
    expect(err, `${what}[${n}] = ${g}, want ${x} rounded to bfloat16 (seed ${SEED})`).toBeLessThanOrEqual(
      0.5 * bf16Ulp(x) * (1 + 1e-9),
    );
  }
}

interface Dims {
  readonly B: number;
  readonly Hq: number;
  readonly Hk: number;
  readonly Sq: number;
  readonly Sk: number;
  readonly D: number;
}

/**
 * Attention of descale.q * q, descale.k * k, descale.v * v in float64, written out: score row, max,
 * exp, sum, weighted sum of values; causal upper-left (query i sees keys 0..i). Out [B, Hq, Sq, D] and
 * logsumexp [B, Hq, Sq].
 */
function reference(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  d: Dims,
  descale: Descale,
  causal: boolean,
): { out: Float64Array; lse: Float64Array } {
  const [qv, kv, vv] = [decoded(q), decoded(k), decoded(v)];
  const { B, Hq, Hk, Sq, Sk, D } = d;
  const scale = 1 / Math.sqrt(D);
  const out = new Float64Array(B * Hq * Sq * D);
  const lse = new Float64Array(B * Hq * Sq);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < Hq; h++) {
      const hk = Math.floor(h / (Hq / Hk));
      for (let i = 0; i < Sq; i++) {
        const row = (b * Hq + h) * Sq + i;
        const seen = causal ? Math.min(i + 1, Sk) : Sk;
        const s: number[] = [];
        for (let j = 0; j < seen; j++) {
          let dot = 0;
          for (let c = 0; c < D; c++)
            dot += descale.q * qv[row * D + c]! * (descale.k * kv[((b * Hk + hk) * Sk + j) * D + c]!);
          s.push(dot * scale);
        }
        if (seen === 0) {
          lse[row] = -Infinity;
          continue;
        }
        const max = Math.max(...s);
        const p = s.map((x) => Math.exp(x - max));
        const sum = p.reduce((a, x) => a + x, 0);
        lse[row] = max + Math.log(sum);
        for (let c = 0; c < D; c++) {
          let acc = 0;
          for (let j = 0; j < seen; j++) acc += (p[j]! / sum) * (descale.v * vv[((b * Hk + hk) * Sk + j) * D + c]!);
          out[row * D + c] = acc;
        }
      }
    }
  return { out, lse };
}

const MATH = ['cpu-math'];

describe('cpu-math on float8_e4m3 inputs', () => {
  const shapes: Array<Dims & { causal: boolean }> = [
    { B: 1, Hq: 1, Hk: 1, Sq: 1, Sk: 1, D: 8, causal: false },
    { B: 2, Hq: 3, Hk: 3, Sq: 17, Sk: 17, D: 72, causal: true },
    { B: 1, Hq: 6, Hk: 2, Sq: 100, Sk: 17, D: 8, causal: false },
    { B: 2, Hq: 4, Hk: 1, Sq: 17, Sk: 100, D: 72, causal: true },
    { B: 1, Hq: 2, Hk: 1, Sq: 100, Sk: 100, D: 8, causal: true },
  ];
  for (const [n, d] of shapes.entries()) {
    it(`B ${d.B}, Hq ${d.Hq}, Hk ${d.Hk}, Sq ${d.Sq}, Sk ${d.Sk}, D ${d.D}${d.causal ? ', causal' : ''}: the float64 attention of the dequantized values, rounded once to bfloat16`, () => {
      const q = fp8Random([d.B, d.Hq, d.Sq, d.D], 10 * n, 40);
      const k = fp8Random([d.B, d.Hk, d.Sk, d.D], 10 * n + 1, 40);
      const v = fp8Random([d.B, d.Hk, d.Sk, d.D], 10 * n + 2, 100);
      const descale: Descale = { q: 0.05, k: 0.03125, v: 0.013 };
      const res = sdpaForward(q, k, v, { descale, isCausal: d.causal, enableGqa: d.Hq !== d.Hk, backends: MATH });
      expect(res.out.dtype).toBe('bfloat16');
      expect(res.out.shape).toEqual([d.B, d.Hq, d.Sq, d.D]);
      const want = reference(q, k, v, d, descale, d.causal);
      expectRoundedFrom(res.out.toFloat64Array(), want.out, 'out');
      const lse = res.logsumexp.toFloat64Array();
      for (let r = 0; r < want.lse.length; r++)
        expect(Math.abs(lse[r]! - want.lse[r]!), `lse[${r}] (seed ${SEED})`).toBeLessThanOrEqual(
          1e-6 * Math.max(1, Math.abs(want.lse[r]!)),
        );
    });
  }

  it('applies each factor: scaling descale.v scales the output, descale.q and descale.k only their product', () => {
    const d = { B: 1, Hq: 2, Hk: 2, Sq: 9, Sk: 13, D: 8 };
    const q = fp8Random([1, 2, 9, 8], 100, 20);
    const k = fp8Random([1, 2, 13, 8], 101, 20);
    const v = fp8Random([1, 2, 13, 8], 102, 20);
    const run = (descale: Descale) => sdpa(q, k, v, { descale, backends: MATH }).toFloat64Array();
    const a = run({ q: 0.02, k: 0.5, v: 1 });
    expectRoundedFrom(a, reference(q, k, v, d, { q: 0.02, k: 0.5, v: 1 }, false).out, 'out');
    // Powers of two scale bfloat16 values exactly.
    expect(Array.from(run({ q: 0.02, k: 0.5, v: 4 }))).toEqual(Array.from(a, (x) => 4 * x));
    expect(Array.from(run({ q: 0.04, k: 0.25, v: 1 }))).toEqual(Array.from(a));
    expect(Array.from(run({ q: 0.08, k: 0.5, v: 1 }))).not.toEqual(Array.from(a));
  });

  it('NaN in (0x7f) gives NaN out: the query row that holds it, and every row that sees a NaN key', () => {
    const q = fp8Random([1, 1, 6, 8], 200, 1);
    const k = fp8Random([1, 1, 6, 8], 201, 1);
    const v = fp8Random([1, 1, 6, 8], 202, 1);
    (q.hostData() as Uint8Array)[2 * 8 + 3] = 0x7f; // q row 2
    (k.hostData() as Uint8Array)[4 * 8] = 0xff; // key 4 (the other NaN pattern)
    const res = sdpaForward(q, k, v, { descale: { q: 1, k: 1, v: 1 }, isCausal: true, backends: MATH });
    const out = res.out.toFloat64Array();
    const lse = res.logsumexp.toFloat64Array();
    for (let i = 0; i < 6; i++) {
      const nan = i === 2 || i >= 4; // causal: rows 0..3 never see key 4
      for (let c = 0; c < 8; c++) expect(Number.isNaN(out[i * 8 + c]), `out[${i}, ${c}]`).toBe(nan);
      expect(Number.isNaN(lse[i]), `lse[${i}]`).toBe(nan);
    }
  });

  describe('keeps every feature: the same call on the dequantized float64 values, rounded to bfloat16', () => {
    const [B, Hq, Hk, Sq, Sk, D] = [2, 4, 2, 11, 19, 8];
    const q = fp8Random([B, Hq, Sq, D], 300, 30);
    const k = fp8Random([B, Hk, Sk, D], 301, 30);
    const v = fp8Random([B, Hk, Sk, D], 302, 30);
    const descale: Descale = { q: 0.03, k: 0.07, v: 0.5 };
    const dequantized = (t: Tensor, f: number) =>
      tensor(
        decoded(t).map((x) => x * f),
        t.shape,
        { dtype: 'float64' },
      );
    const qf = dequantized(q, descale.q);
    const kf = dequantized(k, descale.k);
    const vf = dequantized(v, descale.v);
    const keep = tensor(
      Array.from({ length: Sq * Sk }, (_, n) => (n % 7 === 3 ? 0 : 1)),
      [Sq, Sk],
      { dtype: 'bool' },
    );
    const slopes = tensor([0.5, 0.25, 0.125, 0.0625], [Hq], { dtype: 'float32' });
    const cases: Array<[string, SdpaOptions]> = [
      ['causal lower-right', { isCausal: true, alignment: 'lowerRight' }],
      ['window [3, 2]', { window: [3, 2] }],
      ['bool mask with causal', { attnMask: keep, isCausal: true }],
      ['ALiBi', { alibiSlopes: slopes }],
      ['softcap 5', { softcap: 5 }],
      ['dropout 0.3', { dropoutP: 0.3, dropoutSeed: 1234n, dropoutOffset: 7 }],
      ['scale 0.9', { scale: 0.9 }],
    ];
    for (const [name, opts] of cases) {
      it(name, () => {
        const common = { ...opts, enableGqa: true, backends: MATH };
        const got = sdpaForward(q, k, v, { ...common, descale });
        const want = sdpaForward(qf, kf, vf, common);
        expectRoundedFrom(got.out.toFloat64Array(), want.out.toFloat64Array(), name);
        expect(Array.from(got.logsumexp.toFloat64Array())).toEqual(Array.from(want.logsumexp.toFloat64Array()));
      });
    }
  });

  it('is the CPU backend that takes fp8: cpu-flash declines by the float8Inputs rule', () => {
    const q = fp8Random([1, 2, 5, 8], 400, 1);
    const report = explain(q, q, q, { descale: { q: 1, k: 1, v: 1 } });
    expect(report.selected).toBe('cpu-math');
    const flash = report.candidates.find((c) => c.backend === 'cpu-flash');
    expect(flash?.reasons[0]?.rule).toBe('float8Inputs');
    expect(flash?.reasons[0]?.message).toMatch(/not float8_e4m3: dequantize .* \(cpu-math\)/);
    expect(report.candidates.find((c) => c.backend === 'cpu-math')?.reasons).toEqual([]);
  });
});
