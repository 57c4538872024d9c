// Features CK's tile fmha_fwd / fmha_bwd (example/ck_tile/01_fmha, the API this binding and PyTorch
// call) do not have, declined with CK's own reason; and sequsedK, which CK takes in group mode only. Checked against fmha_fwd.hpp / fmha_bwd.hpp at
// 8e22e1ae (2024-10) and at the newest indexed revisions (fmha_fwd 01ab82ef, fmha_bwd 0282f870;
// README "Checked against CK"). The attn output is not among them: fmha_fwd_args takes o_ptr with
// its strides, so the backends take the call's out.
import { rule, type Rule } from '@attn/core';

/**
 * fmha_bwd_args has no soft cap at any checked revision; fmha_fwd_args gained logits_soft_cap after
 * 8e22e1ae. The binding marshals what both layouts share, so softcap is declined.
 */
export const ckNoSoftcap: Rule = rule('noSoftcap', (p) =>
  p.softcap === 0
    ? null
    : "CK's fmha_bwd has no logits soft cap (fmha_bwd_args has none at any revision checked, up to 0282f870), and fmha_fwd_args has one only after 8e22e1ae (logits_soft_cap), which this binding does not set; set softcap: 0, or use a backend with softcapping.",
);

/**
 * sequsedK is CK's seqlen_k_ptr, which fmha_fwd_args and fmha_bwd_args read "only ... if both
 * seqstart_q_ptr & seqstart_k_ptr are not nullptr" (group mode, attn's varlen): the kernels then
 * take seqlen_k = seqlen_k_ptr[b] without clamping it to the sequence's keys, so the lengths must
 * have been validated on the host. Batch mode has no per-batch key length.
 */
export const ckSequsedK: Rule = rule('ckSequsedK', (p) => {
  if (!p.sequsedK) return null;
  if (!p.varlen) {
    return "CK's fmha_fwd reads per-batch used key lengths (seqlen_k_ptr) only in group (varlen) mode, never for dense [B, H, S, D] inputs; pass the call as sdpaVarlen (cuSeqlensQ/K) with sequsedK, or slice key and value to the used keys.";
  }
  if (p.indexValuesOnDevice) {
    return "CK takes seqlen_k_ptr[b] as sequence b's key count without clamping it to the keys the sequence has, so sequsedK must be validated on the host; leave indexValuesOnDevice unset, or use a backend that clamps it on the device (flash-cuda).";
  }
  return null;
});

/**
 * fmha_fwd_args takes K and V as strided [B, Hk, Sk, D] (or packed group-mode rows); CK's block
 * table (block_table_ptr, page_block_size) belongs to its split-KV and append-KV kernels, which
 * PyTorch's receipt does not generate and this binding does not build.
 */
export const ckNoPagedKv: Rule = rule('noPagedKv', (p) =>
  p.paged
    ? "CK's fmha_fwd takes no block table (paged K/V is only in CK's fmha_fwd_splitkv / appendkv kernels, which PyTorch's build and this binding do not generate); gather the blocks into packed key and value, or use a backend that takes blockTable."
    : null,
);

/** Cache append, rotary and cache_batch_idx are CK's fmha_fwd_appendkv / splitkv, not fmha_fwd. */
export const ckNoKvCache: Rule = rule('noKvCache', (p) =>
  p.kvCache
    ? "CK's fmha_fwd has no KV-cache call (cache append, rotary and cache_batch_idx are CK's fmha_fwd_appendkv and fmha_fwd_splitkv kernels, which PyTorch's build and this binding do not generate); append and gather the cache yourself and call sdpaVarlen, or use a backend that takes sdpaKvCache."
    : null,
);
