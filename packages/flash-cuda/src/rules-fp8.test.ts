// The fp8 forward's rules on fake CUDA devices (no GPU needed): which float8_e4m3 calls flash-cuda takes and
// why it declines the rest (the same conditions native/src/dispatch.cu refuses), and what reaches the addon's
// arguments.
import {
  type DeviceProperties,
  explain,
  normalizeParams,
  registerBackend,
  type SdpaOptions,
  type SdpaParams,
  tensor,
  zeros,
} from '@attn/core';
import { makeFakeDeviceRuntime } from '@attn/core/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { NUM } from './abi.js';
import { flashCudaBackend } from './backend.js';
import { FLASH_KERNELS } from './kernels.js';
import { packArgs } from './forward.js';
import { FAKE_A100 as A100, FAKE_H100 as H100, useFakeGpus } from './fake-gpus.test-support.js';
import { fp8Declines } from './rules-fp8.js';

useFakeGpus(H100, A100);

const descale = { q: 0.01, k: 0.02, v: 0.03 };
const fp8 = (shape: number[], device = 'cuda:0') => zeros(shape, { dtype: 'float8_e4m3', device: device as 'cuda:0' });

function params(opts: SdpaOptions = {}, { hq = 4, hk = 4, sq = 256, d = 128, device = 'cuda:0' } = {}): SdpaParams {
  return normalizeParams(fp8([1, hq, sq, d], device), fp8([1, hk, 300, d], device), fp8([1, hk, 300, d], device), {
    descale,
    ...opts,
  });
}

const ctx = (d: Partial<DeviceProperties>) => ({ device: makeFakeDeviceRuntime({ devices: [d] }).properties(0) });

describe('flash-cuda fp8 forward rules', () => {
  beforeEach(() => registerBackend(flashCudaBackend)); // the kernel option and explain name it (a registry per test)
  it('takes fp8 calls on sm90 at D <= 128 in steps of 16, with causal, GQA and sequsedK', () => {
    expect(fp8Declines(params(), ctx(H100))).toBeNull();
    expect(fp8Declines(params({ isCausal: true, alignment: 'lowerRight' }, { d: 16 }), ctx(H100))).toBeNull();
    expect(fp8Declines(params({ enableGqa: true }, { hq: 8, hk: 2, sq: 1, d: 64 }), ctx(H100))).toBeNull();
    const used = tensor([100], [1], { dtype: 'int32', device: 'cuda:0' });
    expect(fp8Declines(params({ sequsedK: used }), ctx(H100))).toBeNull();
  });

  it("kernel 'sm90' takes the fp8 calls the fp8 kernel takes, short GQA queries included", () => {
    const sm90 = FLASH_KERNELS.find((k) => k.name === 'sm90')!;
    expect(sm90.check!(params({ enableGqa: true }, { hq: 8, hk: 2, sq: 1, d: 64 }), ctx(H100))).toBeNull();
    expect(sm90.check!(params(), ctx(A100))).toMatch(/sm90 \(H100\/H200\) only/);
  });

  it('passes calls without fp8 inputs', () => {
    const q = zeros([1, 2, 8, 72], { dtype: 'bfloat16', device: 'cuda:0' });
    expect(fp8Declines(normalizeParams(q, q, q, {}), ctx(A100))).toBeNull();
  });

  it('declines the rest, naming each reason', () => {
    expect(fp8Declines(params(), ctx(A100))).toMatch(/sm90 \(H100\/H200\) only; this device is sm80/);
    expect(fp8Declines(params({}, { d: 72 }), ctx(H100))).toMatch(/head dims up to 128 in steps of 16 \(got 72\)/);
    expect(fp8Declines(params({}, { d: 256 }), ctx(H100))).toMatch(/got 256/);
    const alibi = zeros([4], { dtype: 'float32', device: 'cuda:0' });
    const why = fp8Declines(params({ softcap: 30, dropoutP: 0.1, window: [16, 0], alibiSlopes: alibi }), ctx(H100))!;
    expect(why).toMatch(
      /^The fp8 \(float8_e4m3\) forward cannot run this call: .*no ALiBi, softcap, dropout, a left window bound/,
    );
    expect(fp8Declines(params({ kernel: 'sm80' }), ctx(H100))).toMatch(/kernel option names 'sm80'/);
    // A row stride of 136 bytes: 16-byte chunks cannot tile the rows.
    const wide = fp8([1, 2, 64, 136]);
    const q = wide.narrow(3, 0, 128);
    expect(fp8Declines(normalizeParams(q, q, q, { descale }), ctx(H100))).toMatch(/strides that are multiples of 16/);
  });

  it('explain shows the rule when flash-cuda declines an fp8 call', () => {
    const q = fp8([1, 2, 64, 72]);
    const report = explain(q, q, q, { descale, backends: ['flash-cuda'] });
    expect(report.selected).toBeNull();
    const reasons = report.candidates.find((c) => c.backend === 'flash-cuda')!.reasons;
    expect(reasons.map((r) => r.rule)).toContain('fp8Kernel');
  });

  it('packs the fp8 flag, the descale factors and a bf16 output for the addon', () => {
    const { nums } = packArgs(params(), { smCount: 132, smemOptin: 232448, major: 9, minor: 0 });
    expect(nums[NUM.fp8]).toBe(1);
    expect([nums[NUM.descaleQ], nums[NUM.descaleK], nums[NUM.descaleV]]).toEqual([0.01, 0.02, 0.03]);
    expect(nums[NUM.isBf16]).toBe(1);
    expect(nums[NUM.qRowStride]).toBe(128); // bytes: fp8 elements
    const q = zeros([1, 2, 8, 64], { dtype: 'float16', device: 'cuda:0' });
    const plain = packArgs(normalizeParams(q, q, q, {}), { smCount: 132, smemOptin: 232448, major: 9, minor: 0 });
    expect(plain.nums[NUM.fp8]).toBe(0);
  });
});
