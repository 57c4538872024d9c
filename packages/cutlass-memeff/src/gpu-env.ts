// Whether this process can run 'memeff-cuda' kernels; GPU suites skip (with this reason printed) otherwise.
import { memeffCudaBackend } from './backend.js';

export interface GpuEnv {
  readonly ok: boolean;
  readonly reason: string;
}

export function gpuEnv(): GpuEnv {
  const a = memeffCudaBackend.availability();
  return a.ok ? { ok: true, reason: '' } : { ok: false, reason: a.reason };
}
