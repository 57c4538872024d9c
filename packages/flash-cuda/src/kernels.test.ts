// The kernel option on flash-cuda (no GPU needed: fake CUDA devices): the names it declares, the calls
// 'sm90' declines and why (the same conditions native/src/dispatch.cu refuses), how the family reaches
// the addon's arguments, and that selection honours it without falling back.
import {
  type DeviceProperties,
  explain,
  normalizeParams,
  randn,
  registerBackend,
  type SdpaOptions,
  type SdpaParams,
  tensor,
} from '@attn/core';
import { makeFakeDeviceRuntime } from '@attn/core/testing';
import { describe, expect, it } from 'vitest';
import { NUM } from './abi.js';
import { flashCudaBackend } from './backend.js';
import { packArgs } from './forward.js';
import { FLASH_KERNELS, KERNEL_FAMILY, sm90Declines, tmaWsBackwardDeclines } from './kernels.js';
import { FAKE_H100 as H100, FAKE_A100 as A100, useFakeGpus } from './fake-gpus.test-support.js';

useFakeGpus(H100, A100);

function params(opts: SdpaOptions = {}, { hq = 4, hk = 4, sq = 256, d = 128, device = 'cuda:0' } = {}): SdpaParams {
  const o = { dtype: 'bfloat16' as const, device: device as 'cuda:0' };
  return normalizeParams(
    randn([1, hq, sq, d], { ...o, seed: 1 }),
    randn([1, hk, 300, d], { ...o, seed: 2 }),
    randn([1, hk, 300, d], { ...o, seed: 3 }),
    opts,
  );
}

const ctx = (d: Partial<DeviceProperties>) => ({ device: makeFakeDeviceRuntime({ devices: [d] }).properties(0) });

describe('flash-cuda kernel families', () => {
  it('declares sm90, its two backward variants and sm80, each with a description', () => {
    expect(FLASH_KERNELS.map((k) => k.name)).toEqual(['sm90', 'sm90-bwd-tma-ws', 'sm90-bwd-cp-async', 'sm80']);
    for (const k of FLASH_KERNELS) expect(k.description.length).toBeGreaterThan(20);
  });

  it('sm90 declines what the Hopper kernels cannot run, naming each reason', () => {
    expect(sm90Declines(params(), ctx(H100))).toBeNull();
    expect(sm90Declines(params({ requiresGrad: true, isCausal: true }), ctx(H100))).toBeNull();
    expect(sm90Declines(params(), ctx(A100))).toMatch(/sm90 \(H100\/H200\) only; this device is sm80/);
    expect(sm90Declines(params(), { device: null, deviceUnknownReason: 'no runtime' })).toMatch(
      /compute capability is unknown \(no runtime\)/,
    );
    const alibi = randn([4], { dtype: 'float32', device: 'cuda:0' });
    const why = sm90Declines(params({ softcap: 30, dropoutP: 0.1, window: [16, 0], alibiSlopes: alibi }), ctx(H100))!;
    expect(why).toMatch(/no ALiBi, softcap, dropout, a left window bound/);
    expect(sm90Declines(params({ enableGqa: true }, { hq: 8, hk: 2, sq: 1 }), ctx(H100))).toMatch(/packed GQA/);
    expect(sm90Declines(params({ enableGqa: true }, { hq: 8, hk: 2, sq: 65 }), ctx(H100))).toBeNull();
    expect(sm90Declines(params({ requiresGrad: true }, { d: 160 }), ctx(H100))).toMatch(/backward has no head dim 160/);
    expect(sm90Declines(params({}, { d: 160 }), ctx(H100))).toBeNull();
  });

  it('sm90-bwd-tma-ws also declines backward calls its TMA dK/dV kernel cannot take; sm90-bwd-cp-async as sm90', () => {
    const tma = FLASH_KERNELS.find((k) => k.name === 'sm90-bwd-tma-ws')!;
    const cpAsync = FLASH_KERNELS.find((k) => k.name === 'sm90-bwd-cp-async')!;
    expect(tma.check!(params({ requiresGrad: true, isCausal: true }), ctx(H100))).toBeNull();
    expect(tma.check!(params({ requiresGrad: true, enableGqa: true }, { hq: 8, hk: 2 }), ctx(H100))).toBeNull();
    expect(tmaWsBackwardDeclines(params({ requiresGrad: true }, { d: 72 }))).toBeNull();
    // A forward alone runs whatever the backward could take.
    expect(tma.check!(params({}, { d: 64 }), ctx(H100))).toBeNull();
    expect(tma.check!(params({ requiresGrad: true }, { d: 64 }), ctx(H100))).toBeNull();
    expect(tma.check!(params({ requiresGrad: true }, { d: 160 }), ctx(H100))).toMatch(/head dims up to 128 only/);
    expect(tma.check!(params({ requiresGrad: true }, { d: 256 }), ctx(H100))).toMatch(/not 256/);
    expect(tma.check!(params({ requiresGrad: true }), ctx(A100))).toMatch(/sm90 \(H100\/H200\) only/);
    const o = { dtype: 'bfloat16' as const, device: 'cuda:0' as const };
    const strided = normalizeParams(
      randn([1, 4, 256, 132], { ...o, seed: 1 }).narrow(3, 0, 128),
      randn([1, 4, 300, 128], { ...o, seed: 2 }),
      randn([1, 4, 300, 128], { ...o, seed: 3 }),
      { requiresGrad: true },
    );
    expect(tmaWsBackwardDeclines(strided)).toMatch(/TMA tensor maps/);
    const used = normalizeParams(...qkvOn('cuda:0'), {
      requiresGrad: true,
      sequsedK: tensor([200], [1], { dtype: 'int32', device: 'cuda:0' }),
    });
    expect(tmaWsBackwardDeclines(used)).toMatch(/no sequsedK/);
    expect(cpAsync.check!(params({ requiresGrad: true }, { d: 64 }), ctx(H100))).toBeNull();
    expect(cpAsync.check!(params({ requiresGrad: true }, { d: 160 }), ctx(H100))).toMatch(/no head dim 160/);
  });

  it('packs the family for the addon (forward and backward read the same slot)', () => {
    expect(packArgs(params(), { smCount: 132, smemOptin: 232448, major: 9, minor: 0 }).nums[NUM.kernelFamily]).toBe(
      KERNEL_FAMILY.auto,
    );
    registerBackend(flashCudaBackend);
    const sm90 = params({ kernel: 'sm90' });
    expect(sm90.kernel).toBe('sm90');
    expect(packArgs(sm90, { smCount: 132, smemOptin: 232448, major: 9, minor: 0 }).nums[NUM.kernelFamily]).toBe(
      KERNEL_FAMILY.sm90,
    );
    expect(
      packArgs(params({ kernel: 'sm80' }), { smCount: 132, smemOptin: 232448, major: 9, minor: 0 }).nums[
        NUM.kernelFamily
      ],
    ).toBe(KERNEL_FAMILY.sm80);
    for (const [name, family] of [
      ['sm90-bwd-tma-ws', KERNEL_FAMILY.sm90BwdTmaWs],
      ['sm90-bwd-cp-async', KERNEL_FAMILY.sm90BwdCpAsync],
    ] as const)
      expect(
        packArgs(params({ kernel: name }), { smCount: 132, smemOptin: 232448, major: 9, minor: 0 }).nums[
          NUM.kernelFamily
        ],
      ).toBe(family);
  });

  it('selection: an unknown name is a typed error; sm90 off Hopper is a reason, never another kernel', () => {
    registerBackend(flashCudaBackend);
    expect(() => params({ kernel: 'avx2' })).toThrow(
      expect.objectContaining({
        code: 'ATTN_UNKNOWN_KERNEL',
        message: expect.stringContaining('flash-cuda: sm90, sm90-bwd-tma-ws, sm90-bwd-cp-async, sm80'),
      }),
    );
    const r = explain(...qkvOn('cuda:1'), { kernel: 'sm90' });
    expect(r.kernel).toBe('sm90');
    expect(r.restrictedTo).toEqual(['flash-cuda']);
    expect(r.selected).toBeNull();
    expect(r.candidates[0]!.reasons.find((x) => x.rule === 'kernel')!.message).toMatch(
      /Kernel "sm90" cannot run this call: .*sm80.*its kernels: sm90, sm90-bwd-tma-ws, sm90-bwd-cp-async, sm80/,
    );
  });
});

function qkvOn(device: string) {
  const o = { dtype: 'bfloat16' as const, device: device as 'cuda:0' };
  return [
    randn([1, 4, 256, 128], { ...o, seed: 1 }),
    randn([1, 4, 300, 128], { ...o, seed: 2 }),
    randn([1, 4, 300, 128], { ...o, seed: 3 }),
  ] as const;
}
