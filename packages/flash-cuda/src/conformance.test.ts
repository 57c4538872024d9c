// The suite every backend runs, against cpu-math, on a GPU host. Elsewhere it is skipped with the reason
// printed (a skip is not a pass).
import '@attn/cpu';
import { describeConformance } from '@attn/conformance';
import { describe, it } from 'vitest';
import { flashCudaBackend } from './index.js';

const av = flashCudaBackend.availability();
if (av.ok) {
  describeConformance('flash-cuda', { quick: true });
} else {
  console.log(`[@attn/flash-cuda] conformance suite skipped: ${av.reason}`);
  describe.skip(`conformance of 'flash-cuda' (skipped: ${av.reason})`, () => {
    it('needs a CUDA device', () => {});
  });
}
