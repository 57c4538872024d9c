// The CK shim addon (build/Release/attn_ck.node), loaded on first use.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Availability } from '@attn/core';
import { lazyAddon, rocmAvailability } from '@attn/rocm';
import type { CkFwdArgs, CkFwdTraits } from './marshal/args.js';
import type { CkBwdTraits } from './marshal/backward.js';

export interface CkAddon {
  info(): { readonly archs: string; readonly ckCommit: string };
  /** Returns fmha_fwd's result: < 0 when no compiled instance matches the traits. */
  forward(traits: CkFwdTraits, args: CkFwdArgs, stream: bigint): number;
  backward(traits: CkBwdTraits, args: Record<string, bigint | number>, stream: bigint): number;
}

const REQUIRED = ['info', 'forward', 'backward'] as const;

export const PACKAGE_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

export const loadCk = lazyAddon<CkAddon>({
  packageName: '@attn/rocm-ck',
  packageRoot: PACKAGE_ROOT,
  addonName: 'attn_ck',
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
