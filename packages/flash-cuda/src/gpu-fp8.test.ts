// The fp8 (float8_e4m3) forward on a GPU: the Hopper fp8 kernel against float64 attention of the dequantized
// inputs, on fresh random inputs at odd sizes (S 1, 17, 1000; D 16..128; Hq != Hk; causal in both alignments;
// sequsedK), NaN in and out, and the calls it declines with their reasons. The accuracy rule: the error of O
// (per unit of max(1, max |reference|)) is at most twice that of a naive fp8 computation (float64 with P
// rounded to e4m3 once, against its row max), plus bf16's rounding of O. Skipped with the reason printed where
// there is no usable device; on a GPU other than sm90 only the declines run.
import '@attn/cpu';
import {
  explain,
  float8E4m3Bits,
  float8E4m3DecodeTable,
  normalizeParams,
  sdpa,
  type SdpaOptions,
  type Tensor,
  tensor,
} from '@attn/core';
import { deviceProperties } from '@attn/cuda';
import { expect, it } from 'vitest';
import { describeWhereRunnable } from '@attn/conformance';
import { flashCudaBackend, planFor } from './index.js';

const av = flashCudaBackend.availability();
const sm90 = av.ok && deviceProperties(0).major === 9 && deviceProperties(0).minor === 0;

type Shape = [b: number, hq: number, hk: number, sq: number, sk: number, d: number];

/** xorshift32: reproducible values in [-1, 1) per seed. */
function uniform(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return (s >>> 8) / 2 ** 23 - 1;
  };
}

/** e4m3 bits of amp * uniform / descale, with descale = amp / 448 (a per-tensor scale as users pick it). */
function quantized(n: number, amp: number, seed: number): { bits: Uint8Array; descale: number } {
  const descale = amp / 448;
  const next = uniform(seed);
  const bits = new Uint8Array(n);
  for (let i = 0; i < n; i++) bits[i] = float8E4m3Bits((amp * next()) / descale);
  return { bits, descale };
}

interface Fp8Inputs {
  q: Uint8Array;
  k: Uint8Array;
  v: Uint8Array;
  descale: { q: number; k: number; v: number };
}

function inputs([b, hq, hk, sq, sk, d]: Shape, seed: number): Fp8Inputs {
  const q = quantized(b * hq * sq * d, 3, seed);
  const k = quantized(b * hk * sk * d, 2, seed + 1);
  const v = quantized(b * hk * sk * d, 1.5, seed + 2);
  return { q: q.bits, k: k.bits, v: v.bits, descale: { q: q.descale, k: k.descale, v: v.descale } };
}

function onDevice(x: Fp8Inputs, [b, hq, hk, sq, sk, d]: Shape): [Tensor, Tensor, Tensor] {
  const o = { dtype: 'float8_e4m3' as const, device: 'cuda' as const };
  return [tensor(x.q, [b, hq, sq, d], o), tensor(x.k, [b, hk, sk, d], o), tensor(x.v, [b, hk, sk, d], o)];
}

interface RefOptions {
  causal?: boolean;
  lowerRight?: boolean;
  used?: readonly number[];
}

/**
 * float64 attention of the dequantized inputs, and the naive fp8 computation beside it: O for both
 * ([b, hq, sq, d] row-major), NaN where a row attends a NaN.
 */
function reference(x: Fp8Inputs, [b, hq, hk, sq, sk, d]: Shape, r: RefOptions) {
  const table = float8E4m3DecodeTable();
  const e4m3 = (p: number) => table[float8E4m3Bits(p)]!;
  const scale = 1 / Math.sqrt(d);
  const exact = new Float64Array(b * hq * sq * d);
  const naive = new Float64Array(b * hq * sq * d);
  const s = new Float64Array(sk);
  for (let bi = 0; bi < b; bi++) {
    const keys = r.used?.[bi] ?? sk;
    const off = r.lowerRight ? keys - sq : 0;
    for (let h = 0; h < hq; h++) {
      const hk_ = Math.floor(h / (hq / hk));
      for (let i = 0; i < sq; i++) {
        const last = r.causal ? Math.min(keys - 1, i + off) : keys - 1;
        const qRow = ((bi * hq + h) * sq + i) * d;
        let mx = -Infinity;
        for (let j = 0; j <= last; j++) {
          const kRow = ((bi * hk + hk_) * sk + j) * d;
          let acc = 0;
          for (let c = 0; c < d; c++) acc += table[x.q[qRow + c]!]! * table[x.k[kRow + c]!]!;
          s[j] = acc * x.descale.q * x.descale.k * scale;
          if (!(s[j]! <= mx)) mx = Number.isNaN(s[j]!) ? NaN : Math.max(mx, s[j]!);
        }
        let sum = 0;
        const o = new Float64Array(d);
        const on = new Float64Array(d);
        for (let j = 0; j <= last; j++) {
          const p = Math.exp(s[j]! - mx);
          const p8 = e4m3(p);
          sum += p;
          const vRow = ((bi * hk + hk_) * sk + j) * d;
          for (let c = 0; c < d; c++) {
            const vv = table[x.v[vRow + c]!]! * x.descale.v;
            o[c] = o[c]! + p * vv;
            on[c] = on[c]! + p8 * vv;
          }
        }
        for (let c = 0; c < d; c++) {
          exact[qRow + c] = last < 0 ? 0 : o[c]! / sum;
          naive[qRow + c] = last < 0 ? 0 : on[c]! / sum;
        }
      }
    }
  }
  return { exact, naive };
}

/** The largest error of got against want per unit of max(1, max |want|); NaN where only one side is NaN: Infinity. */
function scaledError(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let m = 0;
  let unit = 1;
  for (let i = 0; i < want.length; i++) {
    if (Number.isNaN(got[i]!) !== Number.isNaN(want[i]!)) return Infinity;
    if (Number.isNaN(want[i]!)) continue;
    m = Math.max(m, Math.abs(got[i]! - want[i]!));
    unit = Math.max(unit, Math.abs(want[i]!));
  }
  return m / unit;
}

/** bf16's rounding of a value of magnitude <= 1 per unit: half an ulp at 1. */
const BF16_HALF_ULP = 2 ** -8;

describeWhereRunnable('flash-cuda fp8 forward on a GPU', av.ok ? null : av.reason, () => {
  const cases: Array<[string, Shape, RefOptions & { opts?: SdpaOptions }]> = [
    ['D128 S300', [2, 4, 2, 300, 300, 128], {}],
    ['D128 causal S1000 GQA 4/1', [1, 4, 1, 1000, 1000, 128], { causal: true }],
    ['D128 Sq17 Sk1000', [2, 2, 1, 17, 1000, 128], {}],
    ['D64 Sq1 Sk17', [2, 2, 2, 1, 17, 64], {}],
    ['D16 causal Sq129 Sk257', [1, 4, 2, 129, 257, 16], { causal: true }],
    [
      'D96 causal lower-right Sq1000 Sk129 (rows without keys)',
      [1, 2, 2, 1000, 129, 96],
      { causal: true, lowerRight: true },
    ],
    ['D128 causal lower-right Sq200 Sk700', [1, 2, 2, 200, 700, 128], { causal: true, lowerRight: true }],
    ['D128 sequsedK', [3, 2, 2, 150, 300, 128], { used: [300, 0, 77] }],
  ];
  it.skipIf(!sm90).each(cases)('%s: within the fp8 accuracy rule of float64', (_name, shape, r) => {
    const x = inputs(shape, 7 + shape[3] + shape[5]);
    const [q, k, v] = onDevice(x, shape);
    const opts: SdpaOptions = {
      descale: x.descale,
      enableGqa: shape[1] !== shape[2],
      isCausal: r.causal ?? false,
      alignment: r.lowerRight ? 'lowerRight' : 'upperLeft',
      ...(r.used ? { sequsedK: tensor([...r.used], [r.used.length], { dtype: 'int32', device: 'cuda' }) } : {}),
    };
    expect(explain(q, k, v, opts).selected).toBe('flash-cuda');
    expect(planFor(normalizeParams(q, k, v, opts)).kernel).toBe('fp8_d128_sm90ws');
    const out = sdpa(q, k, v, opts);
    expect(out.dtype).toBe('bfloat16');
    const got = out.toFloat64Array();
    const { exact, naive } = reference(x, shape, r);
    const err = scaledError(got, exact);
    const naiveErr = scaledError(naive, exact);
    expect(err).toBeLessThanOrEqual(2 * naiveErr + 2 * BF16_HALF_ULP);
    for (const t of [q, k, v, out]) t.dispose();
  });

  it.skipIf(!sm90)('NaN in a query row stays NaN in that row only', () => {
    const shape: Shape = [1, 2, 2, 40, 90, 64];
    const x = inputs(shape, 91);
    x.q[(1 * 40 + 3) * 64 + 5] = 0x7f; // head 1, row 3: e4m3's NaN
    const [q, k, v] = onDevice(x, shape);
    const out = sdpa(q, k, v, { descale: x.descale }).toFloat64Array();
    for (let row = 0; row < 80; row++) {
      const vals = out.subarray(row * 64, (row + 1) * 64);
      expect(vals.every((y) => Number.isNaN(y))).toBe(row === 43);
      if (row !== 43) expect(vals.some((y) => Number.isNaN(y))).toBe(false);
    }
  });

  it('declines what the fp8 kernel cannot run, with the reason', () => {
    const shape: Shape = [1, 2, 2, 64, 64, 72];
    const x = inputs(shape, 5);
    const [q, k, v] = onDevice(x, shape);
    const report = explain(q, k, v, { descale: x.descale, backends: ['flash-cuda'] });
    expect(report.selected).toBeNull();
    const text = JSON.stringify(report);
    expect(text).toContain('fp8Kernel');
    expect(text).toMatch(sm90 ? /head dims up to 128 in steps of 16/ : /sm90/);
    const withDropout = JSON.stringify(
      explain(q, k, v, { descale: x.descale, dropoutP: 0.1, backends: ['flash-cuda'] }),
    );
    expect(withDropout).toContain('dropout');
  });
});
