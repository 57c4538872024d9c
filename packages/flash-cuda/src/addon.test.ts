// The addon's host side, which needs no GPU: configuration choice, the split-KV heuristic and the
// re-checks of its arguments (errors, never a crash). Skipped, with the reason, where it is not built.
import { type DeviceProperties, empty, normalizeParams, registerDeviceRuntime, type SdpaOptions } from '@attn/core';
import { isolateRegistry, makeFakeDeviceRuntime } from '@attn/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { argArrays, NUM, PTR } from './abi.js';
import { BWD_NUM, bwdArgArrays } from './bwd-abi.js';
import { packArgs } from './forward.js';
import { addon } from './native.js';

const a = addon();
if (!a) console.log('[@attn/flash-cuda] addon host tests skipped: the native addon is not built here');

const H100 = { smCount: 132, smemOptin: 232448, major: 9, minor: 0 };
const RTX4090 = { smCount: 128, smemOptin: 101376, major: 8, minor: 9 };

let restore: () => void;
beforeEach(() => {
  restore = isolateRegistry({ keepDeviceRuntimes: false });
  registerDeviceRuntime(makeFakeDeviceRuntime({ devices: [{ arch: 'sm_90', major: 9 } satisfies Partial<DeviceProperties>] }));
});
afterEach(() => restore());

function nums(shape: [number, number, number, number, number, number], opts: SdpaOptions = {}, facts = H100, dtype: 'bfloat16' | 'float16' = 'bfloat16') {
  const [b, hq, hk, sq, sk, d] = shape;
  const o = { dtype, device: 'cuda' as const };
  // Broadcast views: the plan reads shapes and strides only, so no memory of the full size is needed.
  const t = (h: number, s: number) => empty([1, h, 1, d], o).expand([b, h, s, d]);
  const p = normalizeParams(t(hq, sq), t(hk, sk), t(hk, sk), opts);
  return packArgs(p, facts);
}

describe.skipIf(!a)('flash_cuda.node host side', () => {
  it('lists its kernels and the abi sizes it was built with', () => {
    const info = a!.buildInfo();
    const { ptrs, nums: n } = argArrays();
    expect(info.ptrCount).toBe(ptrs.length);
    expect(info.numCount).toBe(n.length);
    expect(info.kernelNames).toContain('bf16_d128_large');
    expect(info.kernelNames).toContain('fp16_d256_small');
    expect(info.kernels.length).toBe(info.kernelNames.length);
  });

  it('runs long prefill on the large tile without splits', () => {
    const plan = a!.plan(nums([4, 16, 16, 4096, 4096, 128], { isCausal: true }).nums);
    expect(plan.kernel).toBe('bf16_d128_large');
    expect(plan.numSplits).toBe(1);
    expect(plan.mBlocks).toBe(32);
  });

  it('runs decode on the small tile with packed GQA and split-KV', () => {
    const plan = a!.plan(nums([8, 32, 8, 1, 8192, 128], { enableGqa: true }).nums);
    expect(plan.kernel).toBe('bf16_d128_small');
    expect(plan.packGqa).toBe(true);
    expect(plan.numSplits).toBeGreaterThan(1);
    expect(plan.numSplits).toBeLessThanOrEqual(128);
  });

  it('picks the head-dim bucket and the tile that fits a ~100 KB shared-memory GPU', () => {
    expect(a!.plan(nums([1, 8, 8, 512, 512, 72], {}, H100, 'float16').nums).kernel).toBe('fp16_d96_large');
    expect(a!.plan(nums([1, 8, 8, 512, 512, 256]).nums).kernel).toBe('bf16_d256_large');
    expect(a!.plan(nums([1, 8, 8, 512, 512, 256], {}, RTX4090).nums).kernel).toBe('bf16_d256_small');
  });

  it('forces a kernel by index and refuses one that does not fit', () => {
    const names = a!.buildInfo().kernelNames;
    const n = nums([1, 8, 8, 512, 512, 128]).nums;
    n[NUM.kernel] = names.indexOf('bf16_d128_small');
    expect(a!.plan(n).kernel).toBe('bf16_d128_small');
    n[NUM.kernel] = names.indexOf('fp16_d128_small');
    expect(() => a!.plan(n)).toThrow(/does not fit/);
  });

  // An addon built before the lean kernels existed plans 'large' for everything: skip there.
  it.skipIf(!a?.buildInfo().kernelNames.includes('bf16_d128_lean'))('plans the lean kernel only for calls without its missing features', () => {
    const plain = nums([4, 16, 16, 4096, 4096, 128], { isCausal: true });
    expect(a!.plan(plain.nums, plain.ptrs).kernel).toBe('bf16_d128_lean');
    expect(a!.plan(plain.nums).kernel).toBe('bf16_d128_large'); // no address array: ALiBi counts as present
    const alibi = nums([4, 16, 16, 4096, 4096, 128], { isCausal: true });
    alibi.ptrs[PTR.alibi] = 256n;
    expect(a!.plan(alibi.nums, alibi.ptrs).kernel).toBe('bf16_d128_large');
    for (const opts of [{ softcap: 30 }, { dropoutP: 0.1 }, { window: [64, 0] }, { scale: -0.5 }] as SdpaOptions[]) {
      const n = nums([4, 16, 16, 4096, 4096, 128], opts);
      expect(a!.plan(n.nums, n.ptrs).kernel).toBe('bf16_d128_large');
    }
    // Short queries and decode: v1's 64x64 'small' tile with or without ALiBi ('lean_small' is forced-only
    // since version 3: decode through it measured 2.4x slower).
    // (An addon built from version 2's sources still chooses 'lean_small' by itself.)
    const leanSmallAuto = !a!.buildInfo().kernels.some((k) => k.startsWith('bf16_d128_lean_small ') && k.includes('forced only'));
    const dec = nums([8, 32, 8, 1, 8192, 128], { enableGqa: true });
    expect(a!.plan(dec.nums, dec.ptrs).kernel).toBe(leanSmallAuto ? 'bf16_d128_lean_small' : 'bf16_d128_small');
    const forcedSmall = nums([8, 32, 8, 1, 8192, 128], { enableGqa: true });
    forcedSmall.nums[NUM.kernel] = a!.buildInfo().kernelNames.indexOf('bf16_d128_lean_small');
    expect(a!.plan(forcedSmall.nums, forcedSmall.ptrs).kernel).toBe('bf16_d128_lean_small');
    dec.ptrs[PTR.alibi] = 256n;
    expect(a!.plan(dec.nums, dec.ptrs).kernel).toBe('bf16_d128_small');
    // A lean kernel forced onto a call that needs the missing features is refused.
    alibi.nums[NUM.kernel] = a!.buildInfo().kernelNames.indexOf('bf16_d128_lean');
    expect(() => a!.plan(alibi.nums, alibi.ptrs)).toThrow(/lean/);
  });

  it('re-checks its arguments and throws instead of crashing', () => {
    const bad = (edit: (n: Float64Array) => void) => {
      const { nums: n } = nums([1, 4, 2, 16, 16, 64], { enableGqa: true });
      edit(n);
      return () => a!.plan(n);
    };
    expect(bad((n) => (n[NUM.headDim] = 300))).toThrow(/head dim/);
    expect(bad((n) => (n[NUM.headsK] = 3))).toThrow(/multiple of key\/value heads/);
    expect(bad((n) => (n[NUM.batch] = 1.5))).toThrow(/batch/);
    expect(bad((n) => (n[NUM.seqQ] = 0))).toThrow(/query length/);
    const { ptrs, nums: n } = nums([1, 4, 4, 16, 16, 64]);
    n[NUM.numSplits] = 1;
    ptrs[PTR.q] = 0n; // forward checks the addresses before touching the device
    expect(() => a!.forward(ptrs, n)).toThrow(/device addresses/);
    expect(() => a!.forward(new BigUint64Array(3), n)).toThrow(/abi mismatch/);
    expect(() => a!.plan(new Float64Array(2))).toThrow(/abi mismatch/);
  });
});

describe.skipIf(!a?.backwardPlan)('flash_cuda.node backward host side', () => {
  const bnums = (deterministic = false) => {
    const { bnums: b } = bwdArgArrays();
    b[BWD_NUM.deterministic] = deterministic ? 1 : 0;
    return b;
  };

  it('lists its backward kernels', () => {
    expect(a!.backwardKernels!().some((k) => k.startsWith('bf16_d128 '))).toBe(true);
  });

  it('picks the head-dim bucket, and two Q/dO stages where shared memory allows', () => {
    const h100 = a!.backwardPlan!(nums([1, 8, 8, 512, 512, 72], { requiresGrad: true }).nums, bnums());
    expect(h100.kernel).toBe('bf16_d128');
    expect(h100.stages).toBe(2);
    expect(h100.dqAccumStride).toBe(128);
    const ada = a!.backwardPlan!(nums([1, 8, 8, 512, 512, 128], { requiresGrad: true }, RTX4090).nums, bnums());
    expect(ada.stages).toBe(1);
    expect(a!.backwardPlan!(nums([1, 8, 8, 512, 512, 256], {}, H100, 'float16').nums, bnums(true)).kernel).toBe('fp16_d256');
  });

  it('refuses what does not fit and re-checks its arguments (throws, never aborts)', () => {
    expect(() => a!.backwardPlan!(nums([1, 8, 8, 512, 512, 256], {}, RTX4090).nums, bnums())).toThrow(/needs \d+ bytes of shared memory/);
    const { ptrs, nums: n } = nums([1, 4, 4, 16, 16, 64]);
    const { bptrs } = bwdArgArrays();
    expect(() => a!.backward!(ptrs, n, bptrs, bnums())).toThrow(/device addresses/);
    expect(() => a!.backward!(ptrs, n, bptrs, new Float64Array(3))).toThrow(/abi mismatch/);
    const b = bnums();
    b[BWD_NUM.deterministic] = 2;
    expect(() => a!.backwardPlan!(n, b)).toThrow(/deterministic flag/);
  });
});
