// How the addon was built and what it found, for `attn doctor`.
import { callNative } from './errors.js';
import { formatCudaVersion, nativeState } from './native.js';

export type BuildInfo = Record<string, string | number | boolean | readonly string[]>;

export function buildInfo(): BuildInfo {
  const { load, availability } = nativeState();
  const info: Record<string, string | number | boolean | readonly string[]> = {
    package: '@attn/cuda',
    addonPath: load.path,
    addonLoaded: load.ok,
    available: availability.ok,
  };
  if (!availability.ok) info.reason = availability.reason;
  if (!load.ok) return info;
  const { addon } = load;
  const b = callNative(() => addon.buildInfo());
  info.platform = b.platform;
  info.archs = b.archs.split(/[;,]/).filter((a) => a.length > 0);
  info.compiler = b.compiler;
  info.compilerVersion = b.compilerVersion;
  info.buildType = b.buildType;
  info.flags = b.flags;
  info.napiVersion = b.napiVersion;
  const runtime = callNative(() => addon.runtimeVersion());
  const driver = callNative(() => addon.driverVersion());
  info.runtimeVersion = formatCudaVersion(runtime);
  info.driverVersion = driver === 0 ? 'none' : formatCudaVersion(driver);
  return info;
}
