// The rules of 'ck-flash' and 'ck-efficient' (PyTorch's CK path, sdp-selection.md §6, rocm-backends.md
// §2.7/§2.9): gfx90a/gfx942/gfx950, fp16/bf16, head dims 32..256 in multiples of 8, GQA on flash only,
// an additive bias on efficient only, ALiBi and windows on both.
import {
  batchAndHeads,
  dtypeIn,
  headDimMultipleOf,
  headDimVMultipleOf,
  lastDimContiguous,
  noAttnMask,
  noSoftcap,
  nonzeroSeqLens,
  rule,
  tensorsOn,
  type Rule,
} from '@attn/core';
import { rocmFaLibraryRule, type FaLibraryDeps } from '@attn/rocm';

export const CK_ARCHS: readonly string[] = ['gfx90a', 'gfx942', 'gfx950'];

export const ckArch: Rule = rule('ckArch', (_p, ctx) => {
  if (!ctx.device) return `CK needs the GPU architecture, but the 'rocm' runtime reported no device properties (${ctx.deviceUnknownReason ?? 'unknown reason'}).`;
  const arch = ctx.device.arch.split(':')[0]!;
  return CK_ARCHS.includes(arch) ? null : `CK's fmha kernels are built for ${CK_ARCHS.join(', ')} only; this GPU is ${arch}. Use AOTriton (the default).`;
});

export const ckHeadDim: Rule = rule('ckHeadDim', (p) => {
  const ok = (d: number) => d >= 32 && d <= 256;
  if (ok(p.headDim) && ok(p.headDimV)) return null;
  return `CK's fmha instances cover head dims 32 to 256; got ${p.headDim} (value ${p.headDimV}). Pad to 32 or split, or use AOTriton (up to 512).`;
});

/** CK's dropout uses its own Philox layout, not attn's (seed, offset) mapping: declined, as AOTriton's. */
export const ckNoDropout: Rule = rule('noDropout', (p) =>
  p.dropout
    ? "CK draws dropout with its own Philox counter layout, not attn's (seed, offset) -> [j>>2, i, b*Hq+h, offset] mapping, so the same seed would drop different elements than on every other backend; use dropoutP: 0 here."
    : null,
);

export const ckBiasRule: Rule = rule('ckBias', (p) => {
  const m = p.mask;
  if (!m) return null;
  if (m.kind === 'bool') return `CK takes an additive bias, not a boolean mask: pass attnMask as a ${p.dtype} tensor with 0 and -Infinity.`;
  if (m.tensor.dtype !== p.dtype) return `CK's elementwise bias must have the dtype of q (${p.dtype}); got ${m.tensor.dtype}.`;
  if (p.alibiSlopes) return 'CK takes either an elementwise bias or ALiBi slopes, not both; fold the ALiBi into the bias.';
  const dims = [p.batch, p.headsQ, p.seqQ, p.seqK];
  if (p.requiresGrad && m.expandedStrides.some((s, i) => s === 0 && dims[i]! > 1)) {
    return `CK writes dbias as a full [${dims.join(', ')}] tensor: with requiresGrad, expand the mask to that shape and make it contiguous.`;
  }
  return null;
});

export const ckAlibiSlopes: Rule = rule('ckAlibi', (p) => {
  const s = p.alibiSlopes;
  if (!s) return null;
  if (s.dtype !== 'float32') return `CK reads ALiBi slopes as float32; got ${s.dtype}.`;
  if (s.strides[s.rank - 1] !== 1) return 'CK reads ALiBi slopes contiguous over heads; call .contiguous() on them.';
  return null;
});

/** PyTorch's CK backward computes dk/dv per query head and sums groups; this binding has no such reduction. */
export const ckGqaBackward: Rule = rule('ckGqaBackward', (p) =>
  p.requiresGrad && p.headsQ !== p.headsKV
    ? `CK's backward writes dk/dv per query head (${p.headsQ}) and needs a reduction to ${p.headsKV} heads that this binding does not have; repeat the key/value heads for training, or use AOTriton.`
    : null,
);

function common(fa?: () => FaLibraryDeps): Rule[] {
  return [tensorsOn('rocm'), rocmFaLibraryRule('ck', fa), ckArch];
}

export function flashRules(fa?: () => FaLibraryDeps): Rule[] {
  return [
    ...common(fa),
    noAttnMask,
    ckHeadDim,
    headDimMultipleOf(8),
    headDimVMultipleOf(8),
    nonzeroSeqLens,
    lastDimContiguous(),
    batchAndHeads({ gqa: true, sameKvHeads: true, mqa: true }),
    ckGqaBackward,
    dtypeIn(['float16', 'bfloat16']),
    ckAlibiSlopes,
    noSoftcap,
    ckNoDropout,
  ];
}

export function efficientRules(fa?: () => FaLibraryDeps): Rule[] {
  return [
    ...common(fa),
    ckHeadDim,
    headDimMultipleOf(8),
    headDimVMultipleOf(8),
    nonzeroSeqLens,
    lastDimContiguous({ mask: true }),
    batchAndHeads({ gqa: false, sameKvHeads: true, mqa: false }),
    dtypeIn(['float16', 'bfloat16']),
    ckBiasRule,
    ckAlibiSlopes,
    noSoftcap,
    ckNoDropout,
  ];
}
