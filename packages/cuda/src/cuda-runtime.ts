// @attn/cuda's own runtime: the factory over this package's nvcc build. Creating it loads nothing;
// index.ts registers it with core.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createGpuRuntime } from './runtime-factory.js';

/** The package folder: this file sits in src/ (sources) or dist/ (build), one level below it. */
export const PACKAGE_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const ADDON_NAME = 'attn_cuda';

export const cuda = createGpuRuntime({
  type: 'cuda',
  packageRoot: PACKAGE_ROOT,
  addonName: ADDON_NAME,
  buildHint: 'run `pnpm --filter @attn/cuda build:native` where the CUDA toolkit (nvcc) is installed',
});
