// Loads build/Release/flash_cuda.node lazily, once; a failure is remembered and becomes the backend's
// availability reason ('unavailable: ...'), as is a missing CUDA runtime or device. Never throws.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Availability } from '@attn/core';
import { availability as cudaAvailability } from '@attn/cuda';

export interface FlashPlan {
  readonly numSplits: number;
  readonly oaccumStride: number;
  readonly packGqa: boolean;
  readonly mBlocks: number;
  readonly kernel: string;
}

export interface FlashBackwardPlan {
  readonly kernel: string;
  readonly dqAccumStride: number;
  /** Shared-memory stages of Q/dO in the dK/dV kernel: 2 (prefetch) where they fit. */
  readonly stages: number;
  readonly nBlocks: number;
  readonly mBlocks: number;
}

export interface FlashAddon {
  /** ptrs: the address array (ALiBi slopes given or not decides whether a lean kernel may run); without it, no lean kernel is planned. */
  plan(nums: Float64Array, ptrs?: BigUint64Array): FlashPlan;
  forward(ptrs: BigUint64Array, nums: Float64Array): void;
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

export const PACKAGE_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const ADDON_PATH = join(PACKAGE_ROOT, 'build', 'Release', 'flash_cuda.node');
const HINT = 'run `pnpm --filter @attn/flash-cuda build:native` where the CUDA toolkit (nvcc) is installed';

type Load = { ok: true; addon: FlashAddon } | { ok: false; reason: string };
let cached: Load | null = null;

function load(): Load {
  if (!existsSync(ADDON_PATH)) {
    const skipped = join(PACKAGE_ROOT, 'build', 'SKIPPED');
    if (existsSync(skipped)) {
      return { ok: false, reason: `unavailable: native addon not built: ${readFileSync(skipped, 'utf8').trim()}` };
    }
    return { ok: false, reason: `unavailable: native addon not built (${ADDON_PATH} is missing); ${HINT}` };
  }
  try {
    const addon = createRequire(import.meta.url)(ADDON_PATH) as Partial<FlashAddon>;
    const missing = (['plan', 'forward', 'buildInfo'] as const).filter((f) => typeof addon[f] !== 'function');
    if (missing.length) return { ok: false, reason: `unavailable: ${ADDON_PATH} is from another version (missing ${missing.join(', ')}); ${HINT}` };
    return { ok: true, addon: addon as FlashAddon };
  } catch (e) {
    return { ok: false, reason: `unavailable: native addon failed to load (${ADDON_PATH}): ${e instanceof Error ? e.message : String(e)}` };
  }
}

/** The addon, loaded on first call; null when it cannot be (see availability()). */
export function addon(): FlashAddon | null {
  cached ??= load();
  return cached.ok ? cached.addon : null;
}

/** ok when the addon loaded and @attn/cuda sees a device; otherwise the first reason why not. */
export function availability(): Availability {
  cached ??= load();
  if (!cached.ok) return { ok: false, reason: cached.reason };
  const cuda = cudaAvailability();
  if (!cuda.ok) return { ok: false, reason: cuda.reason.startsWith('unavailable') ? cuda.reason : `unavailable: ${cuda.reason}` };
  return { ok: true };
}
