// cutlass_memeff.node's interface (its arguments: the arrays of abi.ts, packed by launch-args.ts), and its loading through @attn/native (lazily, once; a failure is
// remembered and becomes the reason availability() gives). Nothing here throws at import time.
import { findPackageRoot, lazyNativeAddon, type NativeAddonLoad } from '@attn/native';

/** 'simt' forces the FMA path, 'mma' the tensor-core path (an error where it cannot run). */
export type KernelPath = 'auto' | 'simt' | 'mma';

export interface BackwardPlan {
  readonly workspaceBytes: number;
  /** The main kernel: tensor cores (fp16/bf16, sm80+, head dims multiples of 8 up to 128) or FMA. */
  readonly tensorCores: boolean;
  readonly querySplits: number;
  readonly dbiasReduced: boolean;
  /** A reduced dbias summed only over batch / heads: fp32 atomics in the main kernel (else its own kernel). */
  readonly dbiasAtomic: boolean;
  /**
   * How dbias is formed: '' (no dbias), 'direct' / 'direct-x4' (unbroadcast: stores, 1 or 4 keys per
   * request), 'atomic-x4' / 'atomic' (fp32 reductions; '+stagger' when the query walks are staggered per
   * head, '+presum' when a GQA group's dS is summed in the block first), 'recompute' (its own kernel).
   */
  readonly dbiasMode: string;
}

export interface MemeffAddon {
  /** Launches the forward on the stream of ptrs[stream] (arrays of abi.ts); returns the kernel instance that ran. */
  forward(ptrs: BigUint64Array, nums: Float64Array): string;
  /** The workspace and kernels a backward call needs (its workspace slots are not read). */
  backwardPlan(ptrs: BigUint64Array, nums: Float64Array, bptrs: BigUint64Array, bnums: Float64Array): BackwardPlan;
  /** Launches the backward passes; returns the kernel instances that ran. */
  backward(ptrs: BigUint64Array, nums: Float64Array, bptrs: BigUint64Array, bnums: Float64Array): string[];
  /** '' when the addon has code for this device, else why not. */
  deviceSupport(device: number): string;
  readonly kernels: readonly string[];
  readonly archs: string;
  readonly cudaRuntimeVersion: number;
}

const ADDON_FUNCTIONS = ['forward', 'backwardPlan', 'backward', 'deviceSupport'] as const;

/** The package folder (src/ or dist/ sit below it). */
export const PACKAGE_ROOT = findPackageRoot(import.meta.url, '@attn/cutlass-memeff');

export type AddonLoad = NativeAddonLoad<MemeffAddon>;

/** The addon (the prebuilt platform package, else a local build), loaded on first call; the outcome is cached. */
export const addonState: () => AddonLoad = lazyNativeAddon<MemeffAddon>({
  packageRoot: PACKAGE_ROOT,
  requiredFunctions: ADDON_FUNCTIONS,
});
