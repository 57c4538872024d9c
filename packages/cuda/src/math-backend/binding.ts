// The cuda-math functions of @attn/cuda's addon (native/src/math/bind_math.cpp), typed by hand, and
// their access: the runtime's addon, loaded and probed once by cuda-runtime.ts. An addon built before
// cuda-math existed lacks them; availability() then says to rebuild it.
import { DeviceError, type Availability } from '@attn/core';
import { cuda } from '../cuda-runtime.js';

/** A device tensor as the addon takes it: its first element's address, dtype code, shape and strides (elements). */
export interface MathTensorArg {
  readonly ptr: bigint;
  readonly dtype: number;
  readonly shape: readonly number[];
  readonly strides: readonly number[];
}

export interface MathDropoutArg {
  readonly threshold: number;
  readonly offset: number;
  readonly seed: bigint;
  readonly keepScale: number;
}

export interface MathForwardArgs {
  readonly device: number;
  readonly dtype: number;
  readonly batch: number;
  readonly headsQ: number;
  readonly headsKV: number;
  /** Dense: every sequence's length; varlen: the maxima (maxSeqlenQ / maxSeqlenK). */
  readonly seqQ: number;
  readonly seqK: number;
  readonly headDim: number;
  readonly headDimV: number;
  /** Varlen: host copies of the offsets (core validated them); the addon checks and uploads them. */
  readonly cuSeqlensQ: Int32Array | null;
  readonly cuSeqlensK: Int32Array | null;
  /** Keys used per sequence (core's validated host copy; the addon checks and uploads it), or null. */
  readonly sequsedK: Int32Array | null;
  /**
   * Paged K/V (forward only): core's validated host copy of the block table, row-major
   * [batch, maxBlocksPerSeq]; k and v are then pools [numBlocks, blockSize, Hk, D]. Null: packed or dense.
   */
  readonly blockTable: Int32Array | null;
  /** Keys per block (dim 1 of the pools); 0 without a block table. */
  readonly blockSize: number;
  /** Paged only, or absent: sequence b's keys start at key position keyStart[b] of its table row (a kv cache's leftpadK). */
  readonly keyStart?: Int32Array | null;
  readonly q: MathTensorArg;
  readonly k: MathTensorArg;
  readonly v: MathTensorArg;
  readonly out: MathTensorArg;
  readonly lse: MathTensorArg;
  readonly scale: number;
  /** 0: off. */
  readonly softcap: number;
  readonly causal: boolean;
  readonly lowerRight: boolean;
  /** Window sides in keys, -1 = unbounded (core's kernelWindow). */
  readonly windowLeft: number;
  readonly windowRight: number;
  readonly alibi: MathTensorArg | null;
  /** bool (keep-mask) or float (additive), broadcastable to [B, Hq, Sq, Sk]. */
  readonly mask: MathTensorArg | null;
  readonly dropout: MathDropoutArg | null;
}

export interface MathBackwardArgs extends MathForwardArgs {
  readonly dout: MathTensorArg;
  readonly dq: MathTensorArg;
  readonly dk: MathTensorArg;
  readonly dv: MathTensorArg;
  /** The additive mask's gradient: contiguous, the mask's shape and dtype; null without one. */
  readonly dbias: MathTensorArg | null;
}

/** The kernels' limits and launch shape (native/src/math/math_limits.h). */
export interface MathNativeLimits {
  readonly maxHeadDim: number;
  readonly maxSeq: number;
  readonly threads: number;
  readonly keyTile: number;
  readonly keyKernelSmemBytes: number;
}

export interface MathBinding {
  /** Queues the forward on the device's current stream; returns the kernel instance ('' when there are no query rows). */
  mathForward(args: MathForwardArgs): string;
  /** Queues the backward's kernels on the device's current stream; returns the instances that ran. */
  mathBackward(args: MathBackwardArgs): string[];
  mathLimits(): MathNativeLimits;
  /** Keys per block of the backward's key kernel (shared memory bounds it). */
  mathKeyTile(headDim: number, headDimV: number, acc64: boolean): number;
  mathKernels(): string[];
  /** '' when the addon has code for the device, else why not. */
  mathDeviceSupport(device: number): string;
  /** The kv-cache append and rotary kernel (attn/kv_append.cuh), queued on the stream ptrs names (src/kv-append.ts packs the arrays). */
  kvAppend(ptrs: BigUint64Array, nums: Float64Array, device: number): void;
}

export const MATH_FUNCTIONS: readonly (keyof MathBinding)[] = [
  'mathForward',
  'mathBackward',
  'mathLimits',
  'mathKeyTile',
  'mathKernels',
  'mathDeviceSupport',
  'kvAppend',
];

export type MathLoad =
  { readonly ok: true; readonly addon: MathBinding } | { readonly ok: false; readonly reason: string };

/** The math functions of the loaded addon, or why they cannot be used. Never throws. */
export function mathLoad(): MathLoad {
  const availability: Availability = cuda.availability();
  if (!availability.ok) return { ok: false, reason: availability.reason };
  const addon = cuda.native.loaded() as unknown as Partial<MathBinding> | null;
  const missing = MATH_FUNCTIONS.filter((f) => typeof addon?.[f] !== 'function');
  if (!addon || missing.length > 0) {
    return {
      ok: false,
      reason: `the @attn/cuda addon has no cuda-math kernels (missing ${missing.join(', ')}): it predates them; rebuild it with \`npx @attn/native build @attn/cuda\``,
    };
  }
  return { ok: true, addon: addon as MathBinding };
}

/** The math functions; DeviceError ATTN_UNAVAILABLE with the reason when they cannot run. */
export function requireMath(): MathBinding {
  const load = mathLoad();
  if (!load.ok) throw new DeviceError('ATTN_UNAVAILABLE', `cuda-math is unavailable: ${load.reason}`);
  return load.addon;
}
