// Arguments of the shim's LSE conversion between AOTriton's layout and attn's (see plan.ts).
// Direction 'toAttn' after a forward: +inf and values <= FULLY_MASKED_BELOW become -inf.
// Direction 'toAotriton' before a backward: -inf becomes +inf, so exp(s - L) is 0 on masked rows.
import type { SdpaParams, Tensor } from '@attn/core';

/**
 * AOTriton starts the running max at -3.40282e38 (log2 domain), so a row masked entirely by a bias
 * ends near -2.36e38 (natural log). No row with a key it attends to gets below -1e38.
 */
export const FULLY_MASKED_BELOW = -1e38;

export interface LseConvertArgs {
  readonly direction: 'toAttn' | 'toAotriton';
  /** AOTriton layout: float32 [sequences * Hq, maxSeqlenQ], contiguous. */
  readonly aot: bigint;
  /** attn layout: dense [B, Hq, Sq] or varlen [Hq, totalQ], contiguous. */
  readonly attn: bigint;
  readonly headsQ: number;
  readonly sequences: number;
  readonly maxSeqlenQ: number;
  /** Varlen: totalQ and the device int32 [sequences + 1] offsets; dense: 0 and 0n. */
  readonly totalQ: number;
  readonly cuSeqlensQ: bigint;
  readonly fullyMaskedBelow: number;
}

export function lseConvertArgs(
  p: SdpaParams,
  direction: LseConvertArgs['direction'],
  aot: Tensor,
  attn: Tensor,
): LseConvertArgs {
  return {
    direction,
    aot: aot.dataPointer(),
    attn: attn.dataPointer(),
    headsQ: p.headsQ,
    sequences: p.batch,
    maxSeqlenQ: p.varlen ? p.varlen.maxSeqlenQ : p.seqQ,
    totalQ: p.varlen ? p.query.shape[0]! : 0,
    cuSeqlensQ: p.varlen ? p.varlen.cuSeqlensQ.dataPointer() : 0n,
    fullyMaskedBelow: FULLY_MASKED_BELOW,
  };
}
