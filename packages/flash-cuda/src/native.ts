// flash_cuda.node's interface, and its loading through @attn/native (lazily, once; a failure is
// remembered and becomes the backend's availability reason, as is a missing CUDA runtime or device).
// Never throws.
import type { Availability } from '@attn/core';
import { availability as cudaAvailability } from '@attn/cuda';
import { findPackageRoot, lazyNativeAddon, type NativeAddonLoad } from '@attn/native';

export interface FlashPlan {
  readonly numSplits: number;
  readonly oaccumStride: number;
  readonly packGqa: boolean;
  readonly mBlocks: number;
  readonly kernel: string;
  /** A kv-cache call whose forward appends kNew / vNew and rotates q and kNew itself (native/src/dispatch.cu). */
  readonly fusedKvAppend: boolean;
  /**
   * The decode kernel's two splits merge in a thread-block cluster (sm90, a grid of one CTA per SM): the call
   * needs no split partials and launches no combine.
   */
  readonly clusterSplits: boolean;
}

export interface FlashBackwardPlan {
  readonly kernel: string;
  readonly dqAccumStride: number;
  /**
   * Deterministic mode on the TMA dK/dV kernel: query rows per dQ turn counter (the call then needs the dQ
   * workspace and one int32 counter per batch row, query head and block of these rows); 0 otherwise.
   */
  readonly dqTurnRows: number;
  /** Shared-memory stages of Q/dO in the dK/dV kernel: 2 (prefetch) where they fit. */
  readonly stages: number;
  readonly nBlocks: number;
  readonly mBlocks: number;
}

export interface FlashAddon {
  /** ptrs: the address array (ALiBi slopes given or not decides whether a lean kernel may run); without it, no lean kernel is planned. */
  plan(nums: Float64Array, ptrs?: BigUint64Array): FlashPlan;
  /** Takes @attn/cuda's allocatorApi() address: the table forward() allocates from when nums[NUM.allocate] asks. */
  useAllocator(address: bigint): void;
  /**
   * Launches; true once queued. With nums[NUM.allocate] set it first allocates out, lse and the split
   * partials as its bits ask (their addresses and the current stream written into ptrs); false, with nothing
   * launched or held, when the allocator had nothing to give.
   */
  forward(ptrs: BigUint64Array, nums: Float64Array): boolean;
  /** The kv-cache append and rotary kernel (@attn/cuda's attn/kv_append.cuh; kvAppendArgs packs the arrays). Absent in an addon built before it. */
  kvAppend?(ptrs: BigUint64Array, nums: Float64Array, device: number): void;
  /** Absent in an addon built before the backward existed (backward.ts then says to rebuild). */
  backwardPlan?(nums: Float64Array, bnums: Float64Array): FlashBackwardPlan;
  backward?(ptrs: BigUint64Array, nums: Float64Array, bptrs: BigUint64Array, bnums: Float64Array): void;
  /** 'bf16_d128 (dK/dV 32x128, 8 warps, 88 KB; dQ 64x64, 4 warps, 64 KB)', in table order. */
  backwardKernels?(): string[];
  buildInfo(): {
    cudaArchs: string;
    cudaRuntime: number;
    /** 'bf16_d128_large (128x32, 4 warps, 48 KB smem)', in table order. */
    kernels: string[];
    /** 'bf16_d128_large', in table order: the index is what nums[NUM.kernel] forces. */
    kernelNames: string[];
    ptrCount: number;
    numCount: number;
  };
}

/** The package folder (src/ or dist/ sit below it). */
export const PACKAGE_ROOT = findPackageRoot(import.meta.url, '@attn/flash-cuda');

/** The addon (the prebuilt platform package, else a local build), loaded on first use. */
export const addonLoad: () => NativeAddonLoad<FlashAddon> = lazyNativeAddon<FlashAddon>({
  packageRoot: PACKAGE_ROOT,
  requiredFunctions: ['plan', 'useAllocator', 'forward', 'buildInfo'],
});

/** The addon, loaded on first call; null when it cannot be (see availability()). */
export function addon(): FlashAddon | null {
  const load = addonLoad();
  return load.ok ? load.addon : null;
}

/** ok when the addon loaded and @attn/cuda sees a device; otherwise the first reason why not. */
export function availability(): Availability {
  const load = addonLoad();
  if (!load.ok) return { ok: false, reason: load.reason };
  const cuda = cudaAvailability();
  if (!cuda.ok) return { ok: false, reason: `@attn/cuda: ${cuda.reason}` };
  return { ok: true };
}
