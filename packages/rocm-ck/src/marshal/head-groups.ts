// GQA/MQA backward: CK's dq_dk_dv kernel reads K/V at head h / (Hq / Hk) but writes dK/dV at query
// head h (fmha_bwd_kernel.hpp: i_nhead * nhead_stride_dk), so the backward runs into buffers with Hq
// heads and the native head-group sum adds each group of Hq / Hk heads into dk / dv, as PyTorch's
// mha_bwd_ck does with dk_expanded / dv_expanded.
import type { SdpaParams, Tensor } from '@attn/core';

export interface CkHeadGroupSum {
  readonly src: bigint;
  readonly dst: bigint;
  readonly dtype: 'fp16' | 'bf16';
  readonly outer: number;
  readonly headsKV: number;
  readonly group: number;
  readonly inner: number;
}

/** The shape of an expanded dK (headDim) or dV (headDimV) buffer: key's shape with Hq heads. */
export function expandedShape(p: SdpaParams, dim: number): number[] {
  return p.varlen ? [p.key.shape[0]!, p.headsQ, dim] : [p.batch, p.headsQ, p.seqK, dim];
}

/** Arguments that sum src (contiguous, Hq heads) into dst (contiguous, Hk heads). */
export function headGroupSumArgs(p: SdpaParams, src: Tensor, dst: Tensor): CkHeadGroupSum {
  const dim = dst.shape[dst.rank - 1]!;
  return {
    src: src.dataPointer(),
    dst: dst.dataPointer(),
    dtype: p.dtype === 'bfloat16' ? 'bf16' : 'fp16',
    outer: dst.shape[0]!,
    headsKV: p.headsKV,
    group: p.headsQ / p.headsKV,
    inner: p.varlen ? dim : p.seqK * dim,
  };
}
