// normalizeVarlenCall: validation for packed inputs q [totalQ, Hq, D], k [totalK, Hk, D],
// v [totalK, Hk, Dv] with int32 offsets cuSeqlensQ/K of length B + 1 (FlashAttention's varlen).
import { describeValue } from './describe-value.js';
import { AttnInputError } from './errors.js';
import type { SdpaParams, VarlenOptions, VarlenParams } from './params.js';
import type { Tensor } from './tensor.js';
import type { NormalizedCall } from './validate.js';
import {
  checkAlibi,
  checkCommonOptions,
  checkCounterRange,
  checkOptionsObject,
  resolveScale,
  SDPA_OPTION_KEYS,
} from './validate-options.js';
import { deviceCapturing } from './device-registry.js';
import { checkSequsedK } from './validate-sequsedk.js';
import { checkQkv, checkSameDevice, checkTensorArg, shapeStr } from './validate-tensors.js';

const VARLEN_OPTION_KEYS: ReadonlySet<string> = new Set([
  ...[...SDPA_OPTION_KEYS].filter((k) => k !== 'attnMask'),
  'cuSeqlensQ',
  'cuSeqlensK',
  'maxSeqlenQ',
  'maxSeqlenK',
]);

function varlenError(message: string): AttnInputError {
  return new AttnInputError('ATTN_VARLEN', message);
}

/** int32 [B + 1], contiguous: what can be checked without reading the values. */
function checkOffsetsLayout(t: Tensor, name: string): void {
  if (t.dtype !== 'int32' || t.rank !== 1 || t.numel < 1) {
    throw varlenError(`${name} must be an int32 tensor of shape [batch + 1]; got ${t.dtype} ${shapeStr(t)}.`);
  }
  if (!t.isContiguous()) throw varlenError(`${name} must be contiguous (kernels read it as a plain array); call .contiguous().`);
}

/** Offsets: from 0, non-decreasing, ending at total. Returns a host copy (a synchronizing read on a device). */
function checkOffsets(t: Tensor, name: string, total: number): Int32Array {
  const offsets = Int32Array.from(t.toFloat64Array());
  if (offsets[0] !== 0) throw varlenError(`${name}[0] must be 0, got ${offsets[0]}.`);
  for (let b = 1; b < offsets.length; b++) {
    if (offsets[b]! < offsets[b - 1]!) {
      throw varlenError(`${name} must be non-decreasing; ${name}[${b}] = ${offsets[b]} < ${name}[${b - 1}] = ${offsets[b - 1]}.`);
    }
  }
  const last = offsets[offsets.length - 1]!;
  if (last !== total) {
    throw varlenError(`${name} ends at ${last} but the packed tensor holds ${total} tokens (dim 0); the last offset must equal it.`);
  }
  return offsets;
}

function maxLength(offsets: Int32Array): number {
  let max = 0;
  for (let b = 1; b < offsets.length; b++) max = Math.max(max, offsets[b]! - offsets[b - 1]!);
  return max;
}

/** `actual` null: the offsets were not read (graph capture), so only the range is checked. */
function checkMaxSeqlen(given: unknown, name: string, actual: number | null): number {
  if (!Number.isInteger(given) || (given as number) < (actual ?? 0) || (given as number) > 2 ** 31 - 1) {
    const bound = actual === null ? 'in [0, 2^31 - 1]' : `>= the longest sequence (${actual})`;
    throw varlenError(`${name} must be an integer ${bound}; got ${describeValue(given)}.`);
  }
  return given as number;
}

function checkPackedShapes(q: Tensor, k: Tensor, v: Tensor, enableGqa: boolean): void {
  if (q.rank !== 3 || k.rank !== 3 || v.rank !== 3) {
    throw new AttnInputError(
      'ATTN_RANK',
      `sdpaVarlen takes packed [totalTokens, heads, headDim] inputs; got query ${shapeStr(q)}, key ${shapeStr(k)}, value ${shapeStr(v)}.`,
    );
  }
  const [, hq, dq] = q.shape as [number, number, number];
  const [tk, hk, dk] = k.shape as [number, number, number];
  const [tv, hv] = v.shape as [number, number, number];
  if (hk !== hv) throw new AttnInputError('ATTN_HEADS', `key and value must have the same number of heads; got ${hk} and ${hv}.`);
  if (hq !== hk && !enableGqa) {
    throw new AttnInputError('ATTN_GQA', `query has ${hq} heads but key/value have ${hk}: pass enableGqa: true for grouped-query attention.`);
  }
  if (hq !== hk && (hk === 0 || hq % hk !== 0)) {
    throw new AttnInputError('ATTN_HEADS', `The number of heads in key/value (${hk}) must divide the number of heads in query (${hq}).`);
  }
  if (dq !== dk) throw new AttnInputError('ATTN_HEAD_DIM', `query and key must have the same head dim; got ${dq} and ${dk}.`);
  if (dq === 0) throw new AttnInputError('ATTN_HEAD_DIM', 'The head dim must be at least 1; got 0.');
  if (tk !== tv) throw new AttnInputError('ATTN_SEQ_LEN', `key and value must hold the same number of tokens; got ${tk} and ${tv}.`);
}

export function normalizeVarlenCall(query: unknown, key: unknown, value: unknown, options: VarlenOptions): NormalizedCall {
  if (options === undefined || options === null) {
    throw varlenError('sdpaVarlen needs options with cuSeqlensQ, cuSeqlensK, maxSeqlenQ and maxSeqlenK.');
  }
  const opts = checkOptionsObject<VarlenOptions>(options, VARLEN_OPTION_KEYS, 'sdpaVarlen');
  const q = checkTensorArg(query, 'query');
  const k = checkTensorArg(key, 'key');
  const v = checkTensorArg(value, 'value');
  const { dtype, device } = checkQkv(q, k, v);
  const common = checkCommonOptions(opts);
  checkPackedShapes(q, k, v, common.enableGqa);
  if (!opts.cuSeqlensQ || !opts.cuSeqlensK) throw varlenError('sdpaVarlen needs cuSeqlensQ and cuSeqlensK (int32 [batch + 1]).');
  const cuQ = checkTensorArg(opts.cuSeqlensQ, 'cuSeqlensQ');
  const cuK = checkTensorArg(opts.cuSeqlensK, 'cuSeqlensK');
  checkSameDevice(cuQ, 'cuSeqlensQ', device);
  checkSameDevice(cuK, 'cuSeqlensK', device);
  const [totalQ, headsQ, headDim] = q.shape as [number, number, number];
  const [totalK, headsKV] = k.shape as [number, number, number];
  checkOffsetsLayout(cuQ, 'cuSeqlensQ');
  checkOffsetsLayout(cuK, 'cuSeqlensK');
  if (cuQ.numel !== cuK.numel) {
    throw varlenError(`cuSeqlensQ and cuSeqlensK must have the same length (batch + 1); got ${cuQ.numel} and ${cuK.numel}.`);
  }
  // During graph capture the offsets stay on the device: reading them would break the capture, and
  // each replay may bring new ones. The kernels clamp what they read (params.capturing says so).
  const capturing = deviceCapturing(device);
  const seqlensQ = capturing ? null : checkOffsets(cuQ, 'cuSeqlensQ', totalQ);
  const seqlensK = capturing ? null : checkOffsets(cuK, 'cuSeqlensK', totalK);
  const batch = cuQ.numel - 1;
  const maxSeqlenQ = checkMaxSeqlen(opts.maxSeqlenQ, 'maxSeqlenQ', seqlensQ && maxLength(seqlensQ));
  const maxSeqlenK = checkMaxSeqlen(opts.maxSeqlenK, 'maxSeqlenK', seqlensK && maxLength(seqlensK));
  checkCounterRange(batch, headsQ);
  if (common.alibiSlopes) checkAlibi(common.alibiSlopes, batch, headsQ, device);
  const sequsedK = checkSequsedK(opts.sequsedK, batch, (b) => seqlensK![b + 1]! - seqlensK![b]!, device, capturing);

  const varlen: VarlenParams = { cuSeqlensQ: cuQ, cuSeqlensK: cuK, maxSeqlenQ, maxSeqlenK, seqlensQ, seqlensK };
  const params: SdpaParams = {
    query: q,
    key: k,
    value: v,
    device,
    dtype,
    batch,
    headsQ,
    headsKV,
    seqQ: maxSeqlenQ,
    seqK: maxSeqlenK,
    headDim,
    headDimV: v.shape[2]!,
    scale: resolveScale(common.explicitScale, headDim),
    causal: common.causal,
    alignment: common.alignment,
    window: common.window,
    mask: null,
    alibiSlopes: common.alibiSlopes,
    softcap: common.softcap,
    dropout: common.dropout,
    enableGqa: common.enableGqa,
    varlen: Object.freeze(varlen),
    sequsedK,
    requiresGrad: common.requiresGrad,
    deterministic: common.deterministic,
    capturing,
  };
  return { params: Object.freeze(params), backends: common.backends, rng: common.rng };
}
