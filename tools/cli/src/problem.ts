// One attention problem as the CLI describes it: sizes, dtype, device and the features in use.
import type { Alignment, DeviceLike, QkvDType } from '@attn/core';

export type MaskKind = 'bool' | 'additive';

export interface Features {
  readonly causal: boolean;
  readonly alignment: Alignment;
  readonly mask: MaskKind | null;
  readonly dropoutP: number;
  /** [left, right] with -1 = unbounded, as FlashAttention. */
  readonly window: readonly [number, number] | null;
  readonly alibi: boolean;
  /** 0 = off. */
  readonly softcap: number;
  readonly enableGqa: boolean;
  readonly requiresGrad: boolean;
  /**
   * Packed varlen inputs (sdpaVarlen): q [B*Sq, Hq, D], k/v [B*Sk, Hk, D], every sequence Sq queries
   * and Sk keys, cuSeqlensQ/K on the problem's device.
   */
  readonly varlen: boolean;
  /** indexValuesOnDevice: true (no host read of cuSeqlensQ/K per call). */
  readonly indexValuesOnDevice: boolean;
  /** Each call writes into a preallocated output (the out option) instead of allocating one. */
  readonly out: boolean;
  /** The kernel option: a kernel family of the backends that declare it (`attn doctor` lists them), or null. */
  readonly kernel: string | null;
}

export interface ProblemSpec extends Features {
  readonly batch: number;
  readonly headsQ: number;
  readonly headsKV: number;
  readonly seqQ: number;
  readonly seqK: number;
  readonly headDim: number;
  readonly headDimV: number;
  /** q, k and v's; float8_e4m3 inputs are stored unscaled (descale 1) and give a bfloat16 output, forward only. */
  readonly dtype: QkvDType;
  /** 'cpu', 'cuda', 'cuda:1', ... */
  readonly device: DeviceLike;
  /** Seed of the random inputs (and of dropout). */
  readonly seed: number;
}

export const PLAIN_FEATURES: Features = {
  causal: false,
  alignment: 'upperLeft',
  mask: null,
  dropoutP: 0,
  window: null,
  alibi: false,
  softcap: 0,
  enableGqa: false,
  requiresGrad: false,
  varlen: false,
  indexValuesOnDevice: false,
  out: false,
  kernel: null,
};

/** "B=1 Hq=8 Hk=8 Sq=512 Sk=512 D=64" (Dv and Hk only where they differ). */
export function describeShape(p: ProblemSpec): string {
  const heads = p.headsKV === p.headsQ ? `H=${p.headsQ}` : `Hq=${p.headsQ} Hk=${p.headsKV}`;
  const seq = p.seqQ === p.seqK ? `S=${p.seqQ}` : `Sq=${p.seqQ} Sk=${p.seqK}`;
  const dim = p.headDimV === p.headDim ? `D=${p.headDim}` : `D=${p.headDim} Dv=${p.headDimV}`;
  return `B=${p.batch} ${heads} ${seq} ${dim}`;
}

/** "causal, window 128,0, dropout 0.1" or "plain". */
export function describeFeatures(f: Features): string {
  const parts: string[] = [];
  if (f.causal) parts.push(f.alignment === 'lowerRight' ? 'causal (lower-right)' : 'causal');
  if (f.mask) parts.push(`${f.mask} mask`);
  if (f.window) parts.push(`window ${f.window[0]},${f.window[1]}`);
  if (f.alibi) parts.push('alibi');
  if (f.softcap > 0) parts.push(`softcap ${f.softcap}`);
  if (f.dropoutP > 0) parts.push(`dropout ${f.dropoutP}`);
  if (f.enableGqa) parts.push('gqa');
  if (f.requiresGrad) parts.push('requires grad');
  if (f.varlen) parts.push(f.indexValuesOnDevice ? 'varlen (index values on device)' : 'varlen');
  if (f.out) parts.push('preallocated out');
  if (f.kernel) parts.push(`kernel ${f.kernel}`);
  return parts.length ? parts.join(', ') : 'non-causal';
}
