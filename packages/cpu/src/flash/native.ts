// Loads cpu_flash.node lazily, once, and turns every way it can be missing into the reason that
// availability(), explain and `attn doctor` show. Nothing here throws at import time.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HostArray } from '@attn/core';

/** A strided view as the addon takes it: element (a, b, c, d) at data[offset + a*s0 + b*s1 + c*s2 + d*s3]. */
export interface NativeView {
  readonly data: HostArray;
  readonly offset: number;
  readonly strides: readonly [number, number, number, number];
}

/** Everything a forward call needs; see native/src/args.cpp for the checks the addon repeats. */
export interface NativeForwardDesc {
  readonly isa: string;
  readonly threads: number;
  readonly dtype: 'float32' | 'float16' | 'bfloat16';
  readonly B: number;
  readonly Hq: number;
  readonly Hk: number;
  readonly Sq: number;
  readonly Sk: number;
  readonly D: number;
  readonly Dv: number;
  readonly q: NativeView;
  readonly k: NativeView;
  readonly v: NativeView;
  readonly out: NativeView;
  readonly lse: { readonly data: Float32Array; readonly offset: number };
  readonly scale: number;
  readonly softcap: number;
  readonly causal: boolean;
  /** Causal, window and ALiBi measured from key i + Sk - Sq (per sequence under varlen); else from key i. */
  readonly lowerRight: boolean;
  /** -1 = unbounded. */
  readonly windowLeft: number;
  readonly windowRight: number;
  readonly mask: (NativeView & { readonly kind: 'bool' | 'additive'; readonly dtype: string }) | null;
  readonly alibi: { readonly data: Float32Array; readonly offset: number; readonly strideB: number; readonly strideH: number } | null;
  /** Packed sequences: B + 1 offsets into the [total, H, D] tensors (then Sq, Sk are the longest). */
  readonly varlen: { readonly cuQ: Int32Array; readonly cuK: Int32Array } | null;
  readonly dropout: {
    readonly seedLo: number;
    readonly seedHi: number;
    readonly offset: number;
    readonly threshold: number;
    readonly keepScale: number;
  } | null;
}

export interface NativeBackwardDesc extends NativeForwardDesc {
  readonly dout: NativeView;
  readonly dq: NativeView;
  readonly dk: NativeView;
  readonly dv: NativeView;
  /** fp32 gradient of an additive mask, contiguous [dims]; each dim 1 (summed over) or full. */
  readonly dbias: { readonly data: Float32Array; readonly offset: number; readonly dims: readonly number[] } | null;
}

export interface NativeBuildInfo {
  readonly compiledIsas: string[];
  readonly runnableIsas: string[];
  readonly isa: string;
  readonly compiler: string;
  readonly napiVersion: number;
  readonly poolThreads: number;
  /** How the forward's tasks are claimed: 'ranges' (default) or 'dynamic' (ATTN_CPU_FLASH_SCHED=dynamic). */
  readonly forwardSchedule?: string;
  /** bf16 tile kernels: 'own' (each thread packs the K/V it needs, default) or 'shared' (ATTN_CPU_FLASH_PACK=shared). */
  readonly bf16Packing?: string;
  readonly forwardPath?: Record<string, string>;
  readonly backwardPath?: Record<string, string>;
}

export interface CpuFlashAddon {
  forward(desc: NativeForwardDesc): void;
  forwardAsync(desc: NativeForwardDesc): Promise<void>;
  backward(desc: NativeBackwardDesc): void;
  backwardAsync(desc: NativeBackwardDesc): Promise<void>;
  buildInfo(isa?: string): NativeBuildInfo;
}

const FUNCTIONS = ['forward', 'forwardAsync', 'backward', 'backwardAsync', 'buildInfo'] as const;
export const ADDON_RELATIVE_PATH = 'build/Release/cpu_flash.node';
const BUILD_HINT = 'run `pnpm --filter @attn/cpu build:native` (needs cmake and a C++17 compiler)';

export type AddonLoad =
  | { readonly ok: true; readonly addon: CpuFlashAddon; readonly path: string }
  | { readonly ok: false; readonly reason: string; readonly path: string };

/** The package folder: the nearest one up from this file with @attn/cpu's package.json (src/flash/ or dist/). */
export function packageRoot(from: string = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: unknown }).name === '@attn/cpu') return dir;
      } catch {
        // not ours; keep looking
      }
    }
    if (dirname(dir) === dir) return join(from, '..', '..');
  }
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Loads the addon under `root`; never throws. `requireFn` is injectable for tests. */
export function loadAddon(root: string = packageRoot(), requireFn: NodeJS.Require = createRequire(import.meta.url)): AddonLoad {
  const path = join(root, ADDON_RELATIVE_PATH);
  if (!existsSync(path)) {
    const skipped = join(root, 'build', 'SKIPPED');
    if (existsSync(skipped)) {
      const why = readFileSync(skipped, 'utf8').trim() || 'no reason recorded';
      return { ok: false, path, reason: `unavailable: native addon not built: ${why}` };
    }
    return { ok: false, path, reason: `unavailable: native addon not built (${path} is missing); ${BUILD_HINT}` };
  }
  let addon: Partial<CpuFlashAddon>;
  try {
    addon = requireFn(path) as Partial<CpuFlashAddon>;
  } catch (e) {
    return { ok: false, path, reason: `unavailable: native addon failed to load (${path}): ${message(e)}` };
  }
  const missing = FUNCTIONS.filter((name) => typeof addon[name] !== 'function');
  if (missing.length > 0) {
    return { ok: false, path, reason: `unavailable: native addon ${path} is from another version (missing ${missing.join(', ')}); ${BUILD_HINT}` };
  }
  return { ok: true, path, addon: addon as CpuFlashAddon };
}

let cached: AddonLoad | null = null;

/** The process-wide addon, loaded on first use; the failure, if any, is remembered. */
export function addon(): AddonLoad {
  cached ??= loadAddon();
  return cached;
}
