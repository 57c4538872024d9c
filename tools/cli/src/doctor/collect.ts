// `attn doctor`'s facts, as data: host, device runtimes and their devices, packages, backends.
import { getDeviceRuntime, listBackends, type BackendEntry, type DeviceProperties } from '@attn/core';
import { cpuInfo, type CpuInfo } from '../runtime/cpu-info.js';
import type { NcclSection } from './nccl.js';
import { KNOWN_PACKAGES, moduleOf, type PackageStatus } from '../runtime/packages.js';

type Facts = Record<string, string | number | boolean | readonly string[]>;

export interface RuntimeReport {
  readonly type: 'cuda' | 'rocm';
  readonly package: string;
  readonly state: 'not installed' | 'not registered' | 'unavailable' | 'ok';
  readonly reason?: string;
  /** Driver and runtime versions, where the package exports them. */
  readonly versions?: Facts;
  readonly devices: readonly (DeviceProperties & { readonly memory?: Facts })[];
}

export interface BackendReport {
  readonly name: string;
  readonly device: string;
  readonly priority: number;
  readonly description: string;
  readonly available: boolean;
  readonly reason?: string;
  readonly buildInfo?: Facts;
  /** The kernel families the `kernel` option (`--kernel`) may name on this backend. */
  readonly kernels: readonly { readonly name: string; readonly description: string }[];
}

export interface DoctorReport {
  readonly host: { readonly node: string; readonly napi: string; readonly platform: string; readonly cpu: CpuInfo };
  readonly runtimes: readonly RuntimeReport[];
  readonly packages: readonly {
    readonly name: string;
    readonly kind: string;
    readonly state: string;
    readonly version?: string | null;
    readonly error?: string;
  }[];
  readonly backends: readonly BackendReport[];
  /** Which NCCL @attn/context-parallel finds (doctor adds it; absent in collectDoctor's own answer). */
  readonly nccl?: NcclSection;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Calls the first of `names` that the module exports as a function; its plain-object answer, or null. */
function callExport(
  module: Record<string, unknown> | null,
  names: readonly string[],
  ...args: unknown[]
): Facts | null {
  for (const n of names) {
    const fn = module?.[n];
    if (typeof fn !== 'function') continue;
    try {
      const v: unknown = fn(...args);
      if (v && typeof v === 'object')
        return JSON.parse(JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? Number(x) : x))) as Facts;
      if (v !== undefined && v !== null) return { [n]: String(v) };
    } catch (err) {
      return { [`${n} failed`]: message(err) };
    }
  }
  return null;
}

/** 13000 -> '13.0' (CUDA's encoding: 1000 * major + 10 * minor). */
export function cudaVersionString(v: number): string {
  return v > 0 ? `${Math.floor(v / 1000)}.${Math.floor((v % 1000) / 10)}` : 'none';
}

/** Driver and runtime versions and the addon's build, from the exports a runtime package has. */
function runtimeVersions(type: string, module: Record<string, unknown> | null): Facts | undefined {
  const out: Record<string, string | number | boolean | readonly string[]> = {
    ...(callExport(module, ['buildInfo', `${type}BuildInfo`]) ?? {}),
  };
  for (const name of ['driverVersion', 'runtimeVersion'] as const) {
    if (out[name] !== undefined) continue;
    const raw = callExport(module, [name])?.[name];
    if (raw !== undefined) out[name] = /^\d+$/.test(String(raw)) ? cudaVersionString(Number(raw)) : String(raw);
  }
  return Object.keys(out).length ? out : undefined;
}

function runtimeReport(type: 'cuda' | 'rocm', packages: readonly PackageStatus[]): RuntimeReport {
  const pkg = type === 'cuda' ? '@attn/cuda' : '@attn/rocm';
  const status = packages.find((p) => p.name === pkg);
  if (!status || status.state === 'not installed') return { type, package: pkg, state: 'not installed', devices: [] };
  if (status.state === 'failed')
    return { type, package: pkg, state: 'unavailable', reason: `import failed: ${status.error}`, devices: [] };
  const module = moduleOf(packages, pkg);
  const runtime = getDeviceRuntime(type);
  const versions = runtimeVersions(type, module);
  const withVersions = versions ? { versions } : {};
  if (!runtime) {
    // The package may still say why (e.g. its addon is missing) through an availability export.
    const avail = callExport(module, ['availability', `${type}Availability`]) as {
      ok?: unknown;
      reason?: unknown;
    } | null;
    const why = avail?.ok === false && typeof avail.reason === 'string' ? `; ${avail.reason}` : '';
    return {
      type,
      package: pkg,
      state: 'not registered',
      reason: `${pkg} loaded but registered no '${type}' device runtime${why}`,
      ...withVersions,
      devices: [],
    };
  }
  try {
    const avail = runtime.availability();
    if (!avail.ok)
      return { type, package: pkg, state: 'unavailable', reason: avail.reason, ...withVersions, devices: [] };
    const devices = Array.from({ length: runtime.deviceCount() }, (_, i) => {
      const memory = callExport(module, ['memoryStats'], i);
      return { ...runtime.properties(i), ...(memory ? { memory } : {}) };
    });
    return { type, package: pkg, state: 'ok', ...withVersions, devices };
  } catch (err) {
    return { type, package: pkg, state: 'unavailable', reason: message(err), devices: [] };
  }
}

function backendReport(entry: BackendEntry): BackendReport {
  const b = entry.backend;
  const kernels = (b.kernels ?? []).map((k) => ({ name: k.name, description: k.description }));
  const base = { name: b.name, device: b.deviceType, priority: entry.priority, description: b.description, kernels };
  let available = false;
  let reason: string | undefined;
  try {
    const a = b.availability();
    available = a.ok;
    if (!a.ok) reason = a.reason;
  } catch (err) {
    reason = `availability() threw: ${message(err)}`;
  }
  let buildInfo: Facts | undefined;
  try {
    buildInfo = b.buildInfo?.();
  } catch (err) {
    buildInfo = { error: message(err) };
  }
  return { ...base, available, ...(reason !== undefined ? { reason } : {}), ...(buildInfo ? { buildInfo } : {}) };
}

export function collectDoctor(packages: readonly PackageStatus[]): DoctorReport {
  return {
    host: {
      node: process.version,
      napi: process.versions.napi ?? 'unknown',
      platform: `${process.platform}-${process.arch}`,
      cpu: cpuInfo(),
    },
    runtimes: [runtimeReport('cuda', packages), runtimeReport('rocm', packages)],
    packages: KNOWN_PACKAGES.map((k) => {
      const s = packages.find((p) => p.name === k.name);
      const base = { name: k.name, kind: `${k.device} ${k.kind}` };
      if (!s) return { ...base, state: 'not installed' };
      if (s.state === 'loaded') return { ...base, state: 'installed', version: s.version };
      if (s.state === 'failed') return { ...base, state: 'failed to load', error: s.error };
      return { ...base, state: 'not installed' };
    }),
    backends: listBackends().map(backendReport),
  };
}
