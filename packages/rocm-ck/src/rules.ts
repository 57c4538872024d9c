// The rules of 'ck-flash' and 'ck-efficient' (PyTorch's CK path, sdp-selection.md §6, rocm-backends.md
// §2.7/§2.9): gfx90a/gfx942/gfx950, fp16/bf16, head dims 32..256 in multiples of 8, GQA on flash only
// (forward and backward: marshal/head-groups.ts), an additive bias on efficient only, ALiBi and windows
// on both.
import {
  batchAndHeads,
  dtypeIn,
  headDimMultipleOf,
  headDimVMultipleOf,
  lastDimContiguous,
  noAttnMask,
  nonzeroSeqLens,
  rule,
  tensorsOn,
  type Rule,
} from '@attn/core';
import { rocmFaLibraryRule, type FaLibraryDeps } from '@attn/rocm';
import { ckNoKvCache, ckNoPagedKv, ckNoSoftcap, ckSequsedK } from './declines.js';
import { loadCk } from './native.js';

export const CK_ARCHS: readonly string[] = ['gfx90a', 'gfx942', 'gfx950'];

export const ckArch: Rule = rule('ckArch', (_p, ctx) => {
  if (!ctx.device)
    return `CK needs the GPU architecture, but the 'rocm' runtime reported no device properties (${ctx.deviceUnknownReason ?? 'unknown reason'}).`;
  const arch = ctx.device.arch.split(':')[0]!;
  return CK_ARCHS.includes(arch)
    ? null
    : `CK's fmha kernels are built for ${CK_ARCHS.join(', ')} only; this GPU is ${arch}. Use AOTriton (the default).`;
});

export const ckHeadDim: Rule = rule('ckHeadDim', (p) => {
  const ok = (d: number) => d >= 32 && d <= 256;
  if (ok(p.headDim) && ok(p.headDimV)) return null;
  return `CK's fmha instances cover head dims 32 to 256; got ${p.headDim} (value ${p.headDimV}). Pad to 32 or split, or use AOTriton (up to 512).`;
});

/**
 * CK supports dropout, but draws the mask its own way (ck_tile BlockDropout, fmha_fwd_kernel.hpp):
 * Philox get_random_16x8 per warp tile, counter from the tile's (row, col) block coordinates, 8-bit
 * random values kept when randval <= floor((1 - p) * 255). So the keep probability is quantized to
 * 1/255 and the counter layout differs from attn's [j>>2, i, b*Hq+h, offset]: declined, as AOTriton's.
 */
export const ckNoDropout: Rule = rule('noDropout', (p) =>
  p.dropout
    ? `CK draws dropout (ck_tile BlockDropout, checked at 8e22e1ae) with its own Philox counter layout (8-bit random values per warp tile, kept when <= floor((1 - p) * 255), so p is also rounded to 1/255), not attn's (seed, offset) -> [j>>2, i, b*Hq+h, offset] mapping, so the same seed would drop different elements than on every other backend; use dropoutP: 0 here.`
    : null,
);

export const ckBiasRule: Rule = rule('ckBias', (p) => {
  const m = p.mask;
  if (!m) return null;
  if (m.kind === 'bool')
    return `CK takes an additive bias, not a boolean mask: pass attnMask as a ${p.dtype} tensor with 0 and -Infinity.`;
  if (m.tensor.dtype !== p.dtype)
    return `CK's elementwise bias must have the dtype of q (${p.dtype}); got ${m.tensor.dtype}.`;
  if (p.alibiSlopes)
    return 'CK takes either an elementwise bias or ALiBi slopes, not both; fold the ALiBi into the bias.';
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

/**
 * Whether the loaded addon's CK has the dq_acc backward layout (fmha_bwd_args with dq_acc_ptr and
 * its strides), which the binding marshals; null when the addon is not loaded (then the backend is
 * unavailable anyway).
 */
export type BwdLayoutProbe = () => boolean | null;

export const addonBwdLayout: BwdLayoutProbe = () => {
  const load = loadCk();
  return load.ok ? load.addon.info().bwdDqAccLayout : null;
};

/**
 * The newest CK revisions replaced fmha_bwd_args' dq_acc_ptr and its strides with workspace_ptr,
 * sized and filled by fmha_bwd_launcher (host-packed metadata plus the dq accumulator, prepared on
 * the stream through pinned host memory). The binding marshals the dq_acc layout only, so with such
 * a CK the forward runs and the backward is declined.
 */
export function ckBackwardLayout(layout: BwdLayoutProbe = addonBwdLayout): Rule {
  return rule('ckBackwardLayout', (p) =>
    p.requiresGrad && layout() === false
      ? "This CK's fmha_bwd takes a workspace (workspace_ptr, sized by fmha_bwd_launcher) instead of the dq_acc buffer this binding passes, so its backward is not wired; build @attn/rocm-ck against a CK with the dq_acc layout (see its README), or use AOTriton for training."
      : null,
  );
}

function common(fa?: () => FaLibraryDeps): Rule[] {
  return [tensorsOn('rocm'), rocmFaLibraryRule('ck', fa), ckArch];
}

export function flashRules(fa?: () => FaLibraryDeps, bwdLayout?: BwdLayoutProbe): Rule[] {
  return [
    ...common(fa),
    ckBackwardLayout(bwdLayout),
    noAttnMask,
    ckHeadDim,
    headDimMultipleOf(8),
    headDimVMultipleOf(8),
    nonzeroSeqLens,
    lastDimContiguous(),
    batchAndHeads({ gqa: true, sameKvHeads: true, mqa: true }),
    dtypeIn(['float16', 'bfloat16']),
    ckAlibiSlopes,
    ckNoSoftcap,
    ckSequsedK,
    ckNoPagedKv,
    ckNoKvCache,
    ckNoDropout,
  ];
}

export function efficientRules(fa?: () => FaLibraryDeps, bwdLayout?: BwdLayoutProbe): Rule[] {
  return [
    ...common(fa),
    ckBackwardLayout(bwdLayout),
    ckHeadDim,
    headDimMultipleOf(8),
    headDimVMultipleOf(8),
    nonzeroSeqLens,
    lastDimContiguous({ mask: true }),
    batchAndHeads({ gqa: false, sameKvHeads: true, mqa: false }),
    dtypeIn(['float16', 'bfloat16']),
    ckBiasRule,
    ckAlibiSlopes,
    ckNoSoftcap,
    ckSequsedK,
    ckNoPagedKv,
    ckNoKvCache,
    ckNoDropout,
  ];
}
