// @attn/flash-cuda: importing it registers the 'flash-cuda' backend (and, through @attn/cuda, device
// 'cuda'). The addon loads on first use; without it or a GPU, availability() says why.
import '@attn/cuda';
import { registerBackend } from '@attn/core';
import { flashCudaBackend } from './backend.js';

registerBackend(flashCudaBackend);

export { FLASH_PRIORITY, flashCudaBackend } from './backend.js';
export { FLASH_KERNELS, sm90Declines } from './kernels.js';
export { FLASH_RULES, alibiHeadContiguous, denseRank4OrVarlen, varlenOffsetsOnDevice } from './rules.js';
export { flashForward, planFor } from './forward.js';
export { flashKvCacheForward, kvCachePlanFor, type KvCacheOverrides } from './kv-cache.js';
export { backwardPlanFor, flashBackward, type FlashBackwardOptions } from './backward.js';
export { BWD_SMEM_BYTES, backwardSharedMemory } from './rules-backward.js';
