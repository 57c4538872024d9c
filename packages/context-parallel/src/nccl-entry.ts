// @attn/context-parallel/nccl: the NCCL transport and the device-side ring math (needs @attn/cuda and
// the package's native addon, built where NCCL was found).
export { addonLoad, type ContextParallelAddon } from './nccl/addon.js';
export { deviceMath } from './nccl/device-math.js';
export { DEFAULT_TRANSFER_TIMEOUT_MS, NcclRing, type NcclRingOptions, type TransferTime } from './nccl/ring.js';
