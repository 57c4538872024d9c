// 'cuda-math': the CUDA counterpart of cpu-math and the last CUDA backend tried. It takes every call
// cpu-math takes (up to the head dims and lengths of limits.ts), with cpu-math's semantics, in plain
// FMA kernels: the fallback that keeps a valid call on a CUDA tensor from ending in NoBackendError.
import type { Availability, Backend } from '@attn/core';
import { mathLoad } from './binding.js';
import { CUDA_MATH_LIMITS } from './limits.js';
import { CUDA_MATH_TOLERANCES, cudaMathRules } from './rules.js';
import { runBackward, runForward } from './run.js';

/** Below every other CUDA backend (memeff-cuda 80, flash-cuda 100): it runs what they all decline. */
export const CUDA_MATH_PRIORITY = 0;

function availability(): Availability {
  const load = mathLoad();
  return load.ok ? { ok: true } : { ok: false, reason: load.reason };
}

export const cudaMathBackend: Backend = Object.freeze({
  name: 'cuda-math',
  deviceType: 'cuda',
  defaultPriority: CUDA_MATH_PRIORITY,
  fallback: true,
  description:
    "The CUDA fallback: cpu-math's semantics in plain FMA kernels (no tensor cores), for every call the faster CUDA backends " +
    `decline: float64/float32/float16/bfloat16 (float64 accumulation for float64, float32 otherwise), any strides, masks, ` +
    `causal, window, ALiBi, softcap, dropout, GQA, varlen, zero lengths, head dims up to ${CUDA_MATH_LIMITS.maxHeadDim}; forward and a deterministic backward.`,
  availability,
  rules: cudaMathRules,
  tolerances: CUDA_MATH_TOLERANCES,
  forward: (p) => runForward(p).outputs,
  backward: (p, saved, gradOut) => runBackward(p, saved, gradOut).gradients,
  buildInfo: (): Record<string, string | number | boolean | readonly string[]> => {
    const load = mathLoad();
    if (!load.ok) return { fallback: true, reason: load.reason };
    const limits = load.addon.mathLimits();
    return {
      fallback: true,
      maxHeadDim: limits.maxHeadDim,
      maxSeq: limits.maxSeq,
      accumulation: 'float64 for float64 (and where scale or softcap overflow float32), float32 otherwise',
      kernels: load.addon.mathKernels(),
    };
  },
} satisfies Backend & { fallback: true });
