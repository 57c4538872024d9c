// One local attention call of the ring, forward and backward, through core on whatever backend the
// tensors' device selects.
//
// Backward of a block. Let the full row (query i over every key) have out O, lse L and gradient dO.
// FlashAttention's backward with the global L and delta = rowsum(dO * O) gives block b's exact share
// of the full gradient:
//   P = exp(S_b - L),  dV_b = P^T dO,  dS = P * (dO V_b^T - delta),  dQ += scale dS K_b,  dK_b = scale dS^T Q
// which is core's sdpaBackwardFrom with the merged (O, L) of the ring forward: one backward per
// block (Ring Attention's step), no forward.
import { sdpaBackwardFrom, sdpaForward } from '@attn/core';
import type { ForwardResult, Gradients, Tensor } from '@attn/core';
import type { LocalCallOptions } from './options.js';

function call(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  causal: boolean,
  o: LocalCallOptions,
  requiresGrad: boolean,
): ForwardResult {
  return sdpaForward(q, k, v, {
    isCausal: causal,
    scale: o.scale,
    enableGqa: o.enableGqa,
    backends: o.backends,
    requiresGrad,
  });
}

/** The block's own out and lse (the caller disposes both). */
export function blockForward(q: Tensor, k: Tensor, v: Tensor, causal: boolean, o: LocalCallOptions): ForwardResult {
  return call(q, k, v, causal, o, false);
}

/** What the backward of a query chunk needs from the full forward: its merged out and lse, and dO. */
export interface RowState {
  /** The merged out [B, Hq, rows, Dv] of the full forward, in the inputs' dtype and device. */
  readonly out: Tensor;
  /** The merged lse [B, Hq, rows], float32. */
  readonly lse: Tensor;
  /** dO, like out. */
  readonly gradOut: Tensor;
}

/** Gradients of one (query chunk, key chunk) block inside the full row (see the header); the caller disposes them. */
export function blockBackward(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  causal: boolean,
  rows: RowState,
  o: LocalCallOptions,
): Gradients {
  return sdpaBackwardFrom(q, k, v, { out: rows.out, logsumexp: rows.lse }, rows.gradOut, {
    isCausal: causal,
    scale: o.scale,
    enableGqa: o.enableGqa,
    backends: o.backends,
  });
}
