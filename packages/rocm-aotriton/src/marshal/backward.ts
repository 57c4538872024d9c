// SdpaParams + saved forward outputs + gradients -> the plain object the shim copies into
// attn_bwd_params. D (delta) and DQ_ACC are LazyTensors in AOTriton; the shim hands AOTriton the
// buffers allocated here through the acquire callback.
import { AttnInputError, type SdpaParams, type Tensor } from '@attn/core';
import { encodeWindow } from '../window.js';
import { biasView, cuSeqlensViews, dropoutFields, VARLEN_COMPACT, VARLEN_NONE, type PhiloxBuffers } from './forward.js';
import { aotDType, nullView, qkvView, view, type TensorViewArg } from './tensor-view.js';

export interface BackwardBuffers {
  readonly out: Tensor;
  readonly gradOut: Tensor;
  readonly dq: Tensor;
  readonly dk: Tensor;
  readonly dv: Tensor;
  /** Gradient of the additive bias, [B, Hq, Sq, Sk] contiguous; null without a bias. */
  readonly dbias: Tensor | null;
  /** AOTriton-layout L converted from the forward's logsumexp (toAotriton). */
  readonly aotLse: Tensor;
  /** float32 scratch shaped like aotLse. */
  readonly delta: Tensor;
  /** float32 zeros shaped like dq (dense [B, Hq, Sq, D], varlen [T, Hq, D]). */
  readonly dqAcc: Tensor;
  readonly philox?: PhiloxBuffers;
}

export interface AotBwdArgs {
  readonly Q: TensorViewArg;
  readonly K: TensorViewArg;
  readonly V: TensorViewArg;
  readonly B: TensorViewArg;
  readonly Sm_scale: number;
  readonly Out: TensorViewArg;
  readonly DO: TensorViewArg;
  readonly DK: TensorViewArg;
  readonly DV: TensorViewArg;
  readonly DQ: TensorViewArg;
  readonly DB: TensorViewArg;
  readonly L: TensorViewArg;
  /** Handed out by the LazyTensor acquire callback. */
  readonly D: TensorViewArg;
  readonly cu_seqlens_q: TensorViewArg;
  readonly cu_seqlens_k: TensorViewArg;
  readonly Max_seqlen_q: number;
  readonly Max_seqlen_k: number;
  readonly dropout_p: number;
  readonly philox_seed_ptr: TensorViewArg;
  readonly philox_offset1: TensorViewArg;
  readonly philox_offset2: bigint;
  readonly causal_type: number;
  readonly varlen_type: number;
  readonly window_left: number;
  readonly window_right: number;
  readonly DQ_ACC: TensorViewArg;
}

/** dbias as the [B, Hq, Sq, Sk] view AOTriton writes (contiguous; the rules refuse broadcast masks). */
function dbiasView(p: SdpaParams, dbias: Tensor | null): TensorViewArg {
  if (!p.mask) return nullView(4, aotDType(p.dtype));
  if (!dbias) throw new AttnInputError('ATTN_INTERNAL', 'AOTriton backward with a bias needs a dbias buffer.');
  const [b, h, sq, sk] = [p.batch, p.headsQ, p.seqQ, p.seqK];
  if (dbias.numel !== b * h * sq * sk || !dbias.isContiguous()) {
    throw new AttnInputError('ATTN_INTERNAL', `dbias must be a contiguous buffer of ${b * h * sq * sk} elements.`);
  }
  return {
    ptr: dbias.dataPointer(),
    sizes: [b, h, sq, sk],
    strides: [h * sq * sk, sq * sk, sk, 1],
    dtype: aotDType(dbias.dtype),
  };
}

export function backwardArgs(p: SdpaParams, buf: BackwardBuffers): AotBwdArgs {
  const win = encodeWindow(p);
  if (!win.ok) throw new AttnInputError('ATTN_WINDOW', win.reason);
  const varlen = p.varlen !== null;
  const cu = cuSeqlensViews(p);
  const drop = dropoutFields(p, buf.philox);
  return {
    Q: qkvView(p.query, varlen),
    K: qkvView(p.key, varlen),
    V: qkvView(p.value, varlen),
    B: biasView(p),
    Sm_scale: p.scale,
    Out: qkvView(buf.out, varlen),
    DO: qkvView(buf.gradOut, varlen),
    DK: qkvView(buf.dk, varlen),
    DV: qkvView(buf.dv, varlen),
    DQ: qkvView(buf.dq, varlen),
    DB: dbiasView(p, buf.dbias),
    L: view(buf.aotLse),
    D: view(buf.delta),
    cu_seqlens_q: cu.q,
    cu_seqlens_k: cu.k,
    Max_seqlen_q: p.varlen ? p.varlen.maxSeqlenQ : p.seqQ,
    Max_seqlen_k: p.varlen ? p.varlen.maxSeqlenK : p.seqK,
    dropout_p: drop.dropout_p,
    philox_seed_ptr: drop.philox_seed_ptr,
    philox_offset1: drop.philox_offset1,
    philox_offset2: drop.philox_offset2,
    causal_type: win.window.causalType,
    varlen_type: varlen ? VARLEN_COMPACT : VARLEN_NONE,
    window_left: win.window.windowLeft,
    window_right: win.window.windowRight,
    DQ_ACC: qkvView(buf.dqAcc, varlen),
  };
}
