// The AOTriton shim addon (attn_aotriton.node: a local build; no prebuilt is published), loaded on first use. Its availability
// includes the version guard: the shim reports the AOTriton version and the params-struct versions it
// was compiled against, and they must be a pair this binding knows.
import type { Availability } from '@attn/core';
import { findPackageRoot, lazyNativeAddon } from '@attn/native';
import { rocmAvailability } from '@attn/rocm';
import type { AotBwdArgs } from './marshal/backward.js';
import type { AotFwdArgs } from './marshal/forward.js';
import type { LseConvertArgs } from './marshal/lse.js';
import { checkParamsVersions, type AotritonVersion, type ParamsVersions } from './version.js';

export interface AotritonInfo extends AotritonVersion {
  readonly gitSha: string;
  readonly fwdParamsVersion: number;
  readonly bwdParamsVersion: number;
  readonly archs: string;
}

export interface AotritonAddon {
  info(): AotritonInfo;
  /** check_gpu(stream): hipSuccess (0) when every kernel family has a binary for the stream's GPU. */
  checkGpu(stream: bigint): number;
  forward(args: AotFwdArgs, stream: bigint, deterministic: boolean): void;
  backward(args: AotBwdArgs, stream: bigint, deterministic: boolean): void;
  convertLse(args: LseConvertArgs, stream: bigint): void;
}

const REQUIRED = ['info', 'checkGpu', 'forward', 'backward', 'convertLse'] as const;

export const PACKAGE_ROOT = findPackageRoot(import.meta.url, '@attn/rocm-aotriton');

export const loadAotriton = lazyNativeAddon<AotritonAddon>({
  packageRoot: PACKAGE_ROOT,
  validate: (m) => {
    const missing = REQUIRED.filter((k) => typeof (m as Record<string, unknown>)[k] !== 'function');
    if (missing.length > 0) return `it lacks ${missing.join(', ')}`;
    const info = (m as AotritonAddon).info();
    const compiled: ParamsVersions = { fwd: info.fwdParamsVersion, bwd: info.bwdParamsVersion };
    return checkParamsVersions(info, compiled);
  },
});

/** The addon loads (version guard included) and ROCm sees a GPU. */
export function aotritonAvailability(): Availability {
  const load = loadAotriton();
  if (!load.ok) return { ok: false, reason: load.reason };
  return rocmAvailability();
}

export function aotritonVersion(): AotritonVersion | null {
  const load = loadAotriton();
  return load.ok ? load.addon.info() : null;
}
