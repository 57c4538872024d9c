// @attn/cutlass-memeff: importing it registers 'memeff-cuda' with @attn/core (and @attn/cuda's
// device runtime, which it needs). The addon loads on first use; nothing here throws.
import '@attn/cuda';
import { registerBackend } from '@attn/core';
import { memeffCudaBackend } from './backend.js';

registerBackend(memeffCudaBackend);

export { memeffCudaBackend, MEMEFF_PRIORITY } from './backend.js';
export { memeffRules } from './rules.js';
export { runBackward, runForward, type BackwardRun, type ForwardRun } from './run.js';
export type { KernelPath } from './native.js';
