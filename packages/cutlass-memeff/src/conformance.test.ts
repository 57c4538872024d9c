// The suite every backend runs against cpu-math, forward and backward, on a GPU host. Without a
// device it is skipped with the reason printed (a skip is never a pass).
import '@attn/cpu';
import { describeConformance } from '@attn/conformance';
import { describe, it } from 'vitest';
import { gpuEnv } from './gpu-env.js';
import './index.js';

const env = gpuEnv();
if (env.ok) {
  describeConformance('memeff-cuda', { minCases: 40 });
} else {
  console.log(`memeff-cuda conformance skipped: ${env.reason}`);
  describe.skip(`conformance of 'memeff-cuda' (skipped: ${env.reason})`, () => {
    it('needs a CUDA device', () => {});
  });
}
