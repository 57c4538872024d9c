// How a runtime's addon was built and what it found, for `attn doctor`.
import { callNative } from './errors.js';
import type { NativeAccess } from './native.js';

export type BuildInfo = Record<string, string | number | boolean | readonly string[]>;

export function createBuildInfo(native: NativeAccess): () => BuildInfo {
  const { platform } = native;
  return () => {
    const { load, availability } = native.state();
    const info: Record<string, string | number | boolean | readonly string[]> = {
      package: platform.packageName,
      addonLoaded: load.ok,
      available: availability.ok,
    };
    if (!availability.ok) info.reason = availability.reason;
    if (!load.ok) return info;
    const { addon } = load;
    info.addonPath = load.path;
    info.addonOrigin = load.origin;
    const b = callNative(() => addon.buildInfo());
    info.platform = b.platform;
    info.archs = b.archs.split(/[;,]/).filter((a) => a.length > 0);
    info.compiler = b.compiler;
    info.compilerVersion = b.compilerVersion;
    info.buildType = b.buildType;
    info.flags = b.flags;
    info.napiVersion = b.napiVersion;
    // Formatted here, in the runtime's own version encoding (CUDA's and HIP's differ).
    const runtime = callNative(() => addon.runtimeVersion());
    const driver = callNative(() => addon.driverVersion());
    info.runtimeVersion = platform.formatVersion(runtime);
    info.driverVersion = driver === 0 ? 'none' : platform.formatVersion(driver);
    return info;
  };
}
