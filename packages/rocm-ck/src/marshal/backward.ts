// SdpaParams -> fmha_bwd_traits/fmha_bwd_args as plain objects. CK runs dot_do_o (D), dq_dk_dv
// (dQ accumulated in fp32: zeroed dq_acc, per-split slices when deterministic) and convert_dq.
import type { SdpaParams, Tensor } from '@attn/core';
import { encodeCkMask } from '../mask.js';
import { ckBias, ckStrides, forwardTraits, usedKeysPointer, type CkStrides } from './args.js';

export interface CkBwdTraits {
  readonly hdim_q: number;
  readonly hdim_v: number;
  readonly data_type: 'fp16' | 'bf16';
  readonly is_group_mode: boolean;
  readonly mask_type: number;
  readonly bias_type: number;
  readonly has_dbias: boolean;
  readonly has_dropout: boolean;
  readonly is_store_randval: boolean;
  readonly is_deterministic: boolean;
}

export interface CkBwdBuffers {
  readonly out: Tensor;
  readonly lse: Tensor;
  readonly gradOut: Tensor;
  /** float32 [B, Hq, Sq] (varlen [Hq, totalQ]) scratch for rowsum(dO * O). */
  readonly d: Tensor;
  readonly dq: Tensor;
  /** With sequsedK, zeroed: CK writes no dK/dV row past a sequence's used keys. */
  readonly dk: Tensor;
  readonly dv: Tensor;
  readonly dbias: Tensor | null;
  /** float32 zeros [splits, B, Hq, Sq, D] (varlen [splits, Hq, totalQ, D]). */
  readonly dqAcc: Tensor;
}

/** dq_acc splits: 1, or ceil(Sk / kN0) with kN0 = 128 for D <= 128 else 64 when deterministic. */
export function dqAccSplits(p: SdpaParams): number {
  if (!p.deterministic) return 1;
  return Math.ceil(p.seqK / (p.headDim <= 128 ? 128 : 64));
}

export function backwardTraits(p: SdpaParams): CkBwdTraits {
  const f = forwardTraits(p);
  return {
    hdim_q: f.hdim_q,
    hdim_v: f.hdim_v,
    data_type: f.data_type,
    is_group_mode: f.is_group_mode,
    mask_type: f.mask_type,
    bias_type: f.bias_type,
    has_dbias: p.mask !== null,
    has_dropout: f.has_dropout,
    is_store_randval: false,
    is_deterministic: p.deterministic,
  };
}

export function backwardArgs(p: SdpaParams, buf: CkBwdBuffers): Record<string, bigint | number> {
  const varlen = p.varlen !== null;
  const st = (t: Tensor): CkStrides => ckStrides(t, varlen);
  const [q, k, v, o, dO, dq, dk, dv] = [p.query, p.key, p.value, buf.out, buf.gradOut, buf.dq, buf.dk, buf.dv].map(
    st,
  ) as CkStrides[];
  const mask = encodeCkMask(p);
  const bias = ckBias(p);
  const lsed = varlen
    ? { nhead: buf.lse.strides[0]!, batch: 0 }
    : { nhead: buf.lse.strides[1]!, batch: buf.lse.strides[0]! };
  // dq_acc [splits, B, Hq, Sq, D] / [splits, Hq, T, D]: row, nhead, batch, split strides.
  const a = buf.dqAcc.strides;
  const acc = varlen
    ? { row: a[2]!, nhead: a[1]!, batch: 0, split: a[0]! }
    : { row: a[3]!, nhead: a[2]!, batch: a[1]!, split: a[0]! };
  const db = buf.dbias
    ? { row: p.seqK, nhead: p.seqQ * p.seqK, batch: p.headsQ * p.seqQ * p.seqK }
    : { row: 0, nhead: 0, batch: 0 };
  return {
    q_ptr: p.query.dataPointer(),
    k_ptr: p.key.dataPointer(),
    v_ptr: p.value.dataPointer(),
    bias_ptr: bias.ptr,
    o_ptr: buf.out.dataPointer(),
    lse_ptr: buf.lse.dataPointer(),
    do_ptr: buf.gradOut.dataPointer(),
    d_ptr: buf.d.dataPointer(),
    dq_ptr: buf.dq.dataPointer(),
    dk_ptr: buf.dk.dataPointer(),
    dv_ptr: buf.dv.dataPointer(),
    dbias_ptr: buf.dbias ? buf.dbias.dataPointer() : 0n,
    dq_acc_ptr: buf.dqAcc.dataPointer(),
    seqstart_q_ptr: p.varlen ? p.varlen.cuSeqlensQ.dataPointer() : 0n,
    seqstart_k_ptr: p.varlen ? p.varlen.cuSeqlensK.dataPointer() : 0n,
    seqlen_k_ptr: usedKeysPointer(p),
    seqlen_q: p.seqQ,
    seqlen_k: p.seqK,
    batch: p.batch,
    max_seqlen_q: p.seqQ,
    max_seqlen_k: p.seqK,
    hdim_q: p.headDim,
    hdim_v: p.headDimV,
    nhead_q: p.headsQ,
    nhead_k: p.headsKV,
    scale: p.scale,
    stride_q: q!.row,
    stride_k: k!.row,
    stride_v: v!.row,
    stride_bias: bias.row,
    stride_o: o!.row,
    stride_do: dO!.row,
    stride_dq_acc: acc.row,
    stride_dq: dq!.row,
    stride_dk: dk!.row,
    stride_dv: dv!.row,
    stride_dbias: db.row,
    nhead_stride_q: q!.nhead,
    nhead_stride_k: k!.nhead,
    nhead_stride_v: v!.nhead,
    nhead_stride_bias: bias.nhead,
    nhead_stride_o: o!.nhead,
    nhead_stride_do: dO!.nhead,
    nhead_stride_lsed: lsed.nhead,
    nhead_stride_dq_acc: acc.nhead,
    nhead_stride_dq: dq!.nhead,
    nhead_stride_dk: dk!.nhead,
    nhead_stride_dv: dv!.nhead,
    nhead_stride_dbias: db.nhead,
    batch_stride_q: q!.batch,
    batch_stride_k: k!.batch,
    batch_stride_v: v!.batch,
    batch_stride_bias: bias.batch,
    batch_stride_o: o!.batch,
    batch_stride_do: dO!.batch,
    batch_stride_lsed: lsed.batch,
    batch_stride_dq_acc: acc.batch,
    batch_stride_dq: dq!.batch,
    batch_stride_dk: dk!.batch,
    batch_stride_dv: dv!.batch,
    batch_stride_dbias: db.batch,
    split_stride_dq_acc: acc.split,
    window_size_left: mask.left,
    window_size_right: mask.right,
    mask_type: mask.maskType,
    p_drop: p.dropout?.p ?? 0,
  };
}
