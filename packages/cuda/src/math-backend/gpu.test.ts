// cuda-math on a GPU, beyond the conformance suite: registration and explain's fallback label, the
// sizes fused kernels decline (zero lengths, Dv = 0, head dims up to the limit), non-contiguous last
// dims, NaN / Inf / fully masked rows as cpu-math, dropout's kept elements, scales beyond float32,
// varlen with empty sequences, broadcast dbias and a bitwise reproducible backward. Each result is
// compared with cpu-math on the same values (the same dtype on the CPU, so the roundings agree).
// Skipped with the reason printed where no CUDA device (or no built addon) is present.
import '@attn/cpu';
import {
  explain,
  formatReport,
  listBackends,
  normalizeParams,
  randn,
  sdpaBackward,
  sdpaForward,
  sdpaForwardAsync,
  sdpaVarlen,
  tensor,
  zeros,
  type DeviceLike,
  type FloatDType,
  type ForwardResult,
  type Gradients,
  type SdpaOptions,
  type Tensor,
} from '@attn/core';
import { describe, expect, it } from 'vitest';
import { announceSkip, gpu } from '../../test/gpu.js';
import { CUDA_MATH_PRIORITY, cudaMathBackend } from '../index.js';
import { mathLoad } from './binding.js';
import { CUDA_MATH_LIMITS } from './limits.js';
import { runBackward, runForward } from './run.js';

const ready = gpu && mathLoad().ok;
announceSkip('cuda-math');
if (gpu && !ready)
  console.log(`[@attn/cuda] cuda-math GPU suite skipped: ${(mathLoad() as { reason: string }).reason}`);

/** |got - ref| / max(1, max |ref|) allowed: float64 to rounding, halves one unit of their last place, float32 its sums over D = 1024. */
const TOL: Record<FloatDType, number> = { float64: 1e-12, float32: 1e-5, float16: 2e-3, bfloat16: 1.6e-2 };

/** Max relative error; NaN, or a different infinity, where ref has another value counts as Infinity. */
function relErr(got: Float64Array, ref: Float64Array): number {
  expect(got.length).toBe(ref.length);
  let e = 0;
  let m = 1;
  for (let i = 0; i < ref.length; i++) {
    const r = ref[i]!;
    const g = got[i]!;
    if (!Number.isFinite(r)) {
      if (!(Number.isNaN(r) ? Number.isNaN(g) : g === r)) return Infinity;
      continue;
    }
    if (!Number.isFinite(g)) return Infinity;
    e = Math.max(e, Math.abs(g - r));
    m = Math.max(m, Math.abs(r));
  }
  return e / m;
}

interface Made {
  readonly q: Tensor;
  readonly k: Tensor;
  readonly v: Tensor;
  readonly opts?: SdpaOptions;
}

/** The same call built on the CPU and on cuda:0 (`make` creates its tensors on the device it is given). */
type Maker = (device: DeviceLike) => Made;

interface Both {
  readonly gpu: ForwardResult;
  readonly cpu: ForwardResult;
  readonly gpuGrads: Gradients | null;
  readonly cpuGrads: Gradients | null;
}

function runBoth(make: Maker, dtype: FloatDType, grad = true): Both {
  const g = make('cuda');
  const c = make('cpu');
  const gpuRes = sdpaForward(g.q, g.k, g.v, { ...g.opts, backends: ['cuda-math'], requiresGrad: grad });
  const cpuRes = sdpaForward(c.q, c.k, c.v, { ...c.opts, backends: ['cpu-math'], requiresGrad: grad });
  expect(gpuRes.backend).toBe('cuda-math');
  if (!grad) return { gpu: gpuRes, cpu: cpuRes, gpuGrads: null, cpuGrads: null };
  const dout = randn(cpuRes.out.shape, { dtype, seed: 99 });
  return {
    gpu: gpuRes,
    cpu: cpuRes,
    gpuGrads: sdpaBackward(dout.to('cuda'), gpuRes),
    cpuGrads: sdpaBackward(dout, cpuRes),
  };
}

/** Forward (and backward) of cuda-math against cpu-math: every output within TOL, NaN/Inf patterns identical. */
function expectMatches(make: Maker, dtype: FloatDType, grad = true): Both {
  const r = runBoth(make, dtype, grad);
  const tol = TOL[dtype];
  expect(relErr(r.gpu.out.toFloat64Array(), r.cpu.out.toFloat64Array()), 'out').toBeLessThanOrEqual(tol);
  expect(relErr(r.gpu.logsumexp.toFloat64Array(), r.cpu.logsumexp.toFloat64Array()), 'logsumexp').toBeLessThanOrEqual(
    Math.max(tol, 2e-7),
  );
  if (r.gpuGrads && r.cpuGrads) {
    // Gradients sum many products: a few units of the last place more than the forward.
    for (const name of ['dq', 'dk', 'dv', 'dbias'] as const) {
      const a = r.gpuGrads[name];
      const b = r.cpuGrads[name];
      expect(a === undefined, `${name} present on one side only`).toBe(b === undefined);
      if (a && b) expect(relErr(a.toFloat64Array(), b.toFloat64Array()), name).toBeLessThanOrEqual(8 * tol);
    }
  }
  return r;
}

const rand = (device: DeviceLike, dtype: FloatDType, seed: number) => (shape: number[]) =>
  randn(shape, { device, dtype, seed: seed++ });

describe.skipIf(!ready)('cuda-math on a GPU', () => {
  it('is registered by @attn/cuda as the lowest-priority CUDA backend, and explain labels it the fallback', () => {
    const cudaBackends = listBackends('cuda');
    const mine = cudaBackends.find((b) => b.name === 'cuda-math');
    expect(mine?.priority).toBe(CUDA_MATH_PRIORITY);
    expect(Math.min(...cudaBackends.map((b) => b.priority))).toBe(CUDA_MATH_PRIORITY);
    expect(cudaMathBackend.fallback).toBe(true);
    const q = randn([1, 2, 3, 8], { device: 'cuda', dtype: 'float64' });
    const report = explain(q, q, q);
    expect(report.selected).toBe('cuda-math');
    expect(report.candidates.at(-1)).toMatchObject({ backend: 'cuda-math', fallback: true, selected: true });
    const text = formatReport(report);
    expect(text).toContain("attn: cuda-math runs this call on cuda:0, the device's fallback.");
    expect(text).toContain(`cuda-math (priority ${CUDA_MATH_PRIORITY}, fallback): selected`);
    expect(cudaMathBackend.buildInfo?.()).toMatchObject({ fallback: true, maxHeadDim: CUDA_MATH_LIMITS.maxHeadDim });
  });

  for (const dtype of ['float64', 'float32', 'float16', 'bfloat16'] as const) {
    it(`${dtype}: every feature at once, forward and backward, as cpu-math`, () => {
      expectMatches((device) => {
        const r = rand(device, dtype, 1);
        const mask = r([2, 9, 7]).transpose(1, 2).unsqueeze(1); // [2, 1, 7, 9], strided along keys
        return {
          q: r([2, 4, 7, 24]).transpose(1, 2).contiguous().transpose(1, 2),
          k: r([2, 9, 2, 24]).transpose(1, 2),
          v: r([2, 2, 9, 40]),
          opts: {
            enableGqa: true,
            isCausal: true,
            alignment: 'lowerRight',
            window: [5, 1],
            softcap: 3,
            alibiSlopes: tensor(Float32Array.of(0.5, 0.25, 0.125, 0.0625), [4], { device }),
            attnMask: mask,
            dropoutP: 0.2,
            dropoutSeed: 12345n,
            dropoutOffset: 7,
            scale: 0.3,
          },
        };
      }, dtype);
    });
  }

  it('zero lengths and Dv = 0: empty outputs, every row of Sk = 0 gives 0 and logsumexp -inf, gradients 0', () => {
    for (const [B, Sq, Sk, Dv] of [
      [0, 5, 5, 8],
      [2, 0, 5, 8],
      [2, 5, 0, 8],
      [2, 5, 6, 0],
    ] as const) {
      const r = expectMatches((device) => {
        const x = rand(device, 'float32', 3);
        return {
          q: x([B, 2, Sq, 8]),
          k: x([B, 2, Sk, 8]),
          v: x([B, 2, Sk, Dv]),
          opts: { attnMask: x([Sq, Sk]), isCausal: true },
        };
      }, 'float32');
      if (Sk === 0 && B > 0) {
        expect([...r.gpu.out.toFloat64Array()].every((x) => x === 0)).toBe(true);
        expect([...r.gpu.logsumexp.toFloat64Array()].every((x) => x === -Infinity)).toBe(true);
      }
      if (Sq === 0 || Dv === 0) expect([...r.gpuGrads!.dk.toFloat64Array()].every((x) => x === 0)).toBe(true);
    }
  });

  it('head dims up to the limit: 512 and 1024 in float64 (one-key tiles), 1024 with Dv 8 in float32', () => {
    for (const [dtype, D, Dv] of [
      ['float64', 512, 512],
      ['float64', 1024, 1024],
      ['float32', 1024, 8],
    ] as const) {
      expectMatches((device) => {
        const x = rand(device, dtype, 5);
        return {
          q: x([1, 2, 3, D]),
          k: x([1, 2, 70, D]),
          v: x([1, 2, 70, Dv]),
          opts: { isCausal: true, alignment: 'lowerRight' },
        };
      }, dtype);
    }
  });

  it('takes a last dim that is not contiguous', () => {
    expectMatches((device) => {
      const x = rand(device, 'float32', 7);
      return {
        q: x([2, 3, 16, 5]).transpose(2, 3),
        k: x([2, 3, 16, 9]).transpose(2, 3),
        v: x([2, 3, 6, 9]).transpose(2, 3),
      };
    }, 'float32');
  });

  it('NaN in, NaN out; fully masked rows give 0 and -inf; a masked key with an infinite value gives NaN, as cpu-math', () => {
    for (const dtype of ['float64', 'float16'] as const) {
      const r = expectMatches(
        (device) => {
          const qv = randn([1, 1, 4, 8], { dtype: 'float64', seed: 11 }).toFloat64Array();
          qv[8] = NaN; // row 1
          const vv = randn([1, 1, 6, 8], { dtype: 'float64', seed: 12 }).toFloat64Array();
          vv[5 * 8] = Infinity; // key 5
          const keep = new Uint8Array(4 * 6).fill(1);
          keep.fill(0, 2 * 6, 3 * 6); // row 2 sees nothing
          keep[3 * 6 + 5] = 0; // row 3 masks key 5 (whose value is infinite)
          return {
            q: tensor(qv, [1, 1, 4, 8], { dtype, device }),
            k: randn([1, 1, 6, 8], { dtype, device, seed: 13 }),
            v: tensor(vv, [1, 1, 6, 8], { dtype, device }),
            opts: { attnMask: tensor(keep, [4, 6], { dtype: 'bool', device }) },
          };
        },
        dtype,
        false,
      );
      const out = r.gpu.out.toFloat64Array();
      const lse = r.gpu.logsumexp.toFloat64Array();
      expect(lse[1]).toBeNaN();
      expect(lse[2]).toBe(-Infinity);
      expect(out.subarray(16, 24).every((x) => x === 0)).toBe(true);
      expect(out.subarray(24, 32).some((x) => Number.isNaN(x))).toBe(true);
    }
  });

  it("dropout keeps exactly cpu-math's elements (Philox mapping), forward and backward", () => {
    for (const [seed, offset] of [
      [1n, 0],
      [2n ** 64n - 1n, 2 ** 32 - 1],
    ] as const) {
      expectMatches((device) => {
        const x = rand(device, 'float64', 21);
        return {
          q: x([2, 3, 33, 8]),
          k: x([2, 3, 37, 8]),
          v: x([2, 3, 37, 8]),
          opts: { dropoutP: 0.5, dropoutSeed: seed, dropoutOffset: offset },
        };
      }, 'float64');
    }
  });

  it('a row whose softmax sits on one key has dS = 0 exactly, with dropout, at a scale (1e39) that would magnify any residue', () => {
    // Scale 1e39 makes every row's P one-hot; dropout's Z dP then is a rounded product, and dS = P (Z dP - delta)
    // is 0 only if delta sums the same rounded products (a fused Z * dP - delta leaves ~1e-16, times 1e39).
    const r = expectMatches((device) => {
      const x = rand(device, 'float64', 41);
      return {
        q: x([2, 2, 7, 8]),
        k: x([2, 2, 16, 8]),
        v: x([2, 2, 16, 8]),
        opts: { scale: 1e39, dropoutP: 0.2, dropoutSeed: 7n },
      };
    }, 'float64');
    for (const name of ['dq', 'dk'] as const)
      expect(
        r.gpuGrads![name].toFloat64Array().every((g) => g === 0),
        name,
      ).toBe(true);
  });

  it('accumulates in float64 where scale or softcap overflow float32, as cpu-math computes them', () => {
    const make: Maker = (device) => {
      const x = rand(device, 'float32', 31);
      return { q: x([1, 2, 5, 8]), k: x([1, 2, 6, 8]), v: x([1, 2, 6, 8]), opts: { scale: 0.5, softcap: 1e39 } };
    };
    expectMatches(make, 'float32');
    const g = make('cuda');
    expect(runForward(normalizeParams(g.q, g.k, g.v, g.opts)).kernel).toBe('forward_f32_acc64');
    expect(runForward(normalizeParams(g.q, g.k, g.v, { softcap: 3e38 })).kernel).toBe('forward_f32_acc32');
  });

  it('varlen with empty sequences, GQA, causal, ALiBi per sequence and dropout, forward and backward', () => {
    for (const dtype of ['float64', 'bfloat16'] as const) {
      const lensQ = [3, 0, 6, 1];
      const lensK = [5, 4, 0, 7];
      const cu = (l: number[]) =>
        Int32Array.from([0, ...l.map((_, i) => l.slice(0, i + 1).reduce((a, b) => a + b, 0))]);
      const make: Maker = (device) => {
        const x = rand(device, dtype, 41);
        return {
          q: x([10, 4, 16]),
          k: x([16, 2, 16]),
          v: x([16, 2, 12]),
          opts: {
            enableGqa: true,
            isCausal: true,
            alignment: 'lowerRight',
            dropoutP: 0.25,
            dropoutSeed: 5n,
            alibiSlopes: randn([4, 4], { device, seed: 3 }).transpose(0, 1),
          },
        };
      };
      const run = (device: DeviceLike, backend: string) => {
        const m = make(device);
        const opts = {
          ...m.opts,
          cuSeqlensQ: tensor(cu(lensQ), [5], { dtype: 'int32', device }),
          cuSeqlensK: tensor(cu(lensK), [5], { dtype: 'int32', device }),
          maxSeqlenQ: 6,
          maxSeqlenK: 9,
          backends: [backend],
          requiresGrad: true,
        };
        const f = sdpaVarlen(m.q, m.k, m.v, opts as Parameters<typeof sdpaVarlen>[3]);
        const dout = randn(f.out.shape, { dtype, seed: 77 });
        return { f, g: sdpaBackward(device === 'cpu' ? dout : dout.to('cuda'), f) };
      };
      const a = run('cuda', 'cuda-math');
      const b = run('cpu', 'cpu-math');
      const tol = TOL[dtype];
      expect(relErr(a.f.out.toFloat64Array(), b.f.out.toFloat64Array())).toBeLessThanOrEqual(tol);
      expect(relErr(a.f.logsumexp.toFloat64Array(), b.f.logsumexp.toFloat64Array())).toBeLessThanOrEqual(
        Math.max(tol, 2e-7),
      );
      for (const name of ['dq', 'dk', 'dv'] as const) {
        expect(relErr(a.g[name].toFloat64Array(), b.g[name].toFloat64Array()), name).toBeLessThanOrEqual(8 * tol);
      }
    }
  });

  it('sequsedK: each row as the call on its first keys; unused keys get zero gradients; a row with none gives 0 and -inf', () => {
    for (const dtype of ['float64', 'float16'] as const) {
      const r = expectMatches((device) => {
        const x = rand(device, dtype, 81);
        return {
          q: x([3, 2, 6, 8]),
          k: x([3, 2, 11, 8]),
          v: x([3, 2, 11, 8]),
          opts: {
            sequsedK: tensor(Int32Array.of(4, 0, 11), [3], { dtype: 'int32', device }),
            isCausal: true,
            alignment: 'lowerRight',
            attnMask: x([6, 11]),
            dropoutP: 0.2,
            dropoutSeed: 9n,
          },
        };
      }, dtype);
      const dk = r.gpuGrads!.dk.toFloat64Array();
      // Row 0 uses keys 0..3: keys 4..10 of both heads have zero gradient; row 1 uses none.
      for (const h of [0, 1])
        expect(dk.subarray((0 * 2 + h) * 88 + 4 * 8, (0 * 2 + h + 1) * 88).every((x) => x === 0)).toBe(true);
      expect(dk.subarray(2 * 88, 4 * 88).every((x) => x === 0)).toBe(true);
      const lse = r.gpu.logsumexp.toFloat64Array();
      expect(lse.subarray(12, 24).every((x) => x === -Infinity)).toBe(true);
    }
  });

  it('paged K/V (blockTable): the call on the K/V gathered from shuffled blocks, every dtype, GQA, causal, ALiBi, sequsedK', () => {
    for (const [dtype, bs] of [
      ['float64', 1],
      ['float32', 4],
      ['float16', 16],
      ['bfloat16', 3],
    ] as const) {
      const lensQ = [2, 1, 5];
      const lensK = [9, 0, 14];
      const used = lensK.map((n) => Math.ceil(n / bs));
      const maxBlocks = Math.max(...used) + 1;
      const numBlocks = used.reduce((a, b) => a + b, 0) + 2;
      // Blocks of each sequence in reverse pool order; the spare blocks hold NaN (never read).
      const table = new Int32Array(3 * maxBlocks).fill(-1);
      let next = numBlocks - 1;
      lensK.forEach((_, b) => {
        for (let i = 0; i < used[b]!; i++) table[b * maxBlocks + i] = next--;
      });
      const x = rand('cpu', dtype, 91);
      const [q, k, v] = [x([8, 4, 16]), x([23, 2, 16]), x([23, 2, 12])];
      const kd = k.toFloat64Array();
      const vd = v.toFloat64Array();
      const kPool = new Float64Array(numBlocks * bs * 32).fill(Number.NaN);
      const vPool = new Float64Array(numBlocks * bs * 24).fill(Number.NaN);
      let start = 0;
      lensK.forEach((n, b) => {
        for (let j = 0; j < n; j++) {
          const row = table[b * maxBlocks + Math.floor(j / bs)]! * bs + (j % bs);
          kPool.set(kd.subarray((start + j) * 32, (start + j + 1) * 32), row * 32);
          vPool.set(vd.subarray((start + j) * 24, (start + j + 1) * 24), row * 24);
        }
        start += n;
      });
      const cu = (l: number[]) =>
        Int32Array.from([0, ...l.map((_, i) => l.slice(0, i + 1).reduce((a, c) => a + c, 0))]);
      const opts = (device: DeviceLike) => ({
        cuSeqlensQ: tensor(cu(lensQ), [4], { dtype: 'int32', device }),
        cuSeqlensK: tensor(cu(lensK), [4], { dtype: 'int32', device }),
        maxSeqlenQ: 5,
        maxSeqlenK: 14,
        enableGqa: true,
        isCausal: true,
        alignment: 'lowerRight' as const,
        alibiSlopes: randn([4], { device, seed: 5 }),
        sequsedK: tensor(Int32Array.of(9, 0, 11), [3], { dtype: 'int32', device }),
      });
      const got = sdpaVarlen(
        q.to('cuda'),
        tensor(kPool, [numBlocks, bs, 2, 16], { dtype, device: 'cuda' }),
        tensor(vPool, [numBlocks, bs, 2, 12], { dtype, device: 'cuda' }),
        {
          ...opts('cuda'),
          blockTable: tensor(table, [3, maxBlocks], { dtype: 'int32', device: 'cuda' }),
          backends: ['cuda-math'],
        },
      );
      const want = sdpaVarlen(q, k, v, { ...opts('cpu'), backends: ['cpu-math'] });
      expect(relErr(got.out.toFloat64Array(), want.out.toFloat64Array()), dtype).toBeLessThanOrEqual(TOL[dtype]);
      expect(relErr(got.logsumexp.toFloat64Array(), want.logsumexp.toFloat64Array()), dtype).toBeLessThanOrEqual(
        Math.max(TOL[dtype], 2e-7),
      );
    }
  });

  it('dbias of masks broadcast along any dims (rank 0 included), in the mask dtype', () => {
    for (const [dtype, maskDtype, shape] of [
      ['float64', 'float64', [9]],
      ['float32', 'float32', [2, 1, 7, 1]],
      ['float16', 'float32', [1, 3, 1, 9]],
      ['bfloat16', 'bfloat16', [7, 9]],
      ['float32', 'float32', []], // a rank-0 mask: one bias for every score
    ] as const) {
      const r = expectMatches((device) => {
        const x = rand(device, dtype, 51);
        return {
          q: x([2, 3, 7, 8]),
          k: x([2, 3, 9, 8]),
          v: x([2, 3, 9, 8]),
          opts: { attnMask: randn([...shape], { device, dtype: maskDtype, seed: 8 }), dropoutP: 0.1, dropoutSeed: 3n },
        };
      }, dtype);
      expect(r.gpuGrads!.dbias!.dtype).toBe(maskDtype);
      expect(r.gpuGrads!.dbias!.shape).toEqual(shape);
    }
  });

  it('backward is bitwise reproducible (no atomics), and runs the row, key and dbias kernels', () => {
    const x = rand('cuda', 'float32', 61);
    const q = x([2, 4, 40, 16]);
    const k = x([2, 2, 70, 16]);
    const v = x([2, 2, 70, 16]);
    const opts: SdpaOptions = {
      enableGqa: true,
      attnMask: x([40, 70]),
      deterministic: true,
      requiresGrad: true,
      backends: ['cuda-math'],
    };
    const f = sdpaForward(q, k, v, opts);
    const dout = x([2, 4, 40, 16]);
    const a = sdpaBackward(dout, f);
    const b = sdpaBackward(dout, f);
    for (const name of ['dq', 'dk', 'dv', 'dbias'] as const)
      expect(a[name]!.toFloat64Array()).toEqual(b[name]!.toFloat64Array());
    const { backends: _restriction, ...rest } = opts;
    const p = normalizeParams(q, k, v, rest);
    expect(runForward(p).kernel).toBe('forward_f32_acc32');
    expect(runBackward(p, { out: f.out, logsumexp: f.logsumexp }, dout).kernels).toEqual([
      'backward_rows_f32_acc32',
      'backward_keys_f32_acc32',
      'backward_dbias_f32_acc32',
    ]);
  });

  it('runs through sdpaForwardAsync as through sdpaForward', async () => {
    const x = rand('cuda', 'float64', 71);
    const [q, k, v] = [x([1, 2, 5, 8]), x([1, 2, 6, 8]), x([1, 2, 6, 8])];
    const a = await sdpaForwardAsync(q, k, v, { backends: ['cuda-math'] });
    const b = sdpaForward(q, k, v, { backends: ['cuda-math'] });
    expect(a.out.toFloat64Array()).toEqual(b.out.toFloat64Array());
    expect(zeros([1], { device: 'cuda' }).toFloat64Array()).toEqual(Float64Array.of(0));
  });
});
