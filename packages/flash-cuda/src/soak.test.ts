// 10,000 mixed calls on flash-cuda, on a GPU host: resident memory flat, and the caching
// allocator's live bytes the same before and after; elsewhere skipped with the reason printed.
import { describeSoak } from '@attn/conformance';
import { memoryStats, synchronize } from '@attn/cuda';
import { describe, it } from 'vitest';
import { flashCudaBackend } from './index.js';

const av = flashCudaBackend.availability();
if (av.ok) {
  describeSoak({
    backend: 'flash-cuda',
    device: 'cuda:0',
    dtype: 'float16',
    deviceBytes: () => {
      synchronize(0);
      return memoryStats(0).allocatedBytes;
    },
  });
} else {
  console.log(`[@attn/flash-cuda] soak skipped: ${av.reason}`);
  describe.skip(`soak of 'flash-cuda' (skipped: ${av.reason})`, () => {
    it('needs a CUDA device', () => {});
  });
}
