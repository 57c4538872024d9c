// GPU checks beyond the conformance suite: both kernel paths (forward and backward) against cpu-math, the paths chosen,
// bitwise-reproducible deterministic backward, query splits, broadcast dbias, fully masked rows.
// Skipped with the reason printed where no CUDA device (or no built addon) is present.
import '@attn/cpu';
import {
  getDeviceRuntime,
  normalizeParams,
  normalizeVarlenParams,
  randn,
  sdpaBackward,
  sdpaForward,
  sdpaVarlen,
  tensor,
  type FloatDType,
  type SdpaOptions,
  type Tensor,
} from '@attn/core';
import { expect, it } from 'vitest';
import { gpuEnv } from './gpu-env.js';
import { runBackward, runForward, type KernelPath } from './index.js';
import { describeWhereRunnable } from '@attn/conformance';

const env = gpuEnv();

const TOL: Record<FloatDType, number> = { float64: 0, float32: 2e-5, float16: 4e-3, bfloat16: 3e-2 };
const GRAD_TOL: Record<FloatDType, number> = { float64: 0, float32: 1e-4, float16: 1.5e-2, bfloat16: 8e-2 };

/** max |a - b| / max(1, max |b|); NaN, or non-finite where b is finite, counts as Infinity. */
function relErr(a: Float64Array, b: Float64Array): number {
  let e = 0,
    m = 1;
  for (let i = 0; i < b.length; i++) {
    if (Number.isNaN(a[i]!) || Number.isFinite(a[i]!) !== Number.isFinite(b[i]!)) return Infinity;
    if (!Number.isFinite(b[i]!)) {
      if (a[i] !== b[i]) return Infinity;
      continue;
    }
    e = Math.max(e, Math.abs(a[i]! - b[i]!));
    m = Math.max(m, Math.abs(b[i]!));
  }
  return e / m;
}

interface Case {
  dtype: FloatDType;
  shape: [number, number, number, number, number, number, number]; // B, Hq, Hk, Sq, Sk, D, Dv
  opts?: SdpaOptions;
  /** dtype: of an additive mask (default the case's). */
  mask?: { shape: number[]; kind: 'bool' | 'additive'; dtype?: FloatDType };
  /** ALiBi slopes [Hq] or [B, Hq] (made on the host, moved to the GPU for the call). */
  alibi?: 'perHead' | 'perBatchHead';
  /** Keys used per batch row. */
  sequsedK?: number[];
  path?: KernelPath;
}

/** The geometric ALiBi slopes, varied per batch row for [B, Hq]. */
function slopes(c: Case): Tensor | null {
  if (!c.alibi) return null;
  const [B, Hq] = c.shape;
  const rows = c.alibi === 'perBatchHead' ? B : 1;
  const x = Array.from(
    { length: rows * Hq },
    (_, n) => 2 ** ((-8 * ((n % Hq) + 1)) / Hq) * (1 + 0.25 * Math.floor(n / Hq)),
  );
  return tensor(x, c.alibi === 'perBatchHead' ? [B, Hq] : [Hq], { dtype: 'float32' });
}

let seed = 1;
function inputs(c: Case) {
  const [B, Hq, Hk, Sq, Sk, D, Dv] = c.shape;
  const cpu = (shape: number[], dtype: FloatDType = c.dtype) => randn(shape, { dtype, seed: seed++ });
  const q = cpu([B, Hq, Sq, D]),
    k = cpu([B, Hk, Sk, D]),
    v = cpu([B, Hk, Sk, Dv]),
    dout = cpu([B, Hq, Sq, Dv]);
  let mask: Tensor | null = null;
  if (c.mask?.kind === 'additive') mask = cpu(c.mask.shape, c.mask.dtype);
  if (c.mask?.kind === 'bool') {
    const r = cpu(c.mask.shape, 'float32').toFloat32Array();
    mask = tensor(
      Array.from(r, (x, i) => (Math.floor(i / c.mask!.shape.at(-1)!) % 4 === 1 ? 0 : x > -0.8 ? 1 : 0)),
      c.mask.shape,
      { dtype: 'bool' },
    );
  }
  return { q, k, v, dout, mask };
}

function check(c: Case, backward = true) {
  const { q, k, v, dout, mask } = inputs(c);
  const opts: SdpaOptions = { enableGqa: c.shape[1] !== c.shape[2], requiresGrad: true, ...c.opts };
  const alibi = slopes(c);
  const used = c.sequsedK ? tensor(c.sequsedK, [c.sequsedK.length], { dtype: 'int32' }) : null;
  const p = normalizeParams(q.to('cuda'), k.to('cuda'), v.to('cuda'), {
    ...opts,
    attnMask: mask?.to('cuda') ?? null,
    alibiSlopes: alibi?.to('cuda') ?? null,
    sequsedK: used?.to('cuda') ?? null,
  });
  const f64 = (t: Tensor) => t.toDType('float64');
  const ref = sdpaForward(f64(q), f64(k), f64(v), {
    ...opts,
    attnMask: mask ? (mask.dtype === 'bool' ? mask : f64(mask)) : null,
    alibiSlopes: alibi,
    sequsedK: used,
    backends: ['cpu-math'],
  });
  const fwd = runForward(p, c.path ?? 'auto');
  expect(relErr(fwd.outputs.out.toFloat64Array(), ref.out.toFloat64Array()), `out (${fwd.kernel})`).toBeLessThanOrEqual(
    TOL[c.dtype],
  );
  expect(relErr(fwd.outputs.logsumexp.toFloat64Array(), ref.logsumexp.toFloat64Array()), 'lse').toBeLessThanOrEqual(
    1e-4,
  );
  if (!backward) return { fwd, bwd: null };
  const bwd = runBackward(p, fwd.outputs, dout.to('cuda'), c.path === 'simt' ? 'simt' : 'auto');
  const g = sdpaBackward(f64(dout), ref);
  for (const n of ['dq', 'dk', 'dv', 'dbias'] as const) {
    if (!g[n]) continue;
    expect(
      relErr(bwd.gradients[n]!.toFloat64Array(), g[n]!.toFloat64Array()),
      `${n} (${bwd.kernels.join('+')})`,
    ).toBeLessThanOrEqual(GRAD_TOL[c.dtype]);
  }
  return { fwd, bwd };
}

describeWhereRunnable('memeff-cuda on the GPU', env.ok ? null : env.reason, () => {
  it('takes the tensor-core path for fp16/bf16 with head dims multiple of 8, FMA otherwise', () => {
    const bf = check({ dtype: 'bfloat16', shape: [2, 2, 2, 70, 90, 64, 64] });
    expect(bf.fwd.kernel).toBe('fwd_mma_bf16_d64');
    expect(bf.bwd!.kernels[0]).toBe('bwd_mma_bf16_d64');
    // Head dims above 128 take the column-split tensor-core backward (the d256 bucket) where its 207 KB
    // of shared memory fit (sm90's and sm100's 227 KB; not sm80's 163 KB or sm120's 99 KB), the FMA
    // backward elsewhere.
    const { major } = getDeviceRuntime('cuda')!.properties(0);
    const d256Bwd = major === 9 || major === 10 ? 'bwd_mma_fp16_d256' : 'bwd_simt_fp16_d128';
    expect(check({ dtype: 'float16', shape: [1, 2, 2, 40, 50, 256, 256] }).bwd!.kernels[0]).toBe(d256Bwd);
    expect(check({ dtype: 'float16', shape: [1, 2, 2, 70, 90, 72, 40] }, false).fwd.kernel).toBe('fwd_mma_fp16_d128');
    // D == Dv 160 or 192 without features: the exact head dim's forward (mma_traits.h); other head dims above 128,
    // and calls with features, the d256 bucket's.
    expect(
      check({ dtype: 'bfloat16', shape: [1, 2, 2, 130, 97, 160, 160], opts: { isCausal: true } }, false).fwd.kernel,
    ).toBe('fwd_mma_bf16_d160');
    expect(
      check(
        { dtype: 'float16', shape: [2, 2, 1, 70, 150, 192, 192], mask: { kind: 'additive', shape: [2, 1, 70, 150] } },
        false,
      ).fwd.kernel,
    ).toBe('fwd_mma_fp16_d192');
    expect(check({ dtype: 'bfloat16', shape: [1, 2, 2, 70, 90, 160, 128] }, false).fwd.kernel).toBe(
      'fwd_mma_bf16_d256',
    );
    expect(check({ dtype: 'float16', shape: [1, 2, 2, 70, 90, 176, 176] }, false).fwd.kernel).toBe('fwd_mma_fp16_d256');
    expect(
      check({ dtype: 'float16', shape: [1, 2, 2, 100, 200, 192, 192], opts: { window: [40, 8] } }, false).fwd.kernel,
    ).toBe('fwd_mma_fp16_d256');
    expect(check({ dtype: 'float16', shape: [1, 2, 2, 70, 90, 36, 36] }, false).fwd.kernel).toBe('fwd_simt_fp16_d64');
    // fp32: 3xTF32 tensor cores on sm90 (dispatch.cu's fp32_tensor_cores_on), the forward on wgmma with an
    // sm_90a build and on mma.sync without; FMA on every other arch. Deterministic mode takes the same main
    // kernel (its dQ pass is the FMA one).
    const fp32Fwd = major === 9 ? ['fwd_tf32_wgmma_fp32_d64', 'fwd_tf32_fp32_d64'] : ['fwd_simt_fp32_d64'];
    expect(fp32Fwd).toContain(check({ dtype: 'float32', shape: [1, 2, 2, 70, 90, 64, 64] }, false).fwd.kernel);
    const tcBwd = [major === 9 ? 'bwd_tf32_fp32_d64' : 'bwd_simt_fp32_d64'];
    expect(tcBwd).toContain(check({ dtype: 'float32', shape: [1, 2, 2, 70, 90, 64, 64] }).bwd!.kernels[0]);
    const det = check({ dtype: 'float32', shape: [1, 2, 2, 70, 90, 64, 64], opts: { deterministic: true } });
    expect(tcBwd).toContain(det.bwd!.kernels[0]);
  });

  it('float32: causal, bias, dropout, GQA, odd head dims agree with cpu-math on either fp32 forward', () => {
    check({ dtype: 'float32', shape: [2, 4, 2, 65, 130, 64, 64], opts: { isCausal: true } });
    check({ dtype: 'float32', shape: [1, 2, 2, 70, 90, 36, 100] });
    check({
      dtype: 'float32',
      shape: [2, 2, 1, 70, 128, 64, 64],
      mask: { kind: 'additive', shape: [2, 70, 128] },
      opts: { dropoutP: 0.2, dropoutSeed: 7n },
    });
  });

  it('stages 16-byte-row masks through shared memory and sums a batch-broadcast dbias with atomics', () => {
    for (const dtype of ['float16', 'bfloat16'] as const) {
      check({
        dtype,
        shape: [2, 4, 2, 150, 144, 128, 128],
        mask: { kind: 'additive', shape: [4, 150, 144] },
        opts: { isCausal: true },
      });
      check({ dtype, shape: [2, 2, 2, 90, 160, 64, 64], mask: { kind: 'bool', shape: [2, 1, 90, 160] } });
      // The interior tiles' one-FFMA bias step: a row-broadcast (stride 0) key-padding bias and an fp32 bias.
      check({ dtype, shape: [2, 2, 2, 130, 192, 128, 128], mask: { kind: 'additive', shape: [2, 1, 1, 192] } });
      check({
        dtype,
        shape: [1, 3, 3, 100, 256, 64, 64],
        mask: { kind: 'additive', shape: [3, 1, 256], dtype: 'float32' },
      });
    }
  });

  for (const dtype of ['float16', 'bfloat16'] as const) {
    for (const path of ['simt', 'mma'] as const) {
      it(`${dtype} ${path}: causal both alignments, bias, dropout, GQA agree with cpu-math`, () => {
        check({ dtype, path, shape: [2, 4, 2, 65, 130, 64, 64], opts: { isCausal: true } });
        check({ dtype, path, shape: [1, 2, 2, 130, 65, 128, 128], opts: { isCausal: true, alignment: 'lowerRight' } });
        check({ dtype, path, shape: [2, 2, 2, 50, 70, 64, 64], mask: { kind: 'additive', shape: [2, 1, 50, 70] } });
        check({ dtype, path, shape: [1, 2, 2, 50, 70, 256, 256], opts: { dropoutP: 0.25, dropoutSeed: 99n } });
      });
    }
  }

  // The seeds' features on every path: windows over many key blocks (both sides skipped), both alignments, ALiBi,
  // softcap, masks with causal and the window, dropout, sequsedK; 'simt' forces the FMA kernels, 'auto' takes the
  // tensor-core ones (3xTF32 for fp32 where the arch default allows).
  for (const dtype of ['float32', 'float16', 'bfloat16'] as const) {
    for (const path of ['auto', 'simt'] as const) {
      it(`${dtype} ${path}: windows, ALiBi, softcap, with causal, masks, dropout and sequsedK agree with cpu-math`, () => {
        check({
          dtype,
          path,
          shape: [1, 4, 2, 200, 260, 64, 64],
          opts: { window: [50, 10], softcap: 4 },
          alibi: 'perHead',
        });
        check({
          dtype,
          path,
          shape: [2, 2, 2, 190, 130, 128, 128],
          opts: { window: [40, -1], isCausal: true, alignment: 'lowerRight', dropoutP: 0.2, dropoutSeed: 5n },
          mask: { kind: 'additive', shape: [2, 1, 190, 130] },
        });
        check({
          dtype,
          path,
          shape: [1, 2, 2, 150, 150, 64, 64],
          opts: { window: [-1, 20], softcap: 2 },
          mask: { kind: 'bool', shape: [150, 150] },
        });
        check({
          dtype,
          path,
          shape: [2, 2, 1, 120, 300, 64, 64],
          opts: { window: [30, 30], alignment: 'lowerRight' },
          alibi: 'perBatchHead',
          sequsedK: [170, 0],
        });
        check({
          dtype,
          path,
          shape: [2, 4, 4, 100, 200, 128, 128],
          opts: { isCausal: true, alignment: 'lowerRight', deterministic: true },
          sequsedK: [150, 37],
        });
      });
    }
  }

  it('varlen: packed sequences (some empty) with windows, ALiBi, softcap, sequsedK and dropout agree with cpu-math', () => {
    for (const dtype of ['float32', 'float16', 'bfloat16'] as const) {
      const lensQ = [150, 0, 70, 201],
        lensK = [180, 40, 0, 260];
      const cu = (xs: number[]) =>
        tensor([0, ...xs.map((_, i) => xs.slice(0, i + 1).reduce((a, b) => a + b, 0))], [xs.length + 1], {
          dtype: 'int32',
        });
      const tq = lensQ.reduce((a, b) => a + b),
        tk = lensK.reduce((a, b) => a + b);
      const cpu = (shape: number[]) => randn(shape, { dtype, seed: seed++ });
      const q = cpu([tq, 4, 64]),
        k = cpu([tk, 2, 64]),
        v = cpu([tk, 2, 64]),
        dout = cpu([tq, 4, 64]);
      const alibi = tensor([0.5, 0.25, 0.125, 0.0625], [4], { dtype: 'float32' });
      const used = tensor([100, 40, 0, 260], [4], { dtype: 'int32' });
      const base = {
        maxSeqlenQ: 201,
        maxSeqlenK: 260,
        enableGqa: true,
        requiresGrad: true,
        window: [60, 5] as const,
        softcap: 3,
        dropoutP: 0.1,
        dropoutSeed: 3n,
        alignment: 'lowerRight' as const,
      };
      const p = normalizeVarlenParams(q.to('cuda'), k.to('cuda'), v.to('cuda'), {
        ...base,
        cuSeqlensQ: cu(lensQ).to('cuda'),
        cuSeqlensK: cu(lensK).to('cuda'),
        alibiSlopes: alibi.to('cuda'),
        sequsedK: used.to('cuda'),
      });
      const f64 = (t: Tensor) => t.toDType('float64');
      const ref = sdpaVarlen(f64(q), f64(k), f64(v), {
        ...base,
        cuSeqlensQ: cu(lensQ),
        cuSeqlensK: cu(lensK),
        alibiSlopes: alibi,
        sequsedK: used,
        backends: ['cpu-math'],
      });
      const fwd = runForward(p);
      expect(
        relErr(fwd.outputs.out.toFloat64Array(), ref.out.toFloat64Array()),
        `${dtype} out (${fwd.kernel})`,
      ).toBeLessThanOrEqual(TOL[dtype]);
      expect(
        relErr(fwd.outputs.logsumexp.toFloat64Array(), ref.logsumexp.toFloat64Array()),
        `${dtype} lse`,
      ).toBeLessThanOrEqual(1e-4);
      const bwd = runBackward(p, fwd.outputs, dout.to('cuda'));
      const g = sdpaBackward(f64(dout), ref);
      for (const n of ['dq', 'dk', 'dv'] as const) {
        expect(
          relErr(bwd.gradients[n].toFloat64Array(), g[n].toFloat64Array()),
          `${dtype} ${n} (${bwd.kernels.join('+')})`,
        ).toBeLessThanOrEqual(GRAD_TOL[dtype]);
      }
    }
  });

  it('empty sequences: no key gives out 0 and logsumexp -inf, no query gives zero gradients, nothing launched', () => {
    for (const [Sq, Sk] of [
      [5, 0],
      [0, 7],
    ] as const) {
      const dev = { dtype: 'bfloat16' as const, device: 'cuda' as const };
      const p = normalizeParams(randn([2, 2, Sq, 8], dev), randn([2, 2, Sk, 8], dev), randn([2, 2, Sk, 8], dev), {
        requiresGrad: true,
      });
      const fwd = runForward(p);
      expect(fwd.kernel).toBe('');
      expect(Array.from(fwd.outputs.out.toFloat32Array()).every((x) => x === 0)).toBe(true);
      expect(Array.from(fwd.outputs.logsumexp.toFloat32Array()).every((x) => x === -Infinity)).toBe(true);
      const bwd = runBackward(p, fwd.outputs, randn([2, 2, Sq, 8], dev));
      expect(bwd.kernels).toEqual([]);
      for (const n of ['dq', 'dk', 'dv'] as const)
        expect(Array.from(bwd.gradients[n].toFloat32Array()).every((x) => x === 0)).toBe(true);
    }
  });

  it('float32 with odd head dims, Dv != D, bool mask with fully masked rows', () => {
    check({ dtype: 'float32', shape: [2, 3, 3, 33, 47, 7, 13], mask: { kind: 'bool', shape: [2, 1, 33, 47] } });
    check({ dtype: 'float32', shape: [1, 2, 2, 20, 30, 160, 300] });
  });

  it('sums a broadcast dbias over batch, heads and queries', () => {
    for (const shape of [[1, 1, 1, 70], [2, 1, 1, 70], [3, 50, 1], []]) {
      check({ dtype: 'float32', shape: [2, 3, 3, 50, 70, 32, 32], mask: { kind: 'additive', shape } });
    }
  });

  it('splits long query ranges over blocks and sums the partials', () => {
    const { bwd } = check({ dtype: 'float32', shape: [1, 1, 1, 2048, 40, 64, 64] });
    expect(bwd!.plan!.querySplits).toBeGreaterThan(1);
  });

  it('deterministic backward is bitwise reproducible', () => {
    const c: Case = {
      dtype: 'bfloat16',
      shape: [2, 4, 2, 100, 130, 64, 64],
      opts: { deterministic: true },
      mask: { kind: 'additive', shape: [1, 4, 100, 130] },
    };
    const { q, k, v, dout, mask } = inputs(c);
    const p = normalizeParams(q.to('cuda'), k.to('cuda'), v.to('cuda'), {
      enableGqa: true,
      deterministic: true,
      attnMask: mask!.to('cuda'),
    });
    const fwd = runForward(p);
    const d = dout.to('cuda');
    const a = runBackward(p, fwd.outputs, d).gradients,
      b = runBackward(p, fwd.outputs, d).gradients;
    for (const n of ['dq', 'dk', 'dv', 'dbias'] as const)
      expect(Array.from(a[n]!.toFloat32Array())).toEqual(Array.from(b[n]!.toFloat32Array()));
  });

  it('refuses a forced tensor-core path it cannot run, naming why', () => {
    const { q, k, v } = inputs({ dtype: 'float32', shape: [1, 1, 1, 8, 8, 8, 8] });
    const p = normalizeParams(q.to('cuda'), k.to('cuda'), v.to('cuda'));
    expect(() => runForward(p, 'mma')).toThrow(/tensor-core path was requested .*fp32 runs on the FMA path/);
  });
});
