// Features CK's tile fmha_fwd / fmha_bwd (example/ck_tile/01_fmha, the API this binding and PyTorch
// call) do not have, declined with CK's own reason. Checked against fmha_fwd.hpp / fmha_bwd.hpp at
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
 * fmha_fwd_args.seqlen_k_ptr is "only used if both seqstart_q_ptr & seqstart_k_ptr are not nullptr"
 * (group mode); batch mode has no per-batch key length. In group mode the forward would take it, but
 * fmha_bwd leaves the dK/dV rows past each used length unwritten, and this binding does not pass it.
 */
export const ckNoSequsedK: Rule = rule('noSequsedK', (p) => {
  if (!p.sequsedK) return null;
  return p.varlen
    ? "CK reads per-batch used key lengths (seqlen_k_ptr) only in group mode, and this binding does not pass them (its backward would leave dK/dV past each used length unwritten); slice the keys to the used ones and pass those lengths as cuSeqlensK, or use a backend that takes sequsedK."
    : "CK's fmha_fwd reads per-batch key lengths (seqlen_k_ptr) only in group (varlen) mode, never for dense [B, H, S, D] inputs; slice key and value to the used keys, or use a backend that takes sequsedK.";
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
