// The CK shim addon (attn_ck.node: a local build; no prebuilt is published), loaded on first use.
import type { Availability } from '@attn/core';
import { findPackageRoot, lazyNativeAddon } from '@attn/native';
import { rocmAvailability } from '@attn/rocm';
import type { CkFwdArgs, CkFwdTraits } from './marshal/args.js';
import type { CkBwdTraits } from './marshal/backward.js';
import type { CkHeadGroupSum } from './marshal/head-groups.js';

export interface CkAddon {
  /** bwdDqAccLayout: this CK's fmha_bwd_args has dq_acc_ptr and its strides (see rules.ts ckBackwardLayout). */
  info(): { readonly archs: string; readonly ckCommit: string; readonly bwdDqAccLayout: boolean };
  /** Returns fmha_fwd's result: < 0 when no compiled instance matches the traits. */
  forward(traits: CkFwdTraits, args: CkFwdArgs, stream: bigint): number;
  backward(traits: CkBwdTraits, args: Record<string, bigint | number>, stream: bigint): number;
  /** GQA/MQA: adds each group of query heads' dK/dV into the key/value heads (head_group_sum.hip). */
  sumHeadGroups(args: CkHeadGroupSum, stream: bigint): void;
}

const REQUIRED = ['info', 'forward', 'backward', 'sumHeadGroups'] as const;

export const PACKAGE_ROOT = findPackageRoot(import.meta.url, '@attn/rocm-ck');

export const loadCk = lazyNativeAddon<CkAddon>({
  packageRoot: PACKAGE_ROOT,
  validate: (m) => {
    const missing = REQUIRED.filter((k) => typeof (m as Record<string, unknown>)[k] !== 'function');
    return missing.length === 0 ? null : `it lacks ${missing.join(', ')}`;
  },
});

export function ckAvailability(): Availability {
  const load = loadCk();
  if (!load.ok) return { ok: false, reason: load.reason };
  return rocmAvailability();
}
