// @attn/core: tensors, input checks, backend registry and selection, sdpa().
export * from './backend.js';
export * from './device.js';
export { CPU, DEVICE_TYPES, deviceToString, isDeviceType, parseDevice, sameDevice } from './device-parse.js';
export { deviceCapturing, noteCaptureUse, requireDeviceRuntime } from './device-registry.js';
export * from './dtype.js';
export {
  envNumThreads,
  envTestGate,
  envTestInt,
  envTestSanitizer,
  envTestSeed,
  MAX_NUM_THREADS,
  RUNTIME_ENV_FLAGS,
  SANITIZER_TOOLS,
  TEST_ENV_FLAGS,
  type RuntimeEnvFlag,
  type SanitizerTool,
  type TestEnvFlag,
} from './env-flags.js';
export { kernelCatalog, resolveKernel } from './kernel-option.js';
export * from './error-codes.js';
export * from './errors.js';
export * from './factory.js';
export { emptyOutput, forwardOutput, OUTPUT_NAMES, type OutputName, type OutputWrite } from './output-alloc.js';
export { checkIndexValuesOption, indexValuePolicy, type IndexValuePolicy } from './index-values.js';
export { clearCallCache } from './call-cache.js';
export { float8E4m3Bits, float8E4m3DecodeTable } from './float8.js';
export { outputDType } from './validate-float8.js';
export * from './half.js';
export { allocHostArray, elementDecoder, elementEncoder, isDType, isHostArray, isHostArrayOf } from './host-array.js';
export { broadcastsTo, contiguousStrides, forEachRow, isContiguousLayout, MAX_DIM } from './layout.js';
export * from './params.js';
export * from './philox.js';
export * from './registry.js';
export * from './report.js';
export * from './rules.js';
export { type HostIndexCopies, hostIndexCopies } from './rule.js';
export {
  describeCall,
  failingRules,
  type Restriction,
  resolveRestriction,
  selectBackend,
  type Selection,
} from './select.js';
export { explain, type ForwardResult, sdpa, sdpaBackward, sdpaForward, sdpaForwardAsync } from './sdpa.js';
export { sdpaBackwardFrom, type SavedForward } from './backward-from.js';
export { currentKernelScope, sdpaKernel } from './scope.js';
export { randomSeed } from './seed.js';
export * from './storage.js';
export { fromHostArray, isDeviceStorage, Tensor, type TensorInit } from './tensor.js';
export { normalizeParams } from './validate.js';
export { kernelWindow } from './window.js';
export { explainVarlen, normalizeVarlenParams, sdpaVarlen, sdpaVarlenAsync } from './varlen.js';
export {
  explainKvCache,
  type KvCacheResult,
  type KvHostCopies,
  kvHostCopies,
  normalizeKvCacheParams,
  sdpaKvCache,
  sdpaKvCacheAsync,
} from './kv-cache.js';
