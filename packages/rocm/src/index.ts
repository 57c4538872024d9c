// @attn/rocm: the ROCm (HIP) device runtime, built from @attn/cuda's sources and TS runtime factory,
// and the choice between AOTriton and CK for ROCm attention (as PyTorch's preferred_rocm_fa_library).
// Importing it registers device 'rocm' with @attn/core and never throws: the addon loads on first
// use, and when it or a GPU is missing, availability() says why.
import { registerDeviceRuntime } from '@attn/core';
import { rocm } from './runtime.js';

registerDeviceRuntime(rocm.runtime);

export { lazyAddon, loadAddon, type AddonLoad, type AddonSpec } from './addon-loader.js';
export { effectiveBounds, type Bounds } from './bounds.js';
export { readEnvFlag, type Env, type EnvFlag } from './env.js';
export {
  ckProblems,
  defaultFaLibraryDeps,
  describeSource,
  isCkSdpaAvailable,
  PREFER_CK_ENV,
  preferredRocmFaLibrary,
  registerRocmFaLibrary,
  resetRocmFaPreference,
  resolveAndWarn,
  resolveRocmFaLibrary,
  RocmFaLibraryError,
  unregisterRocmFaLibrary,
  visibleRocmArchs,
  type FaLibraryDeps,
  type RocmFaChoice,
  type RocmFaLibrary,
  type RocmFaLibraryProbe,
  type RocmFaPreference,
  type VisibleArchs,
} from './fa-library.js';
export { rocmFaLibraryRule } from './fa-library-rule.js';
export { resetWarnOnce, warnOnce } from './warn-once.js';
export {
  availability,
  rocmAvailability,
  rocmBuildInfo,
  rocmRuntime,
  isRocmStorage,
  allocate,
  copyDeviceToDevice,
  copyDeviceToHost,
  copyDeviceToHostAsync,
  copyHostToDevice,
  fill,
  synchronize,
  deviceCount,
  deviceProperties,
  driverVersion,
  runtimeVersion,
  memoryStats,
  resetPeakMemoryStats,
  emptyCache,
  recordStream,
  currentStream,
  setCurrentStream,
  withStream,
  buildInfo,
  Stream,
  Event,
  type RocmDeviceProperties,
} from './runtime.js';
export {
  CudaError,
  CudaOutOfMemoryError,
  GpuStorage,
  type BuildInfo,
  type EventOptions,
  type MemoryStats,
  type StreamOptions,
} from '@attn/cuda/runtime-factory';
