// 10,000 mixed calls on flash-cuda, on a GPU host: resident memory flat, and the caching
// allocator's live bytes the same before and after; elsewhere skipped with the reason printed.
import { describeSoak, describeWhereRunnable } from '@attn/conformance';
import { memoryStats, synchronize } from '@attn/cuda';

import { flashCudaBackend } from './index.js';

const av = flashCudaBackend.availability();
describeWhereRunnable(`soak of 'flash-cuda'`, av.ok ? null : av.reason, () => {
  describeSoak({
    backend: 'flash-cuda',
    device: 'cuda:0',
    dtype: 'float16',
    deviceBytes: () => {
      synchronize(0);
      return memoryStats(0).allocatedBytes;
    },
  });
});
