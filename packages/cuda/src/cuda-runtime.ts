// @attn/cuda's own runtime: the factory over this package's nvcc build. Creating it loads nothing;
// index.ts registers it with core.
import { findPackageRoot } from '@attn/native';
import { createGpuRuntime } from './runtime-factory.js';

/** The package folder (src/ or dist/ sit below it). */
export const PACKAGE_ROOT = findPackageRoot(import.meta.url, '@attn/cuda');

export const cuda = createGpuRuntime({ type: 'cuda', packageRoot: PACKAGE_ROOT });
