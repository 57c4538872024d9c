// Rules about shapes and layouts (PyTorch's check_tensor_shapes, check_batch_size_and_num_heads_dense,
// check_head_dim_size_*, check_nonzero_sequence_lengths_dense, check_last_dim_stride_equals_1_dense,
// check_attn_mask_shape, check_cudnn_tensor_shapes).
import type { Rule } from './backend.js';
import { headCounts, lastStride, type PerDType, perDType, perDTypeLabel, rule } from './rule.js';

/** Dense [B, H, S, D] inputs (check_tensor_shapes). */
export const denseRank4: Rule = rule('denseRank4', (p) => {
  if (p.varlen)
    return 'Requires dense [batch, heads, seq, headDim] inputs; got packed varlen inputs. Use sdpa() with padded 4-D tensors.';
  if (p.query.rank === 4 && p.key.rank === 4 && p.value.rank === 4) return null;
  return `Requires query, key and value to be 4 dimensional, but got query dim: ${p.query.rank}, key dim: ${p.key.rank}, value dim: ${p.value.rank}.`;
});

/** Mask, if any, 2-D [Sq|1, Sk|1] or 4-D [B|1, Hq|1, Sq|1, Sk|1] (check_attn_mask_shape). */
export const attnMaskShape2dOr4d: Rule = rule('attnMaskShape2dOr4d', (p) => {
  const m = p.mask?.tensor;
  if (!m) return null;
  const fits = (size: number, want: number): boolean => size === want || size === 1;
  const s = m.shape;
  const ok =
    (m.rank === 2 && fits(s[0]!, p.seqQ) && fits(s[1]!, p.seqK)) ||
    (m.rank === 4 && fits(s[0]!, p.batch) && fits(s[1]!, p.headsQ) && fits(s[2]!, p.seqQ) && fits(s[3]!, p.seqK));
  if (ok) return null;
  return (
    `Got an attnMask of shape [${s.join(', ')}]. Please use the following attn mask shapes: 2d - ({Q_seq_len, 1} x {KV_seq_len, 1}); ` +
    '4d - ({Batch, 1} x {Num_heads, 1} x {Q_seq_len, 1} x {KV_seq_len, 1}). Reshape it, e.g. unsqueeze 3-D masks to 4-D.'
  );
});

/** Sq > 0 and Sk > 0 (check_nonzero_sequence_lengths_dense); varlen: the max lengths. */
export const nonzeroSeqLens: Rule = rule('nonzeroSeqLens', (p) => {
  if (p.seqQ > 0 && p.seqK > 0) return null;
  return `Does not support zero seq_len_q or seq_len_kv (got ${p.seqQ} and ${p.seqK}); cpu-math handles empty sequences.`;
});

export interface LastDimContiguousOptions {
  /** Also require the mask's last dim (expanded to Sk) to have stride 1, as GPU kernels do. */
  mask?: boolean;
  /** Accept any last stride when the head dim is 1 (PyTorch's ignore_singleton_dim, flash). */
  ignoreSingletonDim?: boolean;
}

/** Last dim of q, k, v (and optionally the mask) has stride 1 (check_last_dim_stride_equals_1_dense). */
export function lastDimContiguous(opts: LastDimContiguousOptions = {}): Rule {
  const name = `lastDimContiguous(${opts.mask ? 'mask' : 'qkv'}${opts.ignoreSingletonDim ? ', ignoreSingletonDim' : ''})`;
  return rule(name, (p) => {
    const exempt = (size: number): boolean => opts.ignoreSingletonDim === true && size === 1;
    const q = lastStride(p.query);
    const k = lastStride(p.key);
    const v = lastStride(p.value);
    const qkvOk = (q === 1 || exempt(p.headDim)) && (k === 1 || exempt(p.headDim)) && (v === 1 || exempt(p.headDimV));
    const maskStride = p.mask ? p.mask.expandedStrides[3] : 1;
    const maskOk = !opts.mask || maskStride === 1 || p.seqK <= 1;
    if (qkvOk && maskOk) return null;
    let msg = `Requires the last dimension of the inputs to have stride 1. Got query.stride(-1): ${q}, key.stride(-1): ${k}, value.stride(-1): ${v}`;
    if (opts.mask && p.mask)
      msg += `, attnMask stride along keys: ${maskStride} (GPU kernels need it 1; materialize a broadcast mask with .expand(...).contiguous())`;
    return `${msg}. Call .contiguous() on the inputs.`;
  });
}

export interface BatchAndHeadsOptions {
  /** The backend implements grouped-query attention (Hq a multiple of Hk) when enableGqa is set. */
  gqa: boolean;
  /** Key and value must have the same head count (default true). */
  sameKvHeads?: boolean;
  /** One key/value head for all query heads is supported (default true). */
  mqa?: boolean;
}

/** check_batch_size_and_num_heads_dense<gqa, sameKvHeads, mqa> and check_grouped_query_attention. */
export function batchAndHeads(opts: BatchAndHeadsOptions): Rule {
  const sameKv = opts.sameKvHeads ?? true;
  const mqa = opts.mqa ?? true;
  const name = `batchAndHeads(gqa=${opts.gqa}, sameKvHeads=${sameKv}, mqa=${mqa})`;
  return rule(name, (p) => {
    // Varlen packs the batch; kv caches hold their own rows (cacheBatchIdx) or blocks.
    if (!p.varlen && !p.kvCache) {
      const [bq, bk, bv] = [p.query.shape[0], p.key.shape[0], p.value.shape[0]];
      if (bq !== bk || bq !== bv) {
        return `Requires query, key and value to have the same batch_size. Query.size(0): ${bq}, Key.size(0): ${bk}, Value.size(0): ${bv}. Expand them to one batch size.`;
      }
    }
    const { hq, hk, hv } = headCounts(p);
    if (p.enableGqa && opts.gqa) {
      if (sameKv && hk !== hv) {
        return `Requires key and value to have the same num_heads but got key ${hk}, value ${hv}.`;
      }
      if (hk === 0 || hq % hk !== 0 || (!sameKv && (hv === 0 || hq % hv !== 0))) {
        return `The number of heads in key/value (${hk}, ${hv}) must divide the number of heads in query (${hq}).`;
      }
      if (!mqa && hk === 1 && hq > 1) {
        return 'Does not support multi-query attention (one key/value head); repeat the key/value head or choose another backend.';
      }
      return null;
    }
    if (hq === hk && hq === hv) return null;
    const why = p.enableGqa
      ? 'does not implement grouped-query attention'
      : 'needs enableGqa: true for grouped-query attention';
    return (
      `Requires query, key and value to have the same num_heads (this backend ${why}). Query.size(1): ${hq}, Key.size(1): ${hk}, ` +
      `Value.size(1): ${hv}. Repeat the key/value heads to ${hq} or choose a backend with GQA.`
    );
  });
}

/** D <= n and Dv <= n (check_head_dim_size_flash's bound). */
export function headDimAtMost(n: number): Rule {
  return rule(`headDimAtMost(${n})`, (p) => {
    if (p.headDim <= n && p.headDimV <= n) return null;
    return `Requires q, k, v to have a last dimension less than or equal to ${n}. Got query.size(-1): ${p.headDim}, value.size(-1): ${p.headDimV}. Split the head dim or choose another backend.`;
  });
}

/** Dv > 0 (core allows an empty value head dim; kernels without an empty-head path decline it). */
export const nonzeroHeadDimV: Rule = rule('nonzeroHeadDimV', (p) => {
  if (p.headDimV > 0) return null;
  return `Does not support an empty value head dim (value.size(-1) is 0); cpu-math handles it.`;
});

/** D == Dv (flash and CPU flash need one head dim for q, k and v). */
export const headDimsEqual: Rule = rule('headDimsEqual', (p) => {
  if (p.headDim === p.headDimV) return null;
  return `Requires q, k, v to have the same last dimension. Got query.size(-1): ${p.headDim}, key.size(-1): ${p.key.shape[p.key.rank - 1]}, value.size(-1): ${p.headDimV}. Pad value's head dim to ${p.headDim} or choose a backend that allows Dv != D.`;
});

/** D divisible by a (check_head_dim_size_mem_efficient's minimum_gemm_alignment). */
export function headDimMultipleOf(a: PerDType): Rule {
  return rule(`headDimMultipleOf(${perDTypeLabel(a)})`, (p) => {
    const n = perDType(a, p.dtype);
    if (p.headDim % n === 0) return null;
    return `Requires the last dimension of query and key to be divisible by ${n} for ${p.dtype}. Got query.size(-1): ${p.headDim}. Zero-pad the head dim to a multiple of ${n} (keep the scale of the original).`;
  });
}

/** Dv divisible by a. */
export function headDimVMultipleOf(a: PerDType): Rule {
  return rule(`headDimVMultipleOf(${perDTypeLabel(a)})`, (p) => {
    const n = perDType(a, p.dtype);
    if (p.headDimV % n === 0) return null;
    return `Requires the last dimension of value to be divisible by ${n} for ${p.dtype}. Got value.size(-1): ${p.headDimV}. Zero-pad it to a multiple of ${n}.`;
  });
}

/** B <= n and Hq <= n (check_cudnn_tensor_shapes: grid dims). */
export function maxBatchAndHeads(n: number): Rule {
  return rule(`maxBatchAndHeads(${n})`, (p) => {
    if (p.batch <= n && p.headsQ <= n) return null;
    return `Does not support batch size or num_heads greater than ${n}. Got batch ${p.batch}, heads ${p.headsQ}. Split the call into chunks.`;
  });
}
