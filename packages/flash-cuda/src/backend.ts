// The 'flash-cuda' Backend: FlashAttention-2-class forward and backward kernels for fp16/bf16 on sm80+.
import type { Backend } from '@attn/core';
import { flashBackward } from './backward.js';
import { flashForward, flashForwardOut } from './forward.js';
import { FLASH_KERNELS } from './kernels.js';
import { flashKvCacheForward } from './kv-cache.js';
import { addonLoad, availability } from './native.js';
import { FLASH_RULES, FLASH_TOLERANCES } from './rules.js';

/** Above 'cutlass-memeff' (80), as PyTorch tries flash before efficient attention. */
export const FLASH_PRIORITY = 100;

export const flashCudaBackend: Backend = Object.freeze({
  name: 'flash-cuda',
  deviceType: 'cuda',
  defaultPriority: FLASH_PRIORITY,
  description:
    'FlashAttention-2-style forward and backward for NVIDIA sm80+ (mma.sync, ldmatrix, cp.async), and on H100/H200 ' +
    "(sm_90a builds) FlashAttention-3-style ones (wgmma, TMA, warp-specialized; the 'kernel' option names them): " +
    'fp16/bf16, D <= 256, causal (both alignments), sliding window, GQA/MQA, ALiBi, softcap, dropout, varlen, split-KV ' +
    'decode, deterministic backward, sdpaKvCache (append, rotary, paged or contiguous caches, cacheBatchIdx, leftpadK; ' +
    'graph-capturable); no mask. On H100/H200 also a float8_e4m3 forward (per-tensor descale, bf16 out, D <= 128).',
  availability,
  float8Inputs: true,
  rules: FLASH_RULES,
  tolerances: FLASH_TOLERANCES,
  kernels: FLASH_KERNELS,
  forward: (params) => (params.kvCache ? flashKvCacheForward(params) : flashForward(params)),
  forwardOut: (params) => {
    if (!params.kvCache) return flashForwardOut(params);
    const r = flashKvCacheForward(params);
    r.logsumexp.dispose();
    return r.out;
  },
  backward: (params, saved, gradOut) => flashBackward(params, saved, gradOut),
  // The backward reads P from the given lse and delta from the given out (the Dsum pass: dO . O).
  backwardFrom: { run: (params, saved, gradOut) => flashBackward(params, saved, gradOut) },
  buildInfo: (): Record<string, string | number | boolean | readonly string[]> => {
    const load = addonLoad();
    if (!load.ok) return { built: false, reason: load.reason };
    const a = load.addon;
    const info = a.buildInfo();
    return {
      built: true,
      addon: load.path,
      addonOrigin: load.origin,
      cudaArchs: info.cudaArchs,
      cudaRuntime: info.cudaRuntime,
      kernels: info.kernels,
      kernelNames: info.kernelNames,
      backwardKernels: a.backwardKernels?.() ?? [],
    };
  },
} satisfies Backend);
