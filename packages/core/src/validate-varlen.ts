// normalizeVarlenCall: validation for packed inputs q [totalQ, Hq, D], k [totalK, Hk, D],
// v [totalK, Hk, Dv] with int32 offsets cuSeqlensQ/K of length B + 1 (FlashAttention's varlen), or
// with paged K/V: k [numBlocks, blockSize, Hk, D], v [numBlocks, blockSize, Hk, Dv] and a blockTable.
import { describeValue } from './describe-value.js';
import { AttnInputError } from './errors.js';
import type { SdpaParams, VarlenOptions, VarlenParams } from './params.js';
import type { Tensor } from './tensor.js';
import type { NormalizedCall } from './validate-call.js';
import { VARLEN_CALL } from './call-cache.js';
import { type IndexValuePolicy, indexValuePolicy } from './index-values.js';
import {
  checkAlibi,
  checkCommonOptions,
  checkCounterRange,
  checkOptionsObject,
  resolveScale,
  SDPA_OPTION_KEYS,
} from './validate-options.js';
import { cachedOrValidated, givenOut } from './validate-call.js';
import { blockTableError, checkBlockTable, pagedPoolShape } from './validate-block-table.js';
import { refuseFloat8 } from './validate-float8.js';
import { checkSequsedK } from './validate-sequsedk.js';
import { checkQkv, checkSameDevice, checkTensorArg, shapeStr } from './validate-tensors.js';

const VARLEN_OPTION_KEYS: ReadonlySet<string> = new Set([
  ...[...SDPA_OPTION_KEYS].filter((k) => k !== 'attnMask' && k !== 'descale'),
  'cuSeqlensQ',
  'cuSeqlensK',
  'maxSeqlenQ',
  'maxSeqlenK',
  'blockTable',
]);

function varlenError(message: string): AttnInputError {
  return new AttnInputError('ATTN_VARLEN', message);
}

/** int32 [B + 1], contiguous: what can be checked without reading the values. */
function checkOffsetsLayout(t: Tensor, name: string): void {
  if (t.dtype !== 'int32' || t.rank !== 1 || t.numel < 1) {
    throw varlenError(`${name} must be an int32 tensor of shape [batch + 1]; got ${t.dtype} ${shapeStr(t)}.`);
  }
  if (!t.isContiguous())
    throw varlenError(`${name} must be contiguous (kernels read it as a plain array); call .contiguous().`);
}

/**
 * Offsets: from 0, non-decreasing, ending at total (null: any end, for paged keys, whose offsets only
 * give lengths). Returns a host copy (a synchronizing read on a device).
 */
function checkOffsets(t: Tensor, name: string, total: number | null): Int32Array {
  const offsets = Int32Array.from(t.toFloat64Array());
  if (offsets[0] !== 0) throw varlenError(`${name}[0] must be 0, got ${offsets[0]}.`);
  for (let b = 1; b < offsets.length; b++) {
    if (offsets[b]! < offsets[b - 1]!) {
      throw varlenError(
        `${name} must be non-decreasing; ${name}[${b}] = ${offsets[b]} < ${name}[${b - 1}] = ${offsets[b - 1]}.`,
      );
    }
  }
  const last = offsets[offsets.length - 1]!;
  if (total !== null && last !== total) {
    throw varlenError(
      `${name} ends at ${last} but the packed tensor holds ${total} tokens (dim 0); the last offset must equal it.`,
    );
  }
  return offsets;
}

function maxLength(offsets: Int32Array): number {
  let max = 0;
  for (let b = 1; b < offsets.length; b++) max = Math.max(max, offsets[b]! - offsets[b - 1]!);
  return max;
}

/** `actual` null: the offsets were not read (left on the device), so only the range is checked. */
function checkMaxSeqlen(given: unknown, name: string, actual: number | null): number {
  if (!Number.isInteger(given) || (given as number) < (actual ?? 0) || (given as number) > 2 ** 31 - 1) {
    const bound = actual === null ? 'in [0, 2^31 - 1]' : `>= the longest sequence (${actual})`;
    throw varlenError(`${name} must be an integer ${bound}; got ${describeValue(given)}.`);
  }
  return given as number;
}

/** Heads and head dims of q [T, Hq, D] and of k/v: [T, H, D] packed or [N, blockSize, H, D] paged. */
function checkPackedShapes(q: Tensor, k: Tensor, v: Tensor, enableGqa: boolean, paged: boolean): void {
  const kvRank = paged ? 4 : 3;
  if (q.rank !== 3 || k.rank !== kvRank || v.rank !== kvRank) {
    const kvForm = paged
      ? 'block pools [numBlocks, blockSize, heads, headDim] (blockTable given)'
      : 'packed [totalTokens, heads, headDim]';
    throw new AttnInputError(
      'ATTN_RANK',
      `sdpaVarlen takes query [totalTokens, heads, headDim] and key/value ${kvForm}; got query ${shapeStr(q)}, key ${shapeStr(k)}, value ${shapeStr(v)}.`,
    );
  }
  const [, hq, dq] = q.shape as [number, number, number];
  const hk = k.shape[kvRank - 2]!;
  const dk = k.shape[kvRank - 1]!;
  const hv = v.shape[kvRank - 2]!;
  if (hk !== hv)
    throw new AttnInputError('ATTN_HEADS', `key and value must have the same number of heads; got ${hk} and ${hv}.`);
  if (hq !== hk && !enableGqa) {
    throw new AttnInputError(
      'ATTN_GQA',
      `query has ${hq} heads but key/value have ${hk}: pass enableGqa: true for grouped-query attention.`,
    );
  }
  if (hq !== hk && (hk === 0 || hq % hk !== 0)) {
    throw new AttnInputError(
      'ATTN_HEADS',
      `The number of heads in key/value (${hk}) must divide the number of heads in query (${hq}).`,
    );
  }
  if (dq !== dk)
    throw new AttnInputError('ATTN_HEAD_DIM', `query and key must have the same head dim; got ${dq} and ${dk}.`);
  if (dq === 0) throw new AttnInputError('ATTN_HEAD_DIM', 'The head dim must be at least 1; got 0.');
  if (!paged && k.shape[0] !== v.shape[0]) {
    throw new AttnInputError(
      'ATTN_SEQ_LEN',
      `key and value must hold the same number of tokens; got ${k.shape[0]} and ${v.shape[0]}.`,
    );
  }
}

/** The full varlen validation of a call whose signature is not cached. */
function validateVarlen(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  opts: Partial<VarlenOptions>,
  policy: IndexValuePolicy,
): NormalizedCall {
  const { inputs, dtype, device } = checkQkv(q, k, v);
  refuseFloat8(inputs, 'sdpaVarlen');
  const common = checkCommonOptions(opts);
  const pagedGiven = opts.blockTable !== undefined && opts.blockTable !== null;
  if (pagedGiven && common.requiresGrad) {
    throw blockTableError(
      'Paged K/V (blockTable) is for inference: requiresGrad must be false. For training, pass packed key and value.',
    );
  }
  checkPackedShapes(q, k, v, common.enableGqa, pagedGiven);
  const pool = pagedGiven ? pagedPoolShape(k, v) : null;
  if (!opts.cuSeqlensQ || !opts.cuSeqlensK)
    throw varlenError('sdpaVarlen needs cuSeqlensQ and cuSeqlensK (int32 [batch + 1]).');
  const cuQ = checkTensorArg(opts.cuSeqlensQ, 'cuSeqlensQ');
  const cuK = checkTensorArg(opts.cuSeqlensK, 'cuSeqlensK');
  checkSameDevice(cuQ, 'cuSeqlensQ', device);
  checkSameDevice(cuK, 'cuSeqlensK', device);
  const [totalQ, headsQ, headDim] = q.shape as [number, number, number];
  const headsKV = k.shape[k.rank - 2]!;
  const headDimV = v.shape[v.rank - 1]!;
  checkOffsetsLayout(cuQ, 'cuSeqlensQ');
  checkOffsetsLayout(cuK, 'cuSeqlensK');
  if (cuQ.numel !== cuK.numel) {
    throw varlenError(
      `cuSeqlensQ and cuSeqlensK must have the same length (batch + 1); got ${cuQ.numel} and ${cuK.numel}.`,
    );
  }
  // Values left on the device (graph capture: reading them would break the capture, and each replay
  // may bring new ones; or the indexValuesOnDevice option: no synchronizing read per call) are checked
  // for layout only, and the kernels clamp what they read (params.indexValuesOnDevice).
  const onDevice = policy.onDevice;
  const seqlensQ = onDevice ? null : checkOffsets(cuQ, 'cuSeqlensQ', totalQ);
  const seqlensK = onDevice ? null : checkOffsets(cuK, 'cuSeqlensK', pool ? null : k.shape[0]!);
  const batch = cuQ.numel - 1;
  const maxSeqlenQ = checkMaxSeqlen(opts.maxSeqlenQ, 'maxSeqlenQ', seqlensQ && maxLength(seqlensQ));
  const maxSeqlenK = checkMaxSeqlen(opts.maxSeqlenK, 'maxSeqlenK', seqlensK && maxLength(seqlensK));
  checkCounterRange(batch, headsQ);
  if (common.alibiSlopes) checkAlibi(common.alibiSlopes, batch, headsQ, device);
  const keysOf = (b: number): number => seqlensK![b + 1]! - seqlensK![b]!;
  const sequsedK = checkSequsedK(opts.sequsedK, batch, keysOf, device, onDevice);
  const paged = pool ? checkBlockTable(opts.blockTable, batch, onDevice ? null : keysOf, pool, device) : null;
  const out = givenOut(opts.out, [totalQ, headsQ, headDimV], dtype, device, common.requiresGrad);

  const varlen: VarlenParams = { cuSeqlensQ: cuQ, cuSeqlensK: cuK, maxSeqlenQ, maxSeqlenK, seqlensQ, seqlensK };
  const params: SdpaParams = {
    query: q,
    key: k,
    value: v,
    device,
    dtype,
    descale: null,
    batch,
    headsQ,
    headsKV,
    seqQ: maxSeqlenQ,
    seqK: maxSeqlenK,
    headDim,
    headDimV,
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
    paged,
    kvCache: null,
    requiresGrad: common.requiresGrad,
    deterministic: common.deterministic,
    kernel: common.kernel,
    capturing: policy.capturing,
    indexValuesOnDevice: onDevice,
    out,
  };
  return { params: Object.freeze(params), backends: common.backends, rng: common.rng, cached: null };
}

/** The full varlen validation (or its cached result for this signature). */
export function normalizeVarlenCall(
  query: unknown,
  key: unknown,
  value: unknown,
  options: VarlenOptions,
): NormalizedCall {
  if (options === undefined || options === null) {
    throw varlenError('sdpaVarlen needs options with cuSeqlensQ, cuSeqlensK, maxSeqlenQ and maxSeqlenK.');
  }
  const opts = checkOptionsObject<VarlenOptions>(options, VARLEN_OPTION_KEYS, 'sdpaVarlen');
  const q = checkTensorArg(query, 'query');
  const k = checkTensorArg(key, 'key');
  const v = checkTensorArg(value, 'value');
  const policy = indexValuePolicy(q.device, opts.indexValuesOnDevice);
  // Only calls whose index values stay on the device are cached (call-cache.ts).
  return cachedOrValidated(VARLEN_CALL, q, k, v, opts, policy, policy.onDevice, () =>
    validateVarlen(q, k, v, opts, policy),
  );
}
