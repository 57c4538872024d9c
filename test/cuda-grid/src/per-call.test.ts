// The per-call options on a CUDA device, every CUDA backend imported: `out` written in place by each
// backend that takes it (flash-cuda, cuda-math, memeff-cuda), index values left on the device
// (indexValuesOnDevice: flash-cuda reads and clamps them, the others decline), and repeated calls of one
// signature (the call cache's path) giving each call's own result. Each against cpu-math on the same
// rounded inputs. Without a device the suite is skipped with the reason printed; ATTN_REQUIRE_GPU=1
// turns the skip into a failure.
import '@attn/cpu';
import '@attn/cutlass-memeff';
import '@attn/flash-cuda';
import {
  envTestGate,
  explainVarlen,
  type FloatDType,
  full,
  randn,
  sdpa,
  sdpaForward,
  sdpaVarlen,
  type Tensor,
  tensor,
  type VarlenOptions,
} from '@attn/core';
import { scaledMaxError as relErr } from '@attn/core/testing';
import { cudaMathBackend } from '@attn/cuda';
import { describe, expect, it } from 'vitest';

const av = cudaMathBackend.availability();
if (!av.ok) console.log(`per-call options on cuda:0 skipped: ${av.reason}`);
const TOL = 3e-2; // half types, relative to the largest reference element

const cpu = (t: Tensor | null | undefined) => (t ? t.to('cpu') : t);
const i32 = (xs: readonly number[], device: 'cpu' | 'cuda') => tensor([...xs], [xs.length], { dtype: 'int32', device });

function offsets(lengths: readonly number[]): number[] {
  const o = [0];
  for (const n of lengths) o.push(o[o.length - 1]! + n);
  return o;
}

describe.skipIf(!av.ok && !envTestGate('ATTN_REQUIRE_GPU'))('per-call options on cuda:0', () => {
  it('has a device (ATTN_REQUIRE_GPU=1)', () => {
    expect(av.ok, av.ok ? '' : av.reason).toBe(true);
  });

  const dense: Array<[string, FloatDType, [number, number, number, number, number, number]]> = [
    ['flash-cuda', 'bfloat16', [1, 1, 16, 16, 64, 64]],
    ['flash-cuda', 'float16', [2, 3, 17, 33, 72, 72]],
    ['cuda-math', 'float32', [2, 3, 17, 1, 8, 8]],
    ['memeff-cuda', 'float32', [2, 3, 17, 33, 72, 40]],
    ['memeff-cuda', 'bfloat16', [1, 2, 1, 1000, 256, 256]],
  ];
  for (const [backend, dtype, [b, h, sq, sk, d, dv]] of dense) {
    it(`${backend} writes a dense ${dtype} [${b}, ${h}, ${sq}, ${sk}, ${d}, ${dv}] call into out (NaN-filled), as cpu-math`, () => {
      const o = { dtype, device: 'cuda' as const };
      const q = randn([b, h, sq, d], { ...o, seed: 1 });
      const k = randn([b, h, sk, d], { ...o, seed: 2 });
      const v = randn([b, h, sk, dv], { ...o, seed: 3 });
      const out = full([b, h, sq, dv], NaN, o);
      const res = sdpaForward(q, k, v, { out, isCausal: sq > 1, alignment: 'lowerRight', backends: [backend] });
      expect(res.out).toBe(out);
      const ref = sdpa(cpu(q)!, cpu(k)!, cpu(v)!, {
        isCausal: sq > 1,
        alignment: 'lowerRight',
        backends: ['cpu-math'],
      });
      expect(relErr(out, ref)).toBeLessThan(TOL);
      if (d === dv)
        expect(() => sdpa(q, k, v, { out: q, backends: [backend] })).toThrow(
          expect.objectContaining({ code: 'ATTN_OUT' }),
        );
    });
  }

  for (const backend of ['flash-cuda', 'cuda-math', 'memeff-cuda']) {
    it(`${backend} writes a varlen call into out, as cpu-math`, () => {
      const lengthsQ = [3, 1, 17];
      const lengthsK = [40, 1, 17];
      const o = { dtype: 'float16' as const, device: 'cuda' as const };
      const q = randn([21, 4, 64], { ...o, seed: 4 });
      const k = randn([58, 2, 64], { ...o, seed: 5 });
      const v = randn([58, 2, 64], { ...o, seed: 6 });
      const opts = (device: 'cpu' | 'cuda'): VarlenOptions => ({
        cuSeqlensQ: i32(offsets(lengthsQ), device),
        cuSeqlensK: i32(offsets(lengthsK), device),
        maxSeqlenQ: 17,
        maxSeqlenK: 40,
        enableGqa: true,
        isCausal: true,
        alignment: 'lowerRight',
      });
      const out = full([21, 4, 64], NaN, o);
      expect(sdpaVarlen(q, k, v, { ...opts('cuda'), out, backends: [backend] }).out).toBe(out);
      const ref = sdpaVarlen(cpu(q)!, cpu(k)!, cpu(v)!, { ...opts('cpu'), backends: ['cpu-math'] });
      expect(relErr(out, ref.out)).toBeLessThan(TOL);
    });
  }

  it('flash-cuda reads varlen offsets left on the device (decode-like, unequal lengths), and repeated calls of the signature give each call its own result', () => {
    const lengthsK = [8192, 1, 300, 4096, 0, 77, 5000, 2048];
    const B = lengthsK.length;
    const o = { dtype: 'bfloat16' as const, device: 'cuda' as const };
    const total = lengthsK.reduce((a, n) => a + n, 0);
    const cuQ = i32(offsets(lengthsK.map(() => 1)), 'cuda');
    const cuK = i32(offsets(lengthsK), 'cuda');
    const base = { cuSeqlensQ: cuQ, cuSeqlensK: cuK, maxSeqlenQ: 1, maxSeqlenK: 8192, enableGqa: true };
    for (let step = 0; step < 3; step++) {
      const q = randn([B, 32, 128], { ...o, seed: 10 + step });
      const k = randn([total, 8, 128], { ...o, seed: 20 + step });
      const v = randn([total, 8, 128], { ...o, seed: 30 + step });
      const out = full([B, 32, 128], NaN, o);
      const res = sdpaVarlen(q, k, v, { ...base, indexValuesOnDevice: true, out });
      expect(res.backend).toBe('flash-cuda');
      expect(res.out).toBe(out);
      const ref = sdpaVarlen(cpu(q)!, cpu(k)!, cpu(v)!, {
        ...base,
        cuSeqlensQ: cpu(cuQ)!,
        cuSeqlensK: cpu(cuK)!,
        backends: ['cpu-math'],
      });
      expect(relErr(out, ref.out), `step ${step}`).toBeLessThan(TOL);
      expect(relErr(res.logsumexp, ref.logsumexp), `step ${step}`).toBeLessThan(TOL);
    }
    // cuda-math plans from host copies and memeff does not clamp: both decline, and say why.
    const q = randn([B, 32, 128], o);
    const k = randn([total, 8, 128], o);
    const report = explainVarlen(q, k, k, { ...base, indexValuesOnDevice: true });
    const reasons = (name: string) => report.candidates.find((c) => c.backend === name)!.reasons.map((r) => r.rule);
    expect(reasons('cuda-math')).toContain('indexValuesOnHost');
    expect(reasons('memeff-cuda')).toContain('noUncheckedIndexValues');
  });

  it('flash-cuda clamps dense sequsedK values left on the device: a length past the keys reads all of them', () => {
    const o = { dtype: 'bfloat16' as const, device: 'cuda' as const };
    const q = randn([2, 4, 5, 64], { ...o, seed: 40 });
    const k = randn([2, 4, 300, 64], { ...o, seed: 41 });
    const v = randn([2, 4, 300, 64], { ...o, seed: 42 });
    const got = sdpa(q, k, v, { sequsedK: i32([100000, 120], 'cuda'), indexValuesOnDevice: true });
    const ref = sdpa(cpu(q)!, cpu(k)!, cpu(v)!, { sequsedK: i32([300, 120], 'cpu'), backends: ['cpu-math'] });
    expect(relErr(got, ref)).toBeLessThan(TOL);
    // Without the option the value is checked on the host.
    expect(() => sdpa(q, k, v, { sequsedK: i32([100000, 120], 'cuda') })).toThrow(
      expect.objectContaining({ code: 'ATTN_SEQUSED_K' }),
    );
  });
});
