// The fuzz suite on flash-cuda, on a GPU host (ATTN_FUZZ_RUNS sets a larger budget there); elsewhere
// skipped with the reason printed. Every case runs in a child process; see @attn/conformance.
import { fileURLToPath } from 'node:url';
import { describeFuzz } from '@attn/conformance';
import { describe, it } from 'vitest';
import { flashCudaBackend } from './index.js';

const av = flashCudaBackend.availability();
if (av.ok) {
  describeFuzz('flash-cuda', { modules: ['@attn/cpu', fileURLToPath(new URL('./index.ts', import.meta.url))], device: 'cuda:0', dtypes: ['float16', 'bfloat16'] });
} else {
  console.log(`[@attn/flash-cuda] fuzz skipped: ${av.reason}`);
  describe.skip(`fuzz of 'flash-cuda' (skipped: ${av.reason})`, () => {
    it('needs a CUDA device', () => {});
  });
}
