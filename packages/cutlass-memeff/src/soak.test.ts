// 10,000 mixed calls on memeff-cuda, on a GPU host: resident memory flat, and the caching
// allocator's live bytes the same before and after; elsewhere skipped with the reason printed.
import { describeSoak } from '@attn/conformance';
import { memoryStats, synchronize } from '@attn/cuda';
import { describe, it } from 'vitest';
import { gpuEnv } from './gpu-env.js';
import './index.js';

const env = gpuEnv();
if (env.ok) {
  describeSoak({
    backend: 'memeff-cuda',
    device: 'cuda:0',
    dtype: 'float32',
    deviceBytes: () => {
      synchronize(0);
      return memoryStats(0).allocatedBytes;
    },
  });
} else {
  console.log(`memeff-cuda soak skipped: ${env.reason}`);
  describe.skip(`soak of 'memeff-cuda' (skipped: ${env.reason})`, () => {
    it('needs a CUDA device', () => {});
  });
}
