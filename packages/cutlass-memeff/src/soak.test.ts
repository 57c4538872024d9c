// 10,000 mixed calls on memeff-cuda, on a GPU host: resident memory flat, and the caching
// allocator's live bytes the same before and after; elsewhere skipped with the reason printed.
import { describeSoak, describeWhereRunnable } from '@attn/conformance';
import { memoryStats, synchronize } from '@attn/cuda';

import { gpuEnv } from './gpu-env.js';
import './index.js';

const env = gpuEnv();
describeWhereRunnable(`soak of 'memeff-cuda'`, env.ok ? null : env.reason, () => {
  describeSoak({
    backend: 'memeff-cuda',
    device: 'cuda:0',
    dtype: 'float32',
    deviceBytes: () => {
      synchronize(0);
      return memoryStats(0).allocatedBytes;
    },
  });
});
