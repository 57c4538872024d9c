// The fuzz suite on memeff-cuda, on a GPU host (ATTN_FUZZ_RUNS sets a larger budget there); elsewhere
// skipped with the reason printed. Every case runs in a child process; see @attn/conformance.
import { fileURLToPath } from 'node:url';
import { describeFuzz, describeWhereRunnable } from '@attn/conformance';

import { gpuEnv } from './gpu-env.js';

const env = gpuEnv();
describeWhereRunnable(`fuzz of 'memeff-cuda'`, env.ok ? null : env.reason, () => {
  // memeff takes every feature the fuzz draws (it declines empty head dims and float32-overflowing scalars
  // only), so the default share of cases must run; each decline is still checked.
  describeFuzz('memeff-cuda', {
    modules: ['@attn/cpu', fileURLToPath(new URL('./index.ts', import.meta.url))],
    device: 'cuda:0',
    dtypes: ['float32', 'float16', 'bfloat16'],
  });
});
