// The addon's host side, which needs no GPU: configuration choice, the split-KV heuristic and the
// re-checks of its arguments (errors, never a crash). Skipped, with the reason, where it is not built.
import {
  type DeviceProperties,
  empty,
  normalizeKvCacheParams,
  normalizeParams,
  registerDeviceRuntime,
  type SdpaOptions,
  tensor,
} from '@attn/core';
import { isolateRegistry, makeFakeDeviceRuntime } from '@attn/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { argArrays, NUM, PTR } from './abi.js';
import { BWD_NUM, bwdArgArrays } from './bwd-abi.js';
import { packArgs } from './forward.js';
import { KERNEL_FAMILY } from './kernels.js';
import { packKvCacheArgs } from './kv-cache.js';
import { addon } from './native.js';

const a = addon();
if (!a) console.log('[@attn/flash-cuda] addon host tests skipped: the native addon is not built here');

const H100 = { smCount: 132, smemOptin: 232448, major: 9, minor: 0 };
const RTX4090 = { smCount: 128, smemOptin: 101376, major: 8, minor: 9 };
const A100 = { smCount: 108, smemOptin: 166912, major: 8, minor: 0 };

let restore: () => void;
beforeEach(() => {
  restore = isolateRegistry({ keepDeviceRuntimes: false });
  registerDeviceRuntime(
    makeFakeDeviceRuntime({ devices: [{ arch: 'sm_90', major: 9 } satisfies Partial<DeviceProperties>] }),
  );
});
afterEach(() => restore());

function nums(
  shape: [number, number, number, number, number, number],
  opts: SdpaOptions = {},
  facts = H100,
  dtype: 'bfloat16' | 'float16' | 'float8_e4m3' = 'bfloat16',
) {
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

  it('appends in the forward for decode-sized kv-cache calls only, and refuses a fused call it does not plan', () => {
    const o = { dtype: 'bfloat16' as const, device: 'cuda' as const };
    const pool = empty([8, 16, 2, 64], o);
    const i32 = (xs: number[], shape: number[]) => tensor(xs, shape, { dtype: 'int32', device: 'cuda' });
    const packed = (sq: number, newLen: number) => {
      const p = normalizeKvCacheParams(empty([2, sq, 8, 64], o), pool, pool, {
        cacheSeqlens: i32([20, 3], [2]),
        ...(newLen > 0 ? { kNew: empty([2, newLen, 2, 64], o), vNew: empty([2, newLen, 2, 64], o) } : {}),
        blockTable: i32([0, 1, 2, 3, 4, 5, 6, 7], [2, 4]),
        isCausal: true,
        enableGqa: true,
      });
      return packKvCacheArgs(p, { q: p.query.transpose(1, 2), rowTable: null, fused: true }, H100);
    };
    const fuses = (sq: number, newLen: number) => {
      const n = packed(sq, newLen);
      return a!.plan(n.nums, n.ptrs).fusedKvAppend;
    };
    expect([fuses(1, 1), fuses(1, 0), fuses(8, 16)]).toEqual([true, true, true]); // packed rows <= 64, <= 16 keys
    expect([fuses(1, 17), fuses(17, 1)]).toEqual([false, false]); // 17 keys; 68 packed rows
    const n = packed(1, 17);
    n.nums[NUM.numSplits] = 1;
    expect(() => a!.forward(n.ptrs, n.nums)).toThrow(/separate kernel/);
    // A call that is not a kv-cache call has no fused append.
    const plain = nums([1, 8, 8, 1, 512, 64]);
    plain.nums[NUM.kvFused] = 1;
    plain.nums[NUM.numSplits] = 1;
    expect(() => a!.forward(plain.ptrs, plain.nums)).toThrow(/only a kv-cache call/);
  });

  it('reads paged K/V with the 8-warp decode tile where its grid is one wave, the 4-warp tile otherwise', () => {
    const o = { dtype: 'bfloat16' as const, device: 'cuda' as const };
    const i32 = (xs: number[], shape: number[]) => tensor(xs, shape, { dtype: 'int32', device: 'cuda' });
    const step = (b: number, hk: number, sk: number, facts = H100) => {
      const pages = (b * sk) / 16;
      const pool = empty([pages, 16, hk, 128], o);
      const p = normalizeKvCacheParams(empty([b, 1, 4 * hk, 128], o), pool, pool, {
        cacheSeqlens: i32(Array<number>(b).fill(sk), [b]),
        blockTable: i32(
          Array.from({ length: pages }, (_, i) => i),
          [b, sk / 16],
        ),
        enableGqa: true,
      });
      const n = packKvCacheArgs(p, { q: p.query.transpose(1, 2), rowTable: null, fused: true }, facts);
      return a!.plan(n.nums, n.ptrs);
    };
    // 4 row tiles of a long cache: 16 splits of the 128-key tile (two tiles each), 64 CTAs.
    expect(step(2, 2, 4096)).toMatchObject({ kernel: 'bf16_d128_decode_wide', numSplits: 16, clusterSplits: false });
    // 256 row tiles: no split, more than one CTA per SM; an A100 has no room for the wide tile (204 KB).
    expect(step(32, 8, 64).kernel).toBe('bf16_d128_decode');
    expect(step(2, 2, 4096, A100).kernel).toBe('bf16_d128_decode');
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
  it.skipIf(!a?.buildInfo().kernelNames.includes('bf16_d128_lean'))(
    'plans the lean kernel only for calls without its missing features',
    () => {
      // On an A100: on an H100 the Hopper kernel stands in for the lean one (next test).
      const plain = nums([4, 16, 16, 4096, 4096, 128], { isCausal: true }, A100);
      expect(a!.plan(plain.nums, plain.ptrs).kernel).toBe('bf16_d128_lean');
      expect(a!.plan(plain.nums).kernel).toBe('bf16_d128_large'); // no address array: ALiBi counts as present
      const alibi = nums([4, 16, 16, 4096, 4096, 128], { isCausal: true });
      alibi.ptrs[PTR.alibi] = 256n;
      expect(a!.plan(alibi.nums, alibi.ptrs).kernel).toBe('bf16_d128_large');
      for (const opts of [{ softcap: 30 }, { dropoutP: 0.1 }, { window: [64, 0] }, { scale: -0.5 }] as SdpaOptions[]) {
        const n = nums([4, 16, 16, 4096, 4096, 128], opts);
        expect(a!.plan(n.nums, n.ptrs).kernel).toBe('bf16_d128_large');
      }
      // Decode (packed rows <= 16): the decode kernel without ALiBi, 'small' with it; other short queries
      // (packed rows <= 64): 'lean_small'.
      const dec = nums([8, 32, 8, 1, 8192, 128], { enableGqa: true });
      expect(a!.plan(dec.nums, dec.ptrs)).toMatchObject({ kernel: 'bf16_d128_decode', numSplits: 2, packGqa: true });
      const shortQ = nums([8, 32, 8, 8, 8192, 128], { enableGqa: true }); // 32 packed rows
      expect(a!.plan(shortQ.nums, shortQ.ptrs).kernel).toBe('bf16_d128_lean_small');
      const forcedSmall = nums([8, 32, 8, 1, 8192, 128], { enableGqa: true });
      forcedSmall.nums[NUM.kernel] = a!.buildInfo().kernelNames.indexOf('bf16_d128_lean_small');
      expect(a!.plan(forcedSmall.nums, forcedSmall.ptrs).kernel).toBe('bf16_d128_lean_small');
      dec.ptrs[PTR.alibi] = 256n;
      expect(a!.plan(dec.nums, dec.ptrs).kernel).toBe('bf16_d128_small');
      // A lean kernel forced onto a call that needs the missing features is refused.
      alibi.nums[NUM.kernel] = a!.buildInfo().kernelNames.indexOf('bf16_d128_lean');
      expect(() => a!.plan(alibi.nums, alibi.ptrs)).toThrow(/lean/);
    },
  );

  it('holds only the tiles the plan picks for some device and call (no forced-only forms)', () => {
    const names = a!.buildInfo().kernelNames;
    expect(names.filter((n) => /alt/.test(n))).toEqual([]);
    expect(names.filter((n) => n.endsWith('_decode')).sort()).toEqual([
      'bf16_d128_decode',
      'bf16_d64_decode',
      'fp16_d128_decode',
      'fp16_d64_decode',
    ]);
    expect(names.filter((n) => n.endsWith('_decode_wide')).sort()).toEqual([
      'bf16_d128_decode_wide',
      'fp16_d128_decode_wide',
    ]);
    expect(names.filter((n) => n.includes('sm90')).sort()).toEqual([
      'bf16_d128_sm90ws',
      'bf16_d256_sm90ws',
      'bf16_d64_sm90ws',
      'bf16_d64_sm90ws_rows64',
      'fp16_d128_sm90ws',
      'fp16_d256_sm90ws',
      'fp16_d64_sm90ws',
      'fp16_d64_sm90ws_rows64',
      'fp8_d128_sm90ws', // float8_e4m3 calls (plans below)
    ]);
    expect(a!.buildInfo().kernels.some((k) => k.includes('forced only'))).toBe(false);
  });

  // Only an addon that holds sm_90a code has the Hopper kernels' bodies (the default build does).
  it.skipIf(!a?.buildInfo().kernelNames.includes('bf16_d256_sm90ws') || !/\b90a\b/.test(a.buildInfo().cudaArchs))(
    'plans the Hopper kernel on sm90 for lean calls without split-KV, and only there',
    () => {
      const names = a!.buildInfo().kernelNames;
      const plain = nums([4, 16, 16, 4096, 4096, 128], { isCausal: true });
      // The Hopper kernel at every head dim it is built for (64, 128, 256).
      expect(a!.plan(plain.nums, plain.ptrs)).toMatchObject({
        kernel: 'bf16_d128_sm90ws',
        numSplits: 1,
        packGqa: false,
      });
      const d256 = nums([4, 8, 8, 4096, 4096, 256]);
      expect(a!.plan(d256.nums, d256.ptrs).kernel).toBe('bf16_d256_sm90ws');
      const d64 = nums([4, 16, 4, 2000, 2000, 40], { enableGqa: true }, H100, 'float16');
      // fp16 as bf16: the warp-specialized kernel (D = 40 runs in the D = 64 bucket).
      expect(a!.plan(d64.nums, d64.ptrs).kernel).toBe('fp16_d64_sm90ws');
      // ALiBi (or softcap, dropout, a left window bound) and head dims outside 64 / 128 / 256 stay on sm80 kernels.
      const alibi = nums([4, 16, 16, 4096, 4096, 128], { isCausal: true });
      alibi.ptrs[PTR.alibi] = 256n;
      expect(a!.plan(alibi.nums, alibi.ptrs).kernel).toBe('bf16_d128_large');
      const d96 = nums([4, 16, 16, 4096, 4096, 96]);
      expect(a!.plan(d96.nums, d96.ptrs).kernel).toBe('bf16_d96_large');
      // float8_e4m3 inputs: the fp8 kernel at every head dim it takes, decode and GQA included (it never packs
      // GQA rows or splits); refused off sm90 and at head dims it lacks, saying why (rules-fp8.ts declines first).
      const descale = { q: 0.5, k: 0.5, v: 0.5 };
      for (const shape of [
        [4, 16, 16, 4096, 4096, 128],
        [8, 32, 8, 1, 8192, 64],
        [1, 4, 2, 17, 300, 16],
      ] as const) {
        const fp8 = nums([...shape], { descale, enableGqa: shape[1] !== shape[2] }, H100, 'float8_e4m3');
        expect(a!.plan(fp8.nums, fp8.ptrs)).toMatchObject({ kernel: 'fp8_d128_sm90ws', numSplits: 1, packGqa: false });
      }
      const fp8d72 = nums([1, 4, 4, 64, 64, 72], { descale }, H100, 'float8_e4m3');
      expect(() => a!.plan(fp8d72.nums, fp8d72.ptrs)).toThrow(/head dim <= 128 and a multiple of 16/);
      const fp8a100 = nums([1, 4, 4, 64, 64, 128], { descale }, A100, 'float8_e4m3');
      expect(() => a!.plan(fp8a100.nums, fp8a100.ptrs)).toThrow(/Hopper fp8 kernel: an sm90 device/);
      // Decode (short queries, split-KV) stays on the split-KV tiles.
      const dec = nums([8, 32, 8, 1, 8192, 128], { enableGqa: true });
      expect(a!.plan(dec.nums, dec.ptrs).kernel).not.toMatch(/sm90/);
      // A grid too small for the GPU would want split-KV, which the Hopper kernel has not: the split tile runs.
      const few = nums([1, 1, 1, 256, 65536, 128]);
      const fewPlan = a!.plan(few.nums, few.ptrs);
      expect(fewPlan.kernel).toBe('bf16_d128_lean_small');
      expect(fewPlan.numSplits).toBeGreaterThan(1);
      // The kernel option: 'sm90' runs the Hopper kernel where the heuristic would split (the small grid
      // above), 'sm80' keeps a call the Hopper kernel would take on mma.sync; 'sm90' is refused off sm90
      // and with splits, saying why (kernels.ts declines those calls before they get here).
      few.nums[NUM.kernelFamily] = KERNEL_FAMILY.sm90;
      expect(a!.plan(few.nums, few.ptrs)).toMatchObject({ kernel: 'bf16_d128_sm90ws', numSplits: 1 });
      const sm80 = nums([4, 16, 16, 4096, 4096, 128], { isCausal: true });
      sm80.nums[NUM.kernelFamily] = KERNEL_FAMILY.sm80;
      expect(a!.plan(sm80.nums, sm80.ptrs).kernel).toBe('bf16_d128_lean');
      const onA100 = nums([4, 16, 16, 4096, 4096, 128], {}, A100);
      onA100.nums[NUM.kernelFamily] = KERNEL_FAMILY.sm90;
      expect(() => a!.plan(onA100.nums, onA100.ptrs)).toThrow(/Hopper kernels .*cannot run this call/);
      const split = nums([4, 16, 16, 4096, 4096, 128]);
      split.nums[NUM.kernelFamily] = KERNEL_FAMILY.sm90;
      split.nums[NUM.numSplits] = 3;
      expect(() => a!.plan(split.nums, split.ptrs)).toThrow(/split-KV/);
      // A tile forced by index (tests): the Hopper one is refused off sm90 (a B200-like device: 227 KB, sm100).
      const forcedTile = nums([4, 16, 16, 4096, 4096, 128], {}, { ...H100, major: 10, minor: 0 });
      forcedTile.nums[NUM.kernel] = names.indexOf('bf16_d128_sm90ws');
      expect(() => a!.plan(forcedTile.nums, forcedTile.ptrs)).toThrow(/only on sm90/);
    },
  );

  // D 64's one-warpgroup Hopper tile (two CTAs per SM, TMA only): where the tensor maps can read the call and a
  // row sees at most 1536 keys on average (dispatch.cu make_plan). The plans elsewhere in this file use broadcast
  // views (zero strides, which no tensor map steps), so they keep the 128-row tile.
  it.skipIf(!a?.buildInfo().kernelNames.includes('bf16_d64_sm90ws_rows64') || !/\b90a\b/.test(a.buildInfo().cudaArchs))(
    'plans D 64 on its one-warpgroup Hopper tile where rows see few keys and the TMA can read the tensors',
    () => {
      const dense = (shape: [number, number, number, number, number, number], opts: SdpaOptions = {}) => {
        const [b, hq, hk, sq, sk, d] = shape;
        const t = (h: number, s: number) => empty([b, h, s, d], { dtype: 'bfloat16', device: 'cuda' });
        // packArgs sets the alignment the plan reads (the fake device's blocks are 256-byte aligned, as a device's are).
        return packArgs(normalizeParams(t(hq, sq), t(hk, sk), t(hk, sk), opts), H100);
      };
      const kernel = (n: ReturnType<typeof dense>) => a!.plan(n.nums, n.ptrs).kernel;
      expect(kernel(dense([4, 16, 16, 1024, 1024, 64]))).toBe('bf16_d64_sm90ws_rows64');
      expect(kernel(dense([4, 16, 8, 1000, 1000, 40], { enableGqa: true }))).toBe('bf16_d64_sm90ws_rows64');
      expect(kernel(dense([2, 16, 16, 2048, 2048, 64], { isCausal: true }))).toBe('bf16_d64_sm90ws_rows64'); // 1024
      expect(kernel(dense([4, 16, 16, 1536, 1536, 64]))).toBe('bf16_d64_sm90ws_rows64'); // 1536
      expect(kernel(dense([4, 16, 16, 1544, 1544, 64]))).toBe('bf16_d64_sm90ws');
      expect(kernel(dense([2, 16, 16, 4096, 4096, 64], { isCausal: true }))).toBe('bf16_d64_sm90ws'); // 2048
      expect(kernel(dense([2, 16, 16, 4096, 4096, 64]))).toBe('bf16_d64_sm90ws'); // 4096 keys a row
      expect(kernel(dense([1, 16, 16, 8192, 8192, 64], { isCausal: true }))).toBe('bf16_d64_sm90ws'); // 4096 on average
      // Lower-right: 1024 queries over 4096 keys see 3584 on average.
      expect(kernel(dense([4, 16, 16, 1024, 4096, 64], { isCausal: true, alignment: 'lowerRight' }))).toBe(
        'bf16_d64_sm90ws',
      );
      expect(kernel(dense([4, 16, 16, 1024, 1024, 128]))).toBe('bf16_d128_sm90ws'); // D 64 only
      // Misaligned tensors and zero strides (broadcast views) are for the cp.async producer: the 128-row tile.
      const q = empty([4, 16, 1025, 64], { dtype: 'bfloat16', device: 'cuda' }).narrow(2, 1, 1024); // 128 bytes in
      const kv = empty([4, 16, 1024 * 64 + 1], { dtype: 'bfloat16', device: 'cuda' })
        .narrow(2, 1, 1024 * 64)
        .reshape([4, 16, 1024, 64]); // 2 bytes in
      expect(kernel(packArgs(normalizeParams(q, kv, kv), H100))).toBe('bf16_d64_sm90ws');
      // A given out 2 bytes off: the tile's epilogue stores 16 bytes at a time too.
      const n = 4 * 16 * 1024 * 64;
      const out = empty([n + 1], { dtype: 'bfloat16', device: 'cuda' })
        .narrow(0, 1, n)
        .reshape([4, 16, 1024, 64]);
      const aligned = (s: number) => empty([4, 16, s, 64], { dtype: 'bfloat16', device: 'cuda' });
      expect(kernel(packArgs(normalizeParams(aligned(1024), aligned(1024), aligned(1024), { out }), H100))).toBe(
        'bf16_d64_sm90ws',
      );
      const broadcast = nums([4, 16, 16, 1024, 1024, 64]);
      expect(kernel(broadcast)).toBe('bf16_d64_sm90ws');
      // Forced by index where the maps cannot read the call: refused, saying why.
      broadcast.nums[NUM.kernel] = a!.buildInfo().kernelNames.indexOf('bf16_d64_sm90ws_rows64');
      expect(() => a!.plan(broadcast.nums, broadcast.ptrs)).toThrow(/loads by TMA only/);
    },
  );

  // The short-call rules (dispatch.cu make_plan; measured by scripts/short-call-sweep.mjs).
  it.skipIf(!a?.buildInfo().kernelNames.includes('bf16_d64_sm90ws') || !/\b90a\b/.test(a.buildInfo().cudaArchs))(
    'plans short calls by the keys a row can see and the heads against the SMs',
    () => {
      const plan = (shape: [number, number, number, number, number, number], opts: SdpaOptions = {}) => {
        const n = nums(shape, opts);
        return a!.plan(n.nums, n.ptrs);
      };
      // At most 16 rows: the decode kernel, however few heads and keys; more rows of a few heads whose keys fit one
      // or two of the Hopper tile's key blocks: one Hopper CTA each, no split.
      expect(plan([1, 1, 1, 16, 16, 64])).toMatchObject({
        kernel: 'bf16_d64_decode',
        numSplits: 1,
        clusterSplits: false,
      });
      expect(plan([2, 8, 8, 1, 256, 128])).toMatchObject({ kernel: 'bf16_d128_decode' });
      expect(plan([1, 1, 1, 17, 17, 64])).toMatchObject({ kernel: 'bf16_d64_sm90ws', numSplits: 1 });
      expect(plan([2, 8, 8, 32, 256, 128])).toMatchObject({ kernel: 'bf16_d128_sm90ws', numSplits: 1 });
      // Upper-left causal: a row sees at most Sq keys, so the long cache does not ask for a split; lower-right
      // sees them all and splits on the split tile.
      expect(plan([1, 1, 1, 128, 4096, 128], { isCausal: true })).toMatchObject({ kernel: 'bf16_d128_sm90ws' });
      const lowerRight = plan([1, 1, 1, 128, 4096, 128], { isCausal: true, alignment: 'lowerRight' });
      expect(lowerRight.kernel).toBe('bf16_d128_lean_small');
      expect(lowerRight.numSplits).toBeGreaterThan(1);
      // More heads than SMs with at most 16 rows each: the decode kernel; with more rows, the 64-row tiles' two
      // CTAs per SM, D 128 with at most 64 visible keys on the 64-key block of 'small'.
      expect(plan([8, 32, 32, 1, 4096, 64]).kernel).toBe('bf16_d64_decode');
      expect(plan([8, 32, 32, 1, 4096, 128]).kernel).toBe('bf16_d128_decode');
      expect(plan([8, 32, 32, 1, 16, 128]).kernel).toBe('bf16_d128_decode');
      expect(plan([8, 32, 32, 16, 4096, 128], { isCausal: true }).kernel).toBe('bf16_d128_decode');
      expect(plan([8, 32, 32, 20, 4096, 128], { isCausal: true }).kernel).toBe('bf16_d128_small');
      expect(plan([8, 32, 32, 32, 4096, 64]).kernel).toBe('bf16_d64_lean_small');
      // Many keys for a few heads: split-KV, on the decode kernel for a decode step (64-key blocks) and on the
      // 64-row tile (FlashAttention-2's split tile) for more rows.
      // (the decode kernel's splits hold two of its 64-key tiles at least)
      expect(plan([1, 1, 1, 1, 4096, 64])).toMatchObject({
        kernel: 'bf16_d64_decode',
        numSplits: 32,
        clusterSplits: false, // more than a pair of splits: the partials and the combine
      });
      // A decode step split in two merges the pair in a thread-block cluster on sm90 (its grid is one CTA per SM);
      // an A100 has no clusters.
      const step = nums([8, 32, 8, 1, 8192, 128], { enableGqa: true });
      expect(a!.plan(step.nums, step.ptrs)).toMatchObject({
        kernel: 'bf16_d128_decode',
        numSplits: 2,
        clusterSplits: true,
      });
      const stepA100 = nums([8, 32, 8, 1, 8192, 128], { enableGqa: true }, A100);
      expect(a!.plan(stepA100.nums, stepA100.ptrs)).toMatchObject({ kernel: 'bf16_d128_decode', clusterSplits: false });
      expect(plan([1, 1, 1, 32, 4096, 64], { alignment: 'lowerRight', isCausal: true }).kernel).toBe(
        'bf16_d64_lean_small',
      );
    },
  );

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

  const hopperBuild = /\b90a\b/.test(a?.buildInfo().cudaArchs ?? '');

  it('picks the head-dim bucket, the 2-D tiled dK/dV kernel where it fits, and two Q/dO stages where shared memory allows', () => {
    // A100 and RTX 4090: no Hopper kernel. The 2-D tiled form needs 161 KB at D128 and 209 KB at D256: an
    // A100 runs it at D128 and the row-tiled one at D256, an RTX 4090 the row-tiled one only.
    const a100 = a!.backwardPlan!(nums([1, 8, 8, 512, 512, 72], { requiresGrad: true }, A100).nums, bnums());
    expect(a100.kernel).toBe('bf16_d128_2d');
    expect(a100.stages).toBe(2);
    expect(a100.dqAccumStride).toBe(128);
    expect(a!.backwardPlan!(nums([1, 8, 8, 512, 512, 256], {}, A100).nums, bnums()).kernel).toBe('bf16_d256');
    const ada = a!.backwardPlan!(nums([1, 8, 8, 512, 512, 128], { requiresGrad: true }, RTX4090).nums, bnums());
    expect(ada.kernel).toBe('bf16_d128');
    expect(ada.stages).toBe(1);
    // D64 has no 2-D tiled build.
    expect(a!.backwardPlan!(nums([1, 8, 8, 512, 512, 64], {}, A100).nums, bnums()).kernel).toBe('bf16_d64');
  });

  it.skipIf(!hopperBuild)(
    'plans the Hopper dK/dV kernel on sm90 in both modes, for every bucket it is built for',
    () => {
      const h100 = a!.backwardPlan!(nums([1, 8, 8, 512, 512, 72], { requiresGrad: true }).nums, bnums());
      expect(h100).toMatchObject({ kernel: 'bf16_d128_sm90', stages: 2, dqAccumStride: 128 });
      expect(a!.backwardPlan!(nums([1, 8, 8, 512, 512, 64]).nums, bnums(true)).kernel).toBe('bf16_d64_sm90');
      expect(a!.backwardPlan!(nums([1, 8, 8, 512, 512, 256], {}, H100, 'float16').nums, bnums(true)).kernel).toBe(
        'fp16_d256_sm90',
      );
      // D192 has neither a Hopper nor a 2-D tiled build.
      expect(a!.backwardPlan!(nums([1, 8, 8, 512, 512, 192]).nums, bnums()).kernel).toBe('bf16_d192');
      // The kernel option: 'sm80' keeps the backward on mma.sync (the 2-D tiled form at D128 and D256 on an
      // H100); 'sm90' where no Hopper backward exists is refused.
      const sm80 = nums([1, 8, 8, 512, 512, 128]);
      sm80.nums[NUM.kernelFamily] = KERNEL_FAMILY.sm80;
      expect(a!.backwardPlan!(sm80.nums, bnums()).kernel).toBe('bf16_d128_2d');
      const d192 = nums([1, 8, 8, 512, 512, 192]);
      d192.nums[NUM.kernelFamily] = KERNEL_FAMILY.sm90;
      expect(() => a!.backwardPlan!(d192.nums, bnums())).toThrow(/kernel sm90 has no backward/);
    },
  );

  it.skipIf(!hopperBuild || !a?.backwardKernels?.().some((k) => k.startsWith('bf16_d128_sm90_tma_ws ')))(
    'plans the TMA warp-specialized dK/dV kernel for dense D64- and D128-bucket calls a tensor map describes',
    () => {
      // Contiguous tensors (the broadcast views above have zero strides, which no tensor map describes).
      const dense = (d: number, opts: SdpaOptions = {}) => {
        const o = { dtype: 'bfloat16' as const, device: 'cuda' as const };
        return packArgs(
          normalizeParams(empty([1, 8, 512, d], o), empty([1, 8, 512, d], o), empty([1, 8, 512, d], o), opts),
          H100,
        ).nums;
      };
      const forced = (n: Float64Array, family: number) => {
        n[NUM.kernelFamily] = family;
        return n;
      };
      // The plan, 'sm90' and 'sm90-bwd-tma-ws' run the TMA kernel in both modes; 'sm90-bwd-cp-async' keeps the other.
      expect(a!.backwardPlan!(dense(128), bnums()).kernel).toBe('bf16_d128_sm90_tma_ws');
      expect(a!.backwardPlan!(dense(64), bnums()).kernel).toBe('bf16_d64_sm90_tma_ws'); // 128 queries x 128 keys
      expect(a!.backwardPlan!(dense(72, { isCausal: true }), bnums(true)).kernel).toBe('bf16_d128_sm90_tma_ws');
      expect(a!.backwardPlan!(forced(dense(128), KERNEL_FAMILY.sm90), bnums()).kernel).toBe('bf16_d128_sm90_tma_ws');
      // What it declines falls back to the cp.async kernel: D256's bucket, zero strides, softcap.
      expect(a!.backwardPlan!(dense(256), bnums()).kernel).toBe('bf16_d256_sm90');
      expect(a!.backwardPlan!(nums([2, 8, 8, 512, 512, 128]).nums, bnums()).kernel).toBe('bf16_d128_sm90');
      expect(a!.backwardPlan!(dense(128, { softcap: 5 }), bnums()).kernel).toBe('bf16_d128_sm90');
      const tma = KERNEL_FAMILY.sm90BwdTmaWs;
      expect(a!.backwardPlan!(forced(dense(128), tma), bnums()).kernel).toBe('bf16_d128_sm90_tma_ws');
      expect(a!.backwardPlan!(forced(dense(72, { isCausal: true }), tma), bnums(true)).kernel).toBe(
        'bf16_d128_sm90_tma_ws',
      );
      const cp = forced(dense(128), KERNEL_FAMILY.sm90BwdCpAsync);
      expect(a!.backwardPlan!(cp, bnums()).kernel).toBe('bf16_d128_sm90');
      // The TMA kernel refuses what it cannot run, saying why: D 256 (no build), softcap, zero strides.
      expect(() => a!.backwardPlan!(forced(nums([2, 8, 8, 512, 512, 128]).nums, tma), bnums())).toThrow(
        /tensor map can describe/,
      );
      const tma256 = dense(256);
      tma256[NUM.kernelFamily] = KERNEL_FAMILY.sm90BwdTmaWs;
      expect(() => a!.backwardPlan!(tma256, bnums())).toThrow(/sm90-bwd-tma-ws cannot run this backward: .*not 256/);
      const tmaSoftcap = dense(128, { softcap: 5 });
      tmaSoftcap[NUM.kernelFamily] = KERNEL_FAMILY.sm90BwdTmaWs;
      expect(() => a!.backwardPlan!(tmaSoftcap, bnums())).toThrow(/no ALiBi, softcap or dropout/);
    },
  );

  it('refuses what does not fit and re-checks its arguments (throws, never aborts)', () => {
    expect(() => a!.backwardPlan!(nums([1, 8, 8, 512, 512, 256], {}, RTX4090).nums, bnums())).toThrow(
      /needs \d+ bytes of shared memory/,
    );
    const { ptrs, nums: n } = nums([1, 4, 4, 16, 16, 64]);
    const { bptrs } = bwdArgArrays();
    expect(() => a!.backward!(ptrs, n, bptrs, bnums())).toThrow(/device addresses/);
    expect(() => a!.backward!(ptrs, n, bptrs, new Float64Array(3))).toThrow(/abi mismatch/);
    const b = bnums();
    b[BWD_NUM.deterministic] = 2;
    expect(() => a!.backwardPlan!(n, b)).toThrow(/deterministic flag/);
  });
});
