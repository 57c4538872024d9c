// The rules of 'aotriton-flash' and 'aotriton-efficient': PyTorch's ROCm checks (sdp-selection.md
// §4.1, §4.2, §6) for AOTriton, composed from core's rule library plus the AOTriton-specific ones
// below. Version-dependent rules read the AOTriton version the addon reports; without the addon
// (the backend is unavailable then anyway) they assume the newest version this binding knows.
import {
  batchAndHeads,
  dtypeIn,
  headDimsEqual,
  lastDimContiguous,
  noAttnMask,
  nonzeroSeqLens,
  rule,
  tensorsOn,
  type Rule,
  type SdpaParams,
} from '@attn/core';
import { rocmFaLibraryRule, warnOnce, type FaLibraryDeps } from '@attn/rocm';
import { archStatus, baseArch, stableArchs } from './arch.js';
import { ENABLE_EXPERIMENTAL_CALL } from './experimental.js';
import { aotritonNoKvCache, aotritonNoPagedKv, aotritonNoSequsedK, aotritonNoSoftcap } from './declines.js';
import {
  efficientUsesAlignmentRule,
  hasDeterministicOption,
  hasWindowRightBug,
  LATEST_KNOWN,
  maxHeadDim,
  versionString,
  type AotritonVersion,
} from './version.js';
import { encodeWindow } from './window.js';

export interface AotritonRuleDeps {
  /** The AOTriton version the addon was built against, or null when it is not loaded. */
  version(): AotritonVersion | null;
  /** Whether experimental archs may run (enableExperimentalAotritonArchs). */
  experimental(): boolean;
  /** For the ROCm library preference (tests inject their own). */
  faLibrary?: () => FaLibraryDeps;
}

const CK_HINT = "or prefer CK (preferredRocmFaLibrary('ck') from @attn/rocm)";

function versionOf(deps: AotritonRuleDeps): AotritonVersion {
  return deps.version() ?? LATEST_KNOWN;
}

/** check_gpu + isArchExperimentallySupported, from the published lists of the AOTriton version. */
export function aotritonArch(deps: AotritonRuleDeps, what: 'Flash' | 'Mem Efficient'): Rule {
  return rule('aotritonArch', (_p, ctx) => {
    const v = versionOf(deps);
    if (!ctx.device) {
      return `AOTriton needs the GPU architecture, but the 'rocm' runtime reported no device properties (${ctx.deviceUnknownReason ?? 'unknown reason'}).`;
    }
    const arch = baseArch(ctx.device.arch);
    const status = archStatus(v, arch);
    if (status === 'unsupported') {
      return (
        `${what} attention was not compiled for the current AMD GPU architecture: AOTriton ${versionString(v)} has no kernels for ${arch} ` +
        `(it runs on ${stableArchs(v).join(', ')}, more behind ${ENABLE_EXPERIMENTAL_CALL}); use a supported GPU ${CK_HINT}.`
      );
    }
    if (status !== 'experimental') return null;
    if (deps.experimental()) return null;
    const message = `${what} attention on ${arch} is still experimental in AOTriton ${versionString(v)}. Enable it with ${ENABLE_EXPERIMENTAL_CALL}.`;
    warnOnce(`aotriton-experimental-${what}-${arch}`, 'ATTN_ROCM_AOTRITON_EXPERIMENTAL', `attn: ${message}`);
    return message;
  });
}

function headDimCap(deps: AotritonRuleDeps, p: SdpaParams, arch: string | undefined): number {
  return maxHeadDim(versionOf(deps), arch === undefined ? '' : baseArch(arch));
}

/** Flash: D <= aotriton_max_hdim() (512; 256 on gfx11 with 0.11) and D % 8 == 0 (mha_fwd_aot's check). */
export function aotritonFlashHeadDim(deps: AotritonRuleDeps): Rule {
  return rule('aotritonHeadDim', (p, ctx) => {
    const cap = headDimCap(deps, p, ctx.device?.arch);
    if (p.headDim > cap) {
      return `FlashAttention on ROCm supports head dimension at most ${cap} (AOTriton ${versionString(versionOf(deps))}${ctx.device ? ` on ${ctx.device.arch}` : ''}); got ${p.headDim}. Split the heads or use another backend.`;
    }
    if (p.headDim % 8 !== 0)
      return `FlashAttention on ROCm needs a head dimension divisible by 8; got ${p.headDim}. Zero-pad it to ${Math.ceil(p.headDim / 8) * 8} (keep the scale of ${p.headDim}).`;
    return null;
  });
}

/** Mem-efficient: before 0.12, %8 and <= 256; from 0.12, alignment 8 (fp16/bf16) or 4 (fp32) and <= max_hdim. */
export function aotritonEfficientHeadDim(deps: AotritonRuleDeps): Rule {
  return rule('aotritonHeadDim', (p, ctx) => {
    const v = versionOf(deps);
    if (!efficientUsesAlignmentRule(v)) {
      if (p.headDim % 8 === 0 && p.headDim <= 256) return null;
      return `Efficient attention on ROCm with AOTriton ${versionString(v)} requires a head dimension that is a multiple of 8 and at most 256; got ${p.headDim}. Pad it, split it, or upgrade AOTriton to 0.12+.`;
    }
    const align = p.dtype === 'float32' ? 4 : 8;
    const cap = headDimCap(deps, p, ctx.device?.arch);
    if (p.headDim % align !== 0)
      return `Mem efficient attention on ROCm needs a head dimension divisible by ${align} for ${p.dtype}; got ${p.headDim}. Zero-pad it.`;
    if (p.headDim > cap)
      return `Mem efficient attention on ROCm requires last dimension of inputs to be at most ${cap} (AOTriton ${versionString(v)}); got ${p.headDim}.`;
    return null;
  });
}

/** Efficient takes an additive bias of the query's dtype; a boolean mask is not converted (no hidden copies). */
export const aotritonBias: Rule = rule('aotritonBias', (p) => {
  const m = p.mask;
  if (!m) return null;
  if (m.kind === 'bool') {
    return `AOTriton takes an additive bias, not a boolean mask: pass attnMask as a ${p.dtype} tensor with 0 where attending and -Infinity elsewhere.`;
  }
  if (m.tensor.dtype !== p.dtype) {
    return `Efficient attention on ROCm requires the additive attn_mask to have the dtype of q, k, v (${p.dtype}); got ${m.tensor.dtype}. Convert it with .toDType('${p.dtype}').`;
  }
  if (p.requiresGrad) {
    const dims = [p.batch, p.headsQ, p.seqQ, p.seqK];
    const broadcast = m.expandedStrides.some((s, i) => s === 0 && dims[i]! > 1);
    if (broadcast) {
      return `AOTriton writes the bias gradient as a full [${dims.join(', ')}] tensor and cannot reduce it to a broadcast mask of shape [${m.tensor.shape.join(', ')}]: with requiresGrad, expand the mask to [${dims.join(', ')}] and make it contiguous.`;
    }
  }
  return null;
});

/** attn_fwd sets USE_ALIBI = false (v3src/flash/attn_fwd.cc, 0.10b to 0.13b): no ALiBi kernels. */
export function aotritonNoAlibi(deps: AotritonRuleDeps): Rule {
  return rule('noAlibi', (p) =>
    p.alibiSlopes
      ? `AOTriton ${versionString(versionOf(deps))} is built without ALiBi (attn_fwd compiles USE_ALIBI off, 0.10b to 0.13b); drop alibiSlopes ${CK_HINT}, whose kernels take ALiBi.`
      : null,
  );
}

/**
 * AOTriton supports dropout, but draws the mask its own way (tritonsrc/dropout.py, fwd_kernel.py at
 * the checked tags): Triton's tl.randint4x(seed, offset) with one linear counter per group of four
 * keys, offset = philox_offset1 + philox_offset2 + (b*Hq + h) * Max_seqlen_q * ceil(Sk/4) + i *
 * ceil(Sk/4) + j/4, keeping an element when the int32 word exceeds the integer threshold.
 * attn's mapping (core's philox.ts, the same on every backend) is the four-word counter
 * [j>>2, i, b*Hq+h, offset] keyed by (lo32(seed), hi32(seed)). The two can't be reconciled
 * without changing AOTriton's kernels, so the rule declines dropout to keep "same seed, same mask".
 */
export function aotritonNoDropout(deps: AotritonRuleDeps): Rule {
  return rule('noDropout', (p) =>
    p.dropout
      ? `AOTriton ${versionString(versionOf(deps))} draws dropout with its own Philox counter layout (tl.randint4x on one linear counter per four keys: philox_offset + (b*Hq+h)*Max_seqlen_q*ceil(Sk/4) + i*ceil(Sk/4) + j/4), not attn's (seed, offset) -> [j>>2, i, b*Hq+h, offset] mapping, so the same seed would drop different elements here than on every other backend; use dropoutP: 0 here, or another backend for dropout.`
      : null,
  );
}

/** The window must be encodable, and AOTriton 0.10-0.11.1 ignores window_right in the forward. */
export function aotritonWindow(deps: AotritonRuleDeps): Rule {
  return rule('aotritonWindow', (p) => {
    const enc = encodeWindow(p);
    if (!enc.ok) return `${enc.reason}.`;
    const w = enc.window;
    const v = versionOf(deps);
    if (w.causalType !== 0 && w.windowLeft !== w.windowRight && hasWindowRightBug(v)) {
      return (
        `AOTriton ${versionString(v)} ignores window_right in the forward pass (it reuses window_left; fixed in 0.11.2b), so this ` +
        `asymmetric window would be computed wrongly: upgrade AOTriton to 0.11.2b or newer, use a symmetric window, ${CK_HINT}.`
      );
    }
    return null;
  });
}

/** A deterministic backward needs attn_options.deterministic (AOTriton 0.12+). */
export function aotritonDeterministic(deps: AotritonRuleDeps): Rule {
  return rule('aotritonDeterministic', (p) => {
    const v = versionOf(deps);
    if (!p.deterministic || !p.requiresGrad || hasDeterministicOption(v)) return null;
    return `AOTriton ${versionString(v)} has no deterministic backward (attn_options.deterministic came in 0.12); upgrade AOTriton, drop deterministic, ${CK_HINT}.`;
  });
}

function common(deps: AotritonRuleDeps, what: 'Flash' | 'Mem Efficient'): Rule[] {
  return [tensorsOn('rocm'), rocmFaLibraryRule('aotriton', deps.faLibrary), aotritonArch(deps, what)];
}

export function flashRules(deps: AotritonRuleDeps): Rule[] {
  const version = () => deps.version();
  return [
    ...common(deps, 'Flash'),
    noAttnMask,
    headDimsEqual,
    aotritonFlashHeadDim(deps),
    nonzeroSeqLens,
    lastDimContiguous(),
    batchAndHeads({ gqa: true, sameKvHeads: true, mqa: true }),
    dtypeIn(['float16', 'bfloat16']),
    aotritonNoAlibi(deps),
    aotritonNoSoftcap(version),
    aotritonNoSequsedK(version),
    aotritonNoPagedKv(version),
    aotritonNoKvCache(version),
    aotritonWindow(deps),
    aotritonNoDropout(deps),
    aotritonDeterministic(deps),
  ];
}

export function efficientRules(deps: AotritonRuleDeps): Rule[] {
  const version = () => deps.version();
  return [
    ...common(deps, 'Mem Efficient'),
    headDimsEqual,
    aotritonEfficientHeadDim(deps),
    nonzeroSeqLens,
    lastDimContiguous({ mask: true }),
    batchAndHeads({ gqa: false, sameKvHeads: true, mqa: false }),
    dtypeIn(['float16', 'bfloat16', 'float32']),
    aotritonBias,
    aotritonNoAlibi(deps),
    aotritonNoSoftcap(version),
    aotritonNoSequsedK(version),
    aotritonNoPagedKv(version),
    aotritonNoKvCache(version),
    aotritonWindow(deps),
    aotritonNoDropout(deps),
    aotritonDeterministic(deps),
  ];
}
