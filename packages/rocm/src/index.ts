// @attn/rocm: the ROCm (HIP) runtime addon built from @attn/cuda's sources, and the choice between
// AOTriton and CK for ROCm attention (as PyTorch's preferred_rocm_fa_library). Importing it never
// throws; availability is reported, not raised.
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
export { currentStream, probeAvailability, rocmAvailability, rocmBuildInfo } from './runtime.js';
export { resetWarnOnce, warnOnce } from './warn-once.js';
