// The 'rocm' device runtime: @attn/cuda's TS runtime (its runtime factory) over this package's
// addon, build/Release/attn_rocm.node, which is @attn/cuda's native/src compiled with hipcc. One
// source, two builds, one TS layer: nothing of the runtime is copied here. Creating it loads
// nothing; index.ts registers it with core and exports its surface.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createGpuRuntime } from '@attn/cuda/runtime-factory';

/** The package folder: this file sits in src/ (sources) or dist/ (build), one level below it. */
export const PACKAGE_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const ADDON_NAME = 'attn_rocm';

export const rocm = createGpuRuntime({
  type: 'rocm',
  packageRoot: PACKAGE_ROOT,
  addonName: ADDON_NAME,
  buildHint: 'run `pnpm --filter @attn/rocm build:native` where ROCm (hipcc) is installed',
});
