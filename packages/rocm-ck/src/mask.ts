// attn's causal/window bounds -> CK tile's (mask_type, window_size_left, window_size_right).
// CK takes FlashAttention-style sides (-1 = unbounded) anchored per sequence by the mask type:
// mask_top_left (1) or mask_bottom_right (2); no_mask is 0. Unlike PyTorch, which always anchors
// bottom-right, attn passes its own alignment, so upperLeft causal with Sq != Sk is exact.
// ALiBi: CK switches its ALiBi to a "vertical" variant when it sees a plain causal mask (left < 0,
// right == 0); that variant gives the same softmax but a log-sum-exp shifted per row. With ALiBi the
// unbounded left side is therefore written as a finite window wider than any sequence.
import type { SdpaParams } from '@attn/core';
import { effectiveBounds } from '@attn/rocm';

export const MASK_NONE = 0;
export const MASK_TOP_LEFT = 1;
export const MASK_BOTTOM_RIGHT = 2;

export interface CkMask {
  readonly maskType: typeof MASK_NONE | typeof MASK_TOP_LEFT | typeof MASK_BOTTOM_RIGHT;
  readonly left: number;
  readonly right: number;
}

type MaskInput = Pick<SdpaParams, 'causal' | 'window' | 'alignment' | 'seqQ' | 'seqK' | 'alibiSlopes'> &
  Partial<Pick<SdpaParams, 'varlen'>>;

export function encodeCkMask(p: MaskInput): CkMask {
  const alibi = p.alibiSlopes !== null && p.alibiSlopes !== undefined;
  const bounds = effectiveBounds(p);
  const maskType = p.alignment === 'lowerRight' ? MASK_BOTTOM_RIGHT : MASK_TOP_LEFT;
  if (bounds === null) {
    // No mask; but CK's unmasked ALiBi is bottom-right, so upperLeft ALiBi needs an open top-left mask.
    // Varlen (group mode) sequences can have Sq != Sk, or fewer used keys, where the maxima agree.
    const varlen = (p.varlen ?? null) !== null;
    if (alibi && p.alignment === 'upperLeft' && (p.seqQ !== p.seqK || varlen))
      return { maskType: MASK_TOP_LEFT, left: -1, right: -1 };
    return { maskType: MASK_NONE, left: -1, right: -1 };
  }
  let left = bounds.left ?? -1;
  const right = bounds.right ?? -1;
  if (alibi && left < 0 && right === 0) left = p.seqQ + p.seqK;
  return { maskType, left, right };
}
