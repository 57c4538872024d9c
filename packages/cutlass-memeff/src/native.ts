// cutlass_memeff.node's interface, and its loading through @attn/native (lazily, once; a failure is
// remembered and becomes the reason availability() gives). Nothing here throws at import time.
import { findPackageRoot, lazyNativeAddon, type NativeAddonLoad } from '@attn/native';

/**
 * A device tensor as the addon takes it: the address of its first element and the b, h, s strides in elements
 * (a packed varlen [total, H, D] tensor: batch stride 0, its head and row strides).
 */
export interface TensorArg {
  readonly ptr: bigint;
  readonly strides: readonly [number, number, number];
}

export interface MaskArg {
  /** 1 additive, 2 boolean (true = attend). */
  readonly kind: 1 | 2;
  /** ElemType code of the mask's dtype (see DTYPE_CODE in launch-args.ts). */
  readonly dtype: number;
  readonly ptr: bigint;
  /** Strides expanded to [B, Hq, Sq, Sk], 0 on broadcast dims. */
  readonly strides: readonly [number, number, number, number];
}

export interface DropoutArg {
  readonly threshold: number;
  readonly seed: bigint;
  readonly offset: number;
  readonly keepScale: number;
}

/** ALiBi slopes: float32 [Hq] or [B, Hq] on the device; strides along (batch, head) in elements (0 for [Hq]). */
export interface AlibiArg {
  readonly ptr: bigint;
  readonly strides: readonly [number, number];
}

/** Varlen: device int32 offsets [B + 1] of each sequence in the packed q and k, and their totals. */
export interface VarlenArg {
  readonly cuSeqlensQ: bigint;
  readonly cuSeqlensK: bigint;
  readonly totalQ: number;
  readonly totalK: number;
}

/** 'simt' forces the FMA path, 'mma' the tensor-core path (an error where it cannot run). */
export type KernelPath = 'auto' | 'simt' | 'mma';

export interface ForwardArgs {
  readonly dtype: number;
  readonly device: number;
  readonly stream: bigint;
  readonly path: KernelPath;
  readonly batch: number;
  readonly headsQ: number;
  readonly headsKV: number;
  readonly seqQ: number;
  readonly seqK: number;
  readonly headDim: number;
  readonly headDimV: number;
  readonly scale: number;
  readonly causal: boolean;
  /** Causal, the window and ALiBi measure from the lower-right diagonal (i + Sk - Sq; per sequence under varlen). */
  readonly lowerRight: boolean;
  /** [left, right] keys around the diagonal, -1 unbounded (core's kernelWindow). */
  readonly window: readonly [number, number];
  /** 0: off. */
  readonly softcap: number;
  readonly alibi: AlibiArg | null;
  readonly varlen: VarlenArg | null;
  /** Device int32 [B]: keys used per sequence (sequsedK); null: all. */
  readonly sequsedK: bigint | null;
  readonly q: TensorArg;
  readonly k: TensorArg;
  readonly v: TensorArg;
  readonly out: TensorArg;
  readonly lse: bigint;
  readonly mask: MaskArg | null;
  readonly dropout: DropoutArg | null;
}

export interface DbiasArg {
  readonly ptr: bigint;
  /** dbias's own (contiguous) strides expanded to [B, Hq, Sq, Sk], 0 on the dims it sums over. */
  readonly strides: readonly [number, number, number, number];
  /** Its sizes along [B, Hq, Sq, Sk] (1 where it sums). */
  readonly sizes: readonly [number, number, number, number];
}

export interface BackwardArgs extends ForwardArgs {
  readonly dout: TensorArg;
  readonly dq: TensorArg;
  readonly dk: TensorArg;
  readonly dv: TensorArg;
  readonly dbias: DbiasArg | null;
  readonly deterministic: boolean;
  readonly workspace: { readonly ptr: bigint; readonly bytes: number } | null;
}

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
  /** Launches the forward on `stream`; returns the kernel instance that ran. */
  forward(args: ForwardArgs): string;
  backwardPlan(args: BackwardArgs): BackwardPlan;
  /** Launches the backward passes; returns the kernel instances that ran. */
  backward(args: BackwardArgs): string[];
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
