// cpu_flash.node's interface, and its loading through @attn/native (lazily, once; every way it can
// be missing becomes the reason that availability(), explain and `attn doctor` show). Nothing here
// throws at import time.
import type { HostArray } from '@attn/core';
import { findPackageRoot, lazyNativeAddon, type NativeAddonLoad } from '@attn/native';

/** A strided view as the addon takes it: element (a, b, c, d) at data[offset + a*s0 + b*s1 + c*s2 + d*s3]. */
export interface NativeView {
  readonly data: HostArray;
  readonly offset: number;
  readonly strides: readonly [number, number, number, number];
}

/** Everything a forward call needs; see native/src/args.cpp for the checks the addon repeats. */
export interface NativeForwardDesc {
  readonly isa: string;
  readonly threads: number;
  readonly dtype: 'float32' | 'float16' | 'bfloat16';
  readonly B: number;
  readonly Hq: number;
  readonly Hk: number;
  readonly Sq: number;
  readonly Sk: number;
  readonly D: number;
  readonly Dv: number;
  readonly q: NativeView;
  readonly k: NativeView;
  readonly v: NativeView;
  readonly out: NativeView;
  readonly lse: { readonly data: Float32Array; readonly offset: number };
  readonly scale: number;
  readonly softcap: number;
  readonly causal: boolean;
  /** Causal, window and ALiBi measured from key i + Sk - Sq (per sequence under varlen); else from key i. */
  readonly lowerRight: boolean;
  /** -1 = unbounded. */
  readonly windowLeft: number;
  readonly windowRight: number;
  readonly mask: (NativeView & { readonly kind: 'bool' | 'additive'; readonly dtype: string }) | null;
  readonly alibi: {
    readonly data: Float32Array;
    readonly offset: number;
    readonly strideB: number;
    readonly strideH: number;
  } | null;
  /** Packed sequences: B + 1 offsets into the [total, H, D] tensors (then Sq, Sk are the longest). */
  readonly varlen: { readonly cuQ: Int32Array; readonly cuK: Int32Array } | null;
  /**
   * Paged K/V (forward only): k and v are block pools [numBlocks, blockSize, Hk, D] given as views
   * [numBlocks, Hk, blockSize, D]; key j of row b is at position pos = j + keyStart[b] (keyStart
   * null: j) of its blocks, row pos % blockSize of block table[b * tableStride + floor(pos / blockSize)].
   * null = k and v are plain views.
   */
  readonly paged: {
    readonly table: Int32Array;
    readonly tableStride: number;
    readonly blockSize: number;
    readonly numBlocks: number;
    readonly keyStart: Int32Array | null;
  } | null;
  /** Keys used per batch row or sequence (B counts, each within its row's keys); null = all. */
  readonly sequsedK: Int32Array | null;
  readonly dropout: {
    readonly seedLo: number;
    readonly seedHi: number;
    readonly offset: number;
    readonly threshold: number;
    readonly keepScale: number;
  } | null;
}

export interface NativeBackwardDesc extends NativeForwardDesc {
  readonly dout: NativeView;
  readonly dq: NativeView;
  readonly dk: NativeView;
  readonly dv: NativeView;
  /** fp32 gradient of an additive mask, contiguous [dims]; each dim 1 (summed over) or full. */
  readonly dbias: { readonly data: Float32Array; readonly offset: number; readonly dims: readonly number[] } | null;
}

export interface NativeBuildInfo {
  readonly compiledIsas: string[];
  readonly runnableIsas: string[];
  readonly isa: string;
  readonly compiler: string;
  readonly napiVersion: number;
  readonly poolThreads: number;
  readonly forwardPath?: Record<string, string>;
  readonly backwardPath?: Record<string, string>;
}

export interface CpuFlashAddon {
  forward(desc: NativeForwardDesc): void;
  forwardAsync(desc: NativeForwardDesc): Promise<void>;
  backward(desc: NativeBackwardDesc): void;
  backwardAsync(desc: NativeBackwardDesc): Promise<void>;
  buildInfo(isa?: string): NativeBuildInfo;
}

const FUNCTIONS = ['forward', 'forwardAsync', 'backward', 'backwardAsync', 'buildInfo'] as const;

/** The package folder (src/flash/ or dist/ sit below it). */
export const PACKAGE_ROOT = findPackageRoot(import.meta.url, '@attn/cpu');

export type AddonLoad = NativeAddonLoad<CpuFlashAddon>;

/** The process-wide addon (the prebuilt platform package, else a local build), loaded on first use. */
export const addon: () => AddonLoad = lazyNativeAddon<CpuFlashAddon>({
  packageRoot: PACKAGE_ROOT,
  requiredFunctions: FUNCTIONS,
});
