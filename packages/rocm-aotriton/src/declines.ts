// Features AOTriton's flash API does not have, declined with AOTriton's own reason and version. Each
// was checked against the public headers of 0.10b to 0.13b (include/aotriton/flash.h: the v3
// attn_fwd_params / attn_bwd_params and the attn_fwd / attn_bwd entry points; README "Checked
// against AOTriton's headers"). The attn output is not among them: attn_fwd writes a strided
// TensorView, so the backends take the call's out.
import { rule, type Rule } from '@attn/core';
import { compareVersions, LATEST_KNOWN, versionString, type AotritonVersion } from './version.js';

/** The AOTriton version the addon was built against, or null when it is not loaded. */
export type VersionProbe = () => AotritonVersion | null;

/** The first AOTriton with padded / strided varlen (attn_fwd_params::seq_strides_q/k). */
const PADDED_VARLEN: AotritonVersion = { major: 0, minor: 12, patch: 0 };

const named = (version: VersionProbe): string => `AOTriton ${versionString(version() ?? LATEST_KNOWN)}`;

/** attn_fwd_params and attn_bwd_params have no soft-cap field (Sm_scale only), at every known version. */
export function aotritonNoSoftcap(version: VersionProbe): Rule {
  return rule('noSoftcap', (p) =>
    p.softcap === 0
      ? null
      : `${named(version)} has no logits soft cap: its attn_fwd_params and attn_bwd_params take Sm_scale only (0.10b to 0.13b); set softcap: 0, or use a backend with softcapping.`,
  );
}

/**
 * Before 0.12, AOTriton's varlen is compact only: key lengths come from cu_seqlens_k, with no
 * per-batch used-key count. 0.12 added padded (BHSD) and strided (THD with gaps, seq_strides_q/k)
 * varlen layouts whose cu_seqlens_k are the actual lengths, which could carry sequsedK; this binding
 * marshals the compact layout only, so the rule says which of the two applies.
 */
export function aotritonNoSequsedK(version: VersionProbe): Rule {
  return rule('noSequsedK', (p) => {
    if (!p.sequsedK) return null;
    const v = version() ?? LATEST_KNOWN;
    const fix =
      'slice the keys to the used ones (varlen: pass those lengths as cuSeqlensK), or use a backend that takes sequsedK.';
    if (compareVersions(v, PADDED_VARLEN) < 0) {
      return `${named(version)} takes no per-batch used-key count (FlashAttention's seqused_k): its varlen reads the key lengths from cu_seqlens_k only (compact layout); ${fix}`;
    }
    return `${named(version)} takes used key lengths only as the cu_seqlens_k of its padded or strided varlen layouts (varlen_type PaddedVarlen / StridedVarlen, from 0.12), which this binding does not marshal (it passes the compact layout); ${fix}`;
  });
}

/** attn_fwd reads K and V as [B, Hk, Sk, D] TensorViews (or packed varlen rows); no block table. */
export function aotritonNoPagedKv(version: VersionProbe): Rule {
  return rule('noPagedKv', (p) =>
    p.paged
      ? `${named(version)} has no paged K/V: attn_fwd reads K and V as strided [B, Hk, Sk, D] tensors (or packed varlen rows) and takes no block table; gather the blocks into packed key and value, or use a backend that takes blockTable.`
      : null,
  );
}

/** The flash API is attn_fwd / attn_bwd: no cache append, rotary, cache_batch_idx or left padding. */
export function aotritonNoKvCache(version: VersionProbe): Rule {
  return rule('noKvCache', (p) =>
    p.kvCache
      ? `${named(version)} has no KV-cache call: its flash API is attn_fwd and attn_bwd (no cache append, rotary, cache_batch_idx or left padding); append and gather the cache yourself and call sdpaVarlen, or use a backend that takes sdpaKvCache.`
      : null,
  );
}
