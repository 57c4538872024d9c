// @attn/native/build: the source build of an addon package (see run-build.ts).
export { DEFAULT_CUDA_ARCHS, RELEASE_CUDA_ARCHS, cudaArchs } from './archs.js';
export { buildTools, cacheDir, pinnedBuildTools, type BuildTools } from './build-tools.js';
export { dependencyDirs, dirVariable } from './dependencies.js';
export { resolvePackage } from './resolve-package.js';
export { buildAddon, NativeBuildError, type BuildOptions, type BuildResult } from './run-build.js';
export { findToolchain, type Toolchain, type ToolchainResult } from './toolchain.js';
