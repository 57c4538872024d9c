// normalizeParams: the validation every backend relies on, for dense [B, H, S, D] inputs. Throws
// AttnInputError with a stable code (error-codes.ts) and a message that says what to change.
//
// Decisions where PyTorch leaves room:
// - Rank: PyTorch's math path takes any rank >= 2; the dense path here takes exactly [B, H, S, D]
//   (add missing batch/head dims with unsqueeze). Packed inputs go through sdpaVarlen.
// - Hk != Hq needs enableGqa (PyTorch math would broadcast Hk = 1 silently; we do not).
// - isCausal together with attnMask is allowed and means both apply (as PyTorch's CPU flash
//   kernel; its math path refuses the pair).
// - Zero sizes: B, H, Sq, Sk and Dv may be 0. Sk = 0 means every row is fully masked: out 0,
//   logsumexp -inf. Fused backends decline zero sequence lengths (rule nonzeroSeqLens). D = 0 is
//   refused (the default scale would be infinite).
// - A non-contiguous last dim is not an input error: backends that need it decline (lastDimContiguous).
import { AttnInputError } from './errors.js';
import { broadcastsTo, expandedStridesTo } from './layout.js';
import type { MaskParams, SdpaOptions, SdpaParams } from './params.js';
import type { Tensor } from './tensor.js';
import { DENSE_CALL } from './call-cache.js';
import { type IndexValuePolicy, indexValuePolicy } from './index-values.js';
import {
  checkAlibi,
  checkCommonOptions,
  checkCounterRange,
  checkOptionsObject,
  resolveScale,
  SDPA_OPTION_KEYS,
} from './validate-options.js';
import { cachedOrValidated, givenOut, type NormalizedCall } from './validate-call.js';
import { checkDescale, checkFloat8Grad, checkFloat8Mask } from './validate-float8.js';
import { checkSequsedK } from './validate-sequsedk.js';
import { checkQkv, checkSameDevice, checkTensorArg, shapeStr } from './validate-tensors.js';

function checkRank4(q: Tensor, k: Tensor, v: Tensor): void {
  if (q.rank !== 4 || k.rank !== 4 || v.rank !== 4) {
    throw new AttnInputError(
      'ATTN_RANK',
      `query, key and value must be 4-D [batch, heads, seq, headDim]; got query ${shapeStr(q)}, key ${shapeStr(k)}, ` +
        `value ${shapeStr(v)}. Add missing dims with unsqueeze(0) (PyTorch's math path takes rank >= 2; ` +
        'this one needs [B, H, S, D]), or use sdpaVarlen for packed [total, H, D] inputs.',
    );
  }
}

/** Batch, heads, head dims and sequence lengths of q [B,Hq,Sq,D], k [B,Hk,Sk,D], v [B,Hk,Sk,Dv]. */
function checkDenseShapes(q: Tensor, k: Tensor, v: Tensor, enableGqa: boolean): void {
  const [bq, hq, , dq] = q.shape as [number, number, number, number];
  const [bk, hk, sk, dk] = k.shape as [number, number, number, number];
  const [bv, hv, sv] = v.shape as [number, number, number, number];
  if (bq !== bk || bq !== bv) {
    throw new AttnInputError(
      'ATTN_BATCH',
      `query, key and value must have the same batch size; got ${bq}, ${bk}, ${bv}. ` +
        'To broadcast, expand() them to one batch size first.',
    );
  }
  if (hk !== hv) {
    throw new AttnInputError(
      'ATTN_HEADS',
      `key and value must have the same number of heads; got key ${hk}, value ${hv}.`,
    );
  }
  if (hq !== hk) {
    if (!enableGqa) {
      throw new AttnInputError(
        'ATTN_GQA',
        `query has ${hq} heads but key/value have ${hk}: pass enableGqa: true for grouped-query attention, ` +
          'or give key and value as many heads as query.',
      );
    }
    if (hk === 0 || hq % hk !== 0) {
      throw new AttnInputError(
        'ATTN_HEADS',
        `The number of heads in key/value (${hk}) must divide the number of heads in query (${hq}).`,
      );
    }
  }
  if (dq !== dk) {
    throw new AttnInputError(
      'ATTN_HEAD_DIM',
      `query and key must have the same head dim (last dim); got ${dq} and ${dk}.`,
    );
  }
  if (dq === 0) {
    throw new AttnInputError('ATTN_HEAD_DIM', 'The head dim (last dim of query and key) must be at least 1; got 0.');
  }
  if (sk !== sv) {
    throw new AttnInputError(
      'ATTN_SEQ_LEN',
      `key and value must have the same sequence length (dim 2); got ${sk} and ${sv}.`,
    );
  }
}

/** Mask: bool or float (float32 or the query dtype), rank <= 4, broadcastable to [B, Hq, Sq, Sk]. */
function checkMask(mask: Tensor, q: Tensor, target: readonly [number, number, number, number]): MaskParams {
  if (mask.dtype !== 'bool' && mask.dtype !== 'float32' && mask.dtype !== q.dtype) {
    throw new AttnInputError(
      'ATTN_MASK_DTYPE',
      `Expected attnMask dtype to be bool or float32 or to match the query dtype (${q.dtype}), but got ${mask.dtype}. ` +
        `Convert it with .toDType('bool') for a keep-mask or .toDType('${q.dtype}') for an additive one.`,
    );
  }
  if (mask.rank > 4 || !broadcastsTo(mask.shape, target)) {
    throw new AttnInputError(
      'ATTN_MASK_SHAPE',
      `attnMask ${shapeStr(mask)} does not broadcast to [B, Hq, Sq, Sk] = [${target.join(', ')}]: use rank <= 4 with each dim ` +
        'equal to the target or 1 (right-aligned), e.g. [Sq, Sk] or [B, 1, Sq, Sk].',
    );
  }
  const es = expandedStridesTo(mask.shape, mask.strides, target);
  return {
    kind: mask.dtype === 'bool' ? 'bool' : 'additive',
    tensor: mask,
    expandedStrides: [es[0]!, es[1]!, es[2]!, es[3]!],
  };
}

function checkOutputSize(batch: number, headsQ: number, seqQ: number, seqK: number, headDimV: number): void {
  const out = batch * headsQ * seqQ * headDimV;
  const scores = batch * headsQ * seqQ * seqK;
  if (out > Number.MAX_SAFE_INTEGER || scores > Number.MAX_SAFE_INTEGER) {
    throw new AttnInputError(
      'ATTN_SIZE',
      `This call is too large to index: [B, Hq, Sq, Sk] = [${batch}, ${headsQ}, ${seqQ}, ${seqK}] has more than 2^53 scores; split it.`,
    );
  }
  checkCounterRange(batch, headsQ);
}

/** The full dense validation of a call whose signature is not cached. */
function validateDense(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  opts: Partial<SdpaOptions>,
  policy: IndexValuePolicy,
): NormalizedCall {
  const { inputs, dtype, device } = checkQkv(q, k, v);
  checkRank4(q, k, v);
  const common = checkCommonOptions(opts);
  const descale = checkDescale(opts.descale, inputs);
  checkFloat8Grad(inputs, common.requiresGrad);
  checkDenseShapes(q, k, v, common.enableGqa);
  const [batch, headsQ, seqQ, headDim] = q.shape as [number, number, number, number];
  const [, headsKV, seqK] = k.shape as [number, number, number, number];
  const headDimV = v.shape[3]!;
  checkOutputSize(batch, headsQ, seqQ, seqK, headDimV);

  let mask: MaskParams | null = null;
  if (opts.attnMask !== undefined && opts.attnMask !== null) {
    const m = checkTensorArg(opts.attnMask, 'attnMask');
    mask = checkMask(m, q, [batch, headsQ, seqQ, seqK]);
    checkFloat8Mask(inputs, mask);
    checkSameDevice(m, 'attnMask', device);
  }
  if (common.alibiSlopes) checkAlibi(common.alibiSlopes, batch, headsQ, device);
  const sequsedK = checkSequsedK(opts.sequsedK, batch, () => seqK, device, policy.onDevice);
  const out = givenOut(opts.out, [batch, headsQ, seqQ, headDimV], dtype, device, common.requiresGrad);

  const params: SdpaParams = {
    query: q,
    key: k,
    value: v,
    device,
    dtype,
    descale,
    batch,
    headsQ,
    headsKV,
    seqQ,
    seqK,
    headDim,
    headDimV,
    scale: resolveScale(common.explicitScale, headDim),
    causal: common.causal,
    alignment: common.alignment,
    window: common.window,
    mask,
    alibiSlopes: common.alibiSlopes,
    softcap: common.softcap,
    dropout: common.dropout,
    enableGqa: common.enableGqa,
    varlen: null,
    sequsedK,
    paged: null,
    kvCache: null,
    requiresGrad: common.requiresGrad,
    deterministic: common.deterministic,
    kernel: common.kernel,
    capturing: policy.capturing,
    indexValuesOnDevice: policy.onDevice,
    out,
  };
  return { params: Object.freeze(params), backends: common.backends, rng: common.rng, cached: null };
}

/** The full dense validation (or its cached result for this signature); also returns the per-call backend restriction and the rng state. */
export function normalizeCall(query: unknown, key: unknown, value: unknown, options?: SdpaOptions): NormalizedCall {
  const opts = checkOptionsObject<SdpaOptions>(options, SDPA_OPTION_KEYS, 'sdpa');
  const q = checkTensorArg(query, 'query');
  const k = checkTensorArg(key, 'key');
  const v = checkTensorArg(value, 'value');
  const policy = indexValuePolicy(q.device, opts.indexValuesOnDevice);
  return cachedOrValidated(DENSE_CALL, q, k, v, opts, policy, true, () => validateDense(q, k, v, opts, policy));
}

/** Validates a dense call and returns what backends receive. Throws AttnInputError. */
export function normalizeParams(query: Tensor, key: Tensor, value: Tensor, options?: SdpaOptions): SdpaParams {
  return normalizeCall(query, key, value, options).params;
}
