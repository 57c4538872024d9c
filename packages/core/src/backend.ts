// The interface every backend package implements. Implementations live in the backend packages.
import type { DeviceProperties, DeviceType } from './device.js';
import type { FloatDType } from './dtype.js';
import type { SdpaParams } from './params.js';
import type { Availability } from './storage.js';
import type { Tensor } from './tensor.js';

/** Why a backend declines a call: the rule's name and a message that says what to change. */
export interface Reason {
  readonly rule: string;
  readonly message: string;
}

/** What rules may read besides the params. */
export interface RuleContext {
  /** Properties of the device the query lives on (null if the runtime cannot say). */
  readonly device: DeviceProperties | null;
  /** When device is null: why the runtime could not say (shown in rule messages). */
  readonly deviceUnknownReason?: string;
}

/**
 * One check, as PyTorch's check_* functions: null when it passes. Its answer must follow from the
 * call's signature (shapes, strides, offsets, dtypes, devices, option values, the device's properties),
 * which selection caches per signature, unless `readsValues` says it reads more (addresses, tensor
 * values): such a rule runs on every call. Calls that carry host copies of index values
 * (params.varlen.seqlensQ, sequsedK.lengths, paged.table) are never cached.
 */
export interface Rule {
  readonly name: string;
  check(params: SdpaParams, ctx: RuleContext): string | null;
  /** The answer depends on more than the call's signature (e.g. storage addresses); re-checked per call. */
  readonly readsValues?: boolean;
}

export interface ForwardOutputs {
  /** Dense: [B, Hq, Sq, Dv]; varlen: [totalQ, Hq, Dv]. params.dtype (the query's, bfloat16 for float8_e4m3 inputs), the query's device. */
  readonly out: Tensor;
  /** float32, dense: [B, Hq, Sq]; varlen: [Hq, totalQ]. Natural log; -inf for fully masked rows. */
  readonly logsumexp: Tensor;
}

/** See Backend.tolerances. */
export interface Tolerances {
  readonly slack: Readonly<Partial<Record<FloatDType, number>>>;
}

export interface Gradients {
  readonly dq: Tensor;
  readonly dk: Tensor;
  readonly dv: Tensor;
  /** Gradient of the additive mask, reduced to the mask's own shape; only with an additive mask. */
  readonly dbias?: Tensor;
}

/**
 * A kernel family a backend can be told to run with the `kernel` call option (benchmarks, A/B runs).
 * Without the option the backend's dispatcher picks from the device and the problem; with it, the
 * named family runs or the call is declined with the reason (never a silent fallback).
 */
export interface KernelChoice {
  /** Unique within the backend: lowercase letters, digits, "." "_" "-" (e.g. 'sm90', 'avx2'). */
  readonly name: string;
  readonly description: string;
  /**
   * Why this kernel cannot run the call on this device, or null when it can. Same contract as
   * Rule.check: its answer must follow from the call's signature and the device's properties.
   */
  check?(params: SdpaParams, ctx: RuleContext): string | null;
}

/**
 * A backward that takes the forward's out and logsumexp from the caller (core's sdpaBackwardFrom):
 * P = exp(scores - logsumexp) and delta = rowsum(gradOut * out) with the tensors given, whatever call
 * produced them (FlashAttention's contract). A ring step of context parallelism hands it the merged
 * out and lse of the whole row, so one call gives the block's exact share of the full gradient.
 */
export interface BackwardFrom {
  /** Checks beyond the backend's own rules for this form (what its kernel cannot take from a caller). */
  readonly rules?: readonly Rule[];
  run(params: SdpaParams, saved: ForwardOutputs, gradOut: Tensor): Gradients;
}

export interface Backend {
  /** Stable name used in `backends`, explain and doctor: 'cpu-math', 'flash-cuda', ... */
  readonly name: string;
  readonly deviceType: DeviceType;
  /** Higher runs first among the backends of a device. */
  readonly defaultPriority: number;
  /**
   * The device type's catch-all: it runs every call core accepts there, within limits its rules state,
   * so it is tried last. explain labels it, so a report that selects it says the call fell back.
   */
  readonly fallback?: boolean;
  readonly description: string;
  /** Loads native code lazily; never throws. A failure is remembered and reported as the reason. */
  availability(): Availability;
  /** Ordered rules; the backend supports a call when every rule passes. */
  readonly rules: readonly Rule[];
  /**
   * The accuracy the backend claims, declared beside its rules (as xFormers' ERROR_ATOL): the
   * conformance suite's absolute slack per dtype, per unit of max(1, max |reference|), added to
   * twice the naive implementation's error. A dtype left out gets the suite's default.
   */
  readonly tolerances?: Tolerances;
  /**
   * Takes float8_e4m3 query, key and value (SdpaOptions.descale; params.descale non-null): reads them as
   * float8_e4m3, attends descale.q * q, descale.k * k, descale.v * v and writes a bfloat16 output
   * (params.dtype). Absent or false: core declines such calls for the backend by the rule float8Inputs
   * (its dtype rules see params.dtype, bfloat16, and could not tell).
   */
  readonly float8Inputs?: boolean;
  /** The kernel families the `kernel` option may name; absent or empty: the backend has no choosable kernel. */
  readonly kernels?: readonly KernelChoice[];
  forward(params: SdpaParams): ForwardOutputs;
  /**
   * The attention output alone, for sdpa(), which returns nothing else: a backend that can skip making
   * the logsumexp a tensor (its kernel writes it to scratch) saves that per call. Absent: core calls
   * forward() and disposes the logsumexp.
   */
  forwardOut?(params: SdpaParams): Tensor;
  /** Off the event loop where the backend can; core falls back to forward() otherwise. */
  forwardAsync?(params: SdpaParams): Promise<ForwardOutputs>;
  backward?(params: SdpaParams, saved: ForwardOutputs, gradOut: Tensor): Gradients;
  /** Backward from a caller's out and logsumexp; absent: sdpaBackwardFrom never selects this backend. */
  readonly backwardFrom?: BackwardFrom;
  /**
   * Extra facts for `attn doctor` and `attn bench` (how the addon was built, arch list, SIMD, ...).
   * With `kernel` (one of `kernels`), the facts of calls that name it, where they differ (the code
   * paths it runs); backends without kernel-specific facts ignore it.
   */
  buildInfo?(kernel?: string): Record<string, string | number | boolean | readonly string[]>;
}
