// attn's causal/window bounds -> AOTriton's (causal_type, window_left, window_right).
// AOTriton measures explicit window values from the TOP-LEFT diagonal: row i sees keys
// i - window_left <= j <= i + window_right. Two sentinels are resolved per sequence inside the kernel
// (so they also work with varlen): TopLeftAligned gives left = seqlen_q, right = 0; BottomRightAligned
// gives left = seqlen_q, right = seqlen_k - seqlen_q. A left of seqlen_q is unbounded (i < seqlen_q).
// Causal is WindowedAttention with both sides set to the same sentinel, as PyTorch passes it; using
// the same value on both sides also keeps causal correct on the AOTriton versions with the
// window_right bug (they read window_left for both sides).
import type { Alignment, SdpaParams } from '@attn/core';
import { effectiveBounds } from '@attn/rocm';

export const CAUSAL_TYPE_NONE = 0;
export const CAUSAL_TYPE_WINDOWED = 3;
export const WINDOW_TOP_LEFT_ALIGNED = -2147483647;
export const WINDOW_BOTTOM_RIGHT_ALIGNED = -2147483646;

export interface AotritonWindow {
  readonly causalType: typeof CAUSAL_TYPE_NONE | typeof CAUSAL_TYPE_WINDOWED;
  readonly windowLeft: number;
  readonly windowRight: number;
}

export type WindowEncoding =
  { readonly ok: true; readonly window: AotritonWindow } | { readonly ok: false; readonly reason: string };

type WindowInput = Pick<SdpaParams, 'causal' | 'window' | 'alignment' | 'seqQ' | 'seqK'> & { readonly varlen: unknown };

const NONE: AotritonWindow = { causalType: CAUSAL_TYPE_NONE, windowLeft: 0, windowRight: 0 };

function sentinel(alignment: Alignment): number {
  return alignment === 'lowerRight' ? WINDOW_BOTTOM_RIGHT_ALIGNED : WINDOW_TOP_LEFT_ALIGNED;
}

/**
 * Encodes the call's bounds. Dense calls shift explicit values by d = seqK - seqQ for lowerRight
 * (left - d, right + d from the top-left diagonal). Varlen calls have one d per sequence, so with
 * lowerRight only what the sentinels express is encodable: an unbounded left, and a right of 0
 * (causal) or unbounded.
 */
export function encodeWindow(p: WindowInput): WindowEncoding {
  const bounds = effectiveBounds(p);
  if (bounds === null) return { ok: true, window: NONE };
  const varlen = p.varlen !== null && p.varlen !== undefined;
  // Varlen: one d per sequence, so an explicit value is only exact when there is no shift at all.
  const d = p.alignment === 'lowerRight' ? p.seqK - p.seqQ : 0;
  const explicitOk = !varlen || p.alignment === 'upperLeft';
  // Unbounded right: any value >= the longest key sequence (kept small enough for int32 math).
  const openRight = p.seqK;

  let right: number;
  if (bounds.right === null) right = openRight;
  else if (bounds.right === 0) right = sentinel(p.alignment);
  else if (explicitOk) right = bounds.right + d;
  else return { ok: false, reason: notEncodable('right', bounds.right) };

  let left: number;
  if (bounds.left === null) left = isSentinel(right) ? right : WINDOW_TOP_LEFT_ALIGNED;
  else if (explicitOk) left = bounds.left - d;
  else return { ok: false, reason: notEncodable('left', bounds.left) };

  return { ok: true, window: { causalType: CAUSAL_TYPE_WINDOWED, windowLeft: left, windowRight: right } };
}

export function isSentinel(value: number): boolean {
  return value === WINDOW_TOP_LEFT_ALIGNED || value === WINDOW_BOTTOM_RIGHT_ALIGNED;
}

function notEncodable(side: string, value: number): string {
  return (
    `AOTriton measures windows from the top-left diagonal and resolves lowerRight alignment per sequence only ` +
    `for causal (left unbounded, right 0); a varlen call with a lowerRight window ${side} of ${value} cannot be expressed: ` +
    `use alignment 'upperLeft', a dense call, or CK (preferredRocmFaLibrary('ck') from @attn/rocm)`
  );
}
