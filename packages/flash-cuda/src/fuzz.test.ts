// The fuzz suite on flash-cuda, on a GPU host (ATTN_FUZZ_RUNS sets a larger budget there); elsewhere
// skipped with the reason printed. Every case runs in a child process; see @attn/conformance.
import { fileURLToPath } from 'node:url';
import { describeFuzz, describeWhereRunnable } from '@attn/conformance';

import { flashCudaBackend } from './index.js';

const av = flashCudaBackend.availability();
describeWhereRunnable(`fuzz of 'flash-cuda'`, av.ok ? null : av.reason, () => {
  describeFuzz('flash-cuda', {
    modules: ['@attn/cpu', fileURLToPath(new URL('./index.ts', import.meta.url))],
    device: 'cuda:0',
    dtypes: ['float16', 'bfloat16'],
  });
});
