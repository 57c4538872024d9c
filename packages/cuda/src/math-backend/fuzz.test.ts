// The fuzz suite on cuda-math, on a GPU host (ATTN_FUZZ_RUNS sets a larger budget there, and
// ATTN_FUZZ_SANITIZER runs the children under compute-sanitizer); elsewhere skipped with the reason
// printed. Random valid calls, zero sizes, poisoned values and every dtype: as the fallback, cuda-math
// must run every one of them (only core's own input errors are declined). See @attn/conformance.
import { fileURLToPath } from 'node:url';
import { FLOAT_DTYPES } from '@attn/core';
import { describeFuzz } from '@attn/conformance';
import { describe, it } from 'vitest';
import { mathLoad } from './binding.js';

const load = mathLoad();
if (load.ok) {
  describeFuzz('cuda-math', {
    modules: ['@attn/cpu', fileURLToPath(new URL('../index.ts', import.meta.url))],
    device: 'cuda:0',
    dtypes: FLOAT_DTYPES,
    minRunShare: 1,
  });
} else {
  console.log(`cuda-math fuzz skipped: ${load.reason}`);
  describe.skip(`fuzz of 'cuda-math' (skipped: ${load.reason})`, () => {
    it('needs a CUDA device', () => {});
  });
}
