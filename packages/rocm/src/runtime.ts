// The 'rocm' device runtime: @attn/cuda's TS runtime (its runtime factory) over this package's
// addon, attn_rocm.node, which is @attn/cuda's native/src compiled with hipcc. One source, two
// builds, one TS layer: nothing of the runtime is copied here. Creating it loads nothing; index.ts
// registers it with core and exports its surface.
import { createGpuRuntime } from '@attn/cuda/runtime-factory';
import { findPackageRoot } from '@attn/native';

/** The package folder (src/ or dist/ sit below it). */
export const PACKAGE_ROOT = findPackageRoot(import.meta.url, '@attn/rocm');

export const rocm = createGpuRuntime({ type: 'rocm', packageRoot: PACKAGE_ROOT });
