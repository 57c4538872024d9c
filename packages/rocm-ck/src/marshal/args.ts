// SdpaParams -> CK tile's fmha_fwd_traits/fmha_fwd_args and fmha_bwd_traits/fmha_bwd_args as plain
// objects (the shim copies them by field name). CK addresses q/k/v/o by row (seq), nhead and batch
// strides in elements; attn's [B, H, S, D] strides are [batch, nhead, row, 1]. Varlen is CK's group
// mode: packed [T, H, D] with row stride stride(0), nhead stride stride(1), batch stride 0, and
// seqstart offsets.
import { AttnInputError, type SdpaParams, type Tensor } from '@attn/core';
import { encodeCkMask } from '../mask.js';

export const BIAS_NONE = 0;
export const BIAS_ELEMENTWISE = 1;
export const BIAS_ALIBI = 2;

export interface CkStrides {
  readonly row: number;
  readonly nhead: number;
  readonly batch: number;
}

/** Row / nhead / batch strides of a q/k/v/o-like tensor. */
export function ckStrides(t: Tensor, varlen: boolean): CkStrides {
  const s = t.strides;
  if (varlen) return { row: s[0]!, nhead: s[1]!, batch: 0 };
  return { row: s[2]!, nhead: s[1]!, batch: s[0]! };
}

export interface CkFwdTraits {
  readonly hdim_q: number;
  readonly hdim_v: number;
  readonly data_type: 'fp16' | 'bf16';
  readonly is_group_mode: boolean;
  readonly is_v_rowmajor: boolean;
  readonly mask_type: number;
  readonly bias_type: number;
  readonly has_lse: boolean;
  readonly has_dropout: boolean;
  readonly do_fp8_static_quant: boolean;
}

export interface CkFwdArgs {
  readonly q_ptr: bigint;
  readonly k_ptr: bigint;
  readonly v_ptr: bigint;
  readonly bias_ptr: bigint;
  readonly lse_ptr: bigint;
  readonly o_ptr: bigint;
  readonly seqstart_q_ptr: bigint;
  readonly seqstart_k_ptr: bigint;
  /** Group mode with sequsedK: its int32 [B] tensor (each sequence's used keys), else 0. */
  readonly seqlen_k_ptr: bigint;
  readonly seqlen_q: number;
  readonly seqlen_k: number;
  readonly batch: number;
  readonly max_seqlen_q: number;
  readonly hdim_q: number;
  readonly hdim_v: number;
  readonly nhead_q: number;
  readonly nhead_k: number;
  readonly scale_s: number;
  readonly stride_q: number;
  readonly stride_k: number;
  readonly stride_v: number;
  readonly stride_bias: number;
  readonly stride_o: number;
  readonly nhead_stride_q: number;
  readonly nhead_stride_k: number;
  readonly nhead_stride_v: number;
  readonly nhead_stride_bias: number;
  readonly nhead_stride_lse: number;
  readonly nhead_stride_o: number;
  readonly batch_stride_q: number;
  readonly batch_stride_k: number;
  readonly batch_stride_v: number;
  readonly batch_stride_bias: number;
  readonly batch_stride_lse: number;
  readonly batch_stride_o: number;
  readonly window_size_left: number;
  readonly window_size_right: number;
  readonly mask_type: number;
  readonly p_drop: number;
}

function dataType(p: SdpaParams): 'fp16' | 'bf16' {
  if (p.dtype === 'float16') return 'fp16';
  if (p.dtype === 'bfloat16') return 'bf16';
  throw new AttnInputError('ATTN_DTYPE', `CK's fmha takes float16 or bfloat16, not ${p.dtype}.`);
}

/** Bias pointer and strides: an additive [B,Hq,Sq,Sk] tensor, or ALiBi slopes [Hq] / [B, Hq]. */
export function ckBias(p: SdpaParams): { type: number; ptr: bigint; row: number; nhead: number; batch: number } {
  if (p.alibiSlopes) {
    const s = p.alibiSlopes;
    // CK reads slope[b * stride_bias + h]: slopes contiguous over heads, stride_bias the batch stride.
    return { type: BIAS_ALIBI, ptr: s.dataPointer(), row: s.rank === 2 ? s.strides[0]! : 0, nhead: 0, batch: 0 };
  }
  if (p.mask) {
    const [b, h, q] = p.mask.expandedStrides;
    return { type: BIAS_ELEMENTWISE, ptr: p.mask.tensor.dataPointer(), row: q, nhead: h, batch: b };
  }
  return { type: BIAS_NONE, ptr: 0n, row: 0, nhead: 0, batch: 0 };
}

/** CK's seqlen_k_ptr: sequsedK's tensor in group mode (the rules decline it in batch mode), else 0. */
export function usedKeysPointer(p: SdpaParams): bigint {
  return p.varlen && p.sequsedK ? p.sequsedK.tensor.dataPointer() : 0n;
}

export function forwardTraits(p: SdpaParams): CkFwdTraits {
  return {
    hdim_q: p.headDim,
    hdim_v: p.headDimV,
    data_type: dataType(p),
    is_group_mode: p.varlen !== null,
    is_v_rowmajor: true,
    mask_type: encodeCkMask(p).maskType,
    bias_type: ckBias(p).type,
    has_lse: true,
    has_dropout: p.dropout !== null,
    do_fp8_static_quant: false,
  };
}

export interface CkFwdBuffers {
  readonly out: Tensor;
  /** attn's logsumexp: dense [B, Hq, Sq], varlen [Hq, totalQ]. */
  readonly lse: Tensor;
}

export function forwardArgs(p: SdpaParams, buf: CkFwdBuffers): CkFwdArgs {
  const varlen = p.varlen !== null;
  const [q, k, v, o] = [p.query, p.key, p.value, buf.out].map((t) => ckStrides(t, varlen)) as [
    CkStrides,
    CkStrides,
    CkStrides,
    CkStrides,
  ];
  const mask = encodeCkMask(p);
  const bias = ckBias(p);
  // lse: dense [B, Hq, Sq] -> nhead stride Sq, batch stride Hq*Sq; group mode [Hq, totalQ] -> nhead
  // stride totalQ, batch 0 (CK offsets rows by seqstart_q).
  const lse = varlen
    ? { nhead: buf.lse.strides[0]!, batch: 0 }
    : { nhead: buf.lse.strides[1]!, batch: buf.lse.strides[0]! };
  return {
    q_ptr: p.query.dataPointer(),
    k_ptr: p.key.dataPointer(),
    v_ptr: p.value.dataPointer(),
    bias_ptr: bias.ptr,
    lse_ptr: buf.lse.dataPointer(),
    o_ptr: buf.out.dataPointer(),
    seqstart_q_ptr: p.varlen ? p.varlen.cuSeqlensQ.dataPointer() : 0n,
    seqstart_k_ptr: p.varlen ? p.varlen.cuSeqlensK.dataPointer() : 0n,
    seqlen_k_ptr: usedKeysPointer(p),
    seqlen_q: p.seqQ,
    seqlen_k: p.seqK,
    batch: p.batch,
    max_seqlen_q: p.seqQ,
    hdim_q: p.headDim,
    hdim_v: p.headDimV,
    nhead_q: p.headsQ,
    nhead_k: p.headsKV,
    scale_s: p.scale,
    stride_q: q.row,
    stride_k: k.row,
    stride_v: v.row,
    stride_bias: bias.row,
    stride_o: o.row,
    nhead_stride_q: q.nhead,
    nhead_stride_k: k.nhead,
    nhead_stride_v: v.nhead,
    nhead_stride_bias: bias.nhead,
    nhead_stride_lse: lse.nhead,
    nhead_stride_o: o.nhead,
    batch_stride_q: q.batch,
    batch_stride_k: k.batch,
    batch_stride_v: v.batch,
    batch_stride_bias: bias.batch,
    batch_stride_lse: lse.batch,
    batch_stride_o: o.batch,
    window_size_left: mask.left,
    window_size_right: mask.right,
    mask_type: mask.maskType,
    p_drop: p.dropout?.p ?? 0,
  };
}
