// 'memeff-cuda': the general-purpose CUDA backend (our own kernels after PyTorch's mem_eff_attention
// / xFormers cutlassF/B design). Runs where flash-cuda declines: fp32, bias or boolean masks (with
// windows, ALiBi, softcap), odd head dims, Dv != D, GPUs from sm50 on.
import type { Availability, Backend } from '@attn/core';
import { availability as cudaAvailability } from '@attn/cuda';
import { addonState } from './native.js';
import { MEMEFF_TOLERANCES, memeffRules } from './rules.js';
import { runBackward, runForward } from './run.js';

/** Below flash-cuda (100): flash takes what it can, this backend the rest. */
export const MEMEFF_PRIORITY = 80;

function availability(): Availability {
  const load = addonState();
  if (!load.ok) return { ok: false, reason: load.reason };
  const cuda = cudaAvailability();
  if (!cuda.ok) return { ok: false, reason: `@attn/cuda: ${cuda.reason}` };
  return { ok: true };
}

export const memeffCudaBackend: Backend = {
  name: 'memeff-cuda',
  deviceType: 'cuda',
  defaultPriority: MEMEFF_PRIORITY,
  description:
    'Memory-efficient attention on CUDA (mem_eff_attention design, own kernels): fp32/fp16/bf16, any head dims, bias and ' +
    'boolean masks, causal, sliding windows, ALiBi, softcap, varlen, sequsedK, dropout, GQA, forward and backward; ' +
    'tensor cores for fp16/bf16 on sm80+ and for fp32 (3xTF32) on sm90, FMA elsewhere.',
  availability,
  rules: memeffRules,
  tolerances: MEMEFF_TOLERANCES,
  forward: (p) => runForward(p).outputs,
  backward: (p, saved, gradOut) => runBackward(p, saved, gradOut).gradients,
  // The backward reads P from the given lse and delta from the given out (bwd_dsum: dO . O).
  backwardFrom: { run: (p, saved, gradOut) => runBackward(p, saved, gradOut).gradients },
  buildInfo: (): Record<string, string | number | boolean | readonly string[]> => {
    const load = addonState();
    if (!load.ok) return { built: false, reason: load.reason };
    return {
      built: true,
      addon: load.path,
      addonOrigin: load.origin,
      archs: load.addon.archs.split(/[;,]/),
      cudaRuntime: load.addon.cudaRuntimeVersion,
      kernels: load.addon.kernels,
    };
  },
};
