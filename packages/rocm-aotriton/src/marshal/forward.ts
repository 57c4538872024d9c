// SdpaParams + allocated buffers -> the plain object the shim copies into attn_fwd_params.
import { AttnInputError, type SdpaParams, type Tensor } from '@attn/core';
import { encodeWindow } from '../window.js';
import { AOT_DTYPE, aotDType, nullView, qkvView, scalarView, view, type TensorViewArg } from './tensor-view.js';

export const VARLEN_NONE = 0;
export const VARLEN_COMPACT = 1;

/** Device words holding the Philox seed and offset (uint64 each), read by the kernel. */
export interface PhiloxBuffers {
  readonly seedPtr: bigint;
  readonly offsetPtr: bigint;
}

export interface ForwardBuffers {
  readonly out: Tensor;
  /** AOTriton's L, float32 [rows, maxSeqlenQ] contiguous (see plan.ts). */
  readonly aotLse: Tensor;
  /** A zeroed int32 device word, or null when the plan needs none. */
  readonly atomicCounter: bigint | null;
  /** Only with dropout (which the AOTriton backends decline; see rules.ts). */
  readonly philox?: PhiloxBuffers;
}

/** Field names and order as attn_fwd_params (AOTriton 0.10+); seq_strides_* (0.12+) stay null. */
export interface AotFwdArgs {
  readonly Q: TensorViewArg;
  readonly K: TensorViewArg;
  readonly V: TensorViewArg;
  readonly B: TensorViewArg;
  readonly A: TensorViewArg;
  readonly Sm_scale: number;
  readonly L: TensorViewArg;
  readonly Out: TensorViewArg;
  readonly cu_seqlens_q: TensorViewArg;
  readonly cu_seqlens_k: TensorViewArg;
  readonly Max_seqlen_q: number;
  readonly Max_seqlen_k: number;
  readonly dropout_p: number;
  readonly philox_seed_ptr: TensorViewArg;
  readonly philox_offset1: TensorViewArg;
  readonly philox_offset2: bigint;
  readonly philox_seed_output: TensorViewArg;
  readonly philox_offset_output: TensorViewArg;
  readonly encoded_softmax: TensorViewArg;
  readonly persistent_atomic_counter: TensorViewArg;
  readonly causal_type: number;
  readonly varlen_type: number;
  readonly window_left: number;
  readonly window_right: number;
}

/** The additive bias as a [B, Hq, Sq, Sk] view (0 strides on broadcast dims), or a null view. */
export function biasView(p: SdpaParams): TensorViewArg {
  const dtype = aotDType(p.dtype);
  if (!p.mask) return nullView(4, dtype);
  if (p.mask.kind !== 'additive' || p.mask.tensor.dtype !== p.dtype) {
    throw new AttnInputError(
      'ATTN_MASK',
      `AOTriton takes an additive ${p.dtype} bias; got a ${p.mask.kind} ${p.mask.tensor.dtype} mask.`,
    );
  }
  return {
    ptr: p.mask.tensor.dataPointer(),
    sizes: [p.batch, p.headsQ, p.seqQ, p.seqK],
    strides: [...p.mask.expandedStrides],
    dtype,
  };
}

/** cu_seqlens as TensorView<1> int32 [B + 1], or null views for dense calls. */
export function cuSeqlensViews(p: SdpaParams): { q: TensorViewArg; k: TensorViewArg } {
  if (!p.varlen) return { q: nullView(1, AOT_DTYPE.int32), k: nullView(1, AOT_DTYPE.int32) };
  return { q: view(p.varlen.cuSeqlensQ), k: view(p.varlen.cuSeqlensK) };
}

/** The dropout fields: off, or AOTriton's own Philox stream keyed by the seed and offset words. */
export function dropoutFields(
  p: SdpaParams,
  philox: PhiloxBuffers | undefined,
): Pick<AotFwdArgs, 'dropout_p' | 'philox_seed_ptr' | 'philox_offset1' | 'philox_offset2'> {
  if (!p.dropout) {
    return {
      dropout_p: 0,
      philox_seed_ptr: nullView(0, AOT_DTYPE.uint64),
      philox_offset1: nullView(0, AOT_DTYPE.uint64),
      philox_offset2: 0n,
    };
  }
  if (!philox)
    throw new AttnInputError('ATTN_DROPOUT', 'AOTriton dropout needs device words for the Philox seed and offset.');
  return {
    dropout_p: p.dropout.p,
    philox_seed_ptr: scalarView(philox.seedPtr, AOT_DTYPE.uint64),
    philox_offset1: scalarView(philox.offsetPtr, AOT_DTYPE.uint64),
    philox_offset2: 0n,
  };
}

export function forwardArgs(p: SdpaParams, buf: ForwardBuffers): AotFwdArgs {
  const win = encodeWindow(p);
  if (!win.ok) throw new AttnInputError('ATTN_WINDOW', win.reason);
  const varlen = p.varlen !== null;
  const dtype = aotDType(p.dtype);
  const cu = cuSeqlensViews(p);
  if (win.window.causalType !== 0 && buf.atomicCounter === null) {
    throw new AttnInputError('ATTN_INTERNAL', 'AOTriton needs a zeroed atomic counter with causal or window masks.');
  }
  return {
    Q: qkvView(p.query, varlen),
    K: qkvView(p.key, varlen),
    V: qkvView(p.value, varlen),
    B: biasView(p),
    A: nullView(2, dtype),
    Sm_scale: p.scale,
    L: view(buf.aotLse),
    Out: qkvView(buf.out, varlen),
    cu_seqlens_q: cu.q,
    cu_seqlens_k: cu.k,
    Max_seqlen_q: p.varlen ? p.varlen.maxSeqlenQ : p.seqQ,
    Max_seqlen_k: p.varlen ? p.varlen.maxSeqlenK : p.seqK,
    ...dropoutFields(p, buf.philox),
    philox_seed_output: nullView(0, AOT_DTYPE.uint64),
    philox_offset_output: nullView(0, AOT_DTYPE.uint64),
    encoded_softmax: nullView(4, dtype),
    persistent_atomic_counter:
      buf.atomicCounter === null ? nullView(0, AOT_DTYPE.int32) : scalarView(buf.atomicCounter, AOT_DTYPE.int32),
    causal_type: win.window.causalType,
    varlen_type: varlen ? VARLEN_COMPACT : VARLEN_NONE,
    window_left: win.window.windowLeft,
    window_right: win.window.windowRight,
  };
}
