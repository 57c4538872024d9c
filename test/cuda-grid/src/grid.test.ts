// The grid walk on CUDA (issue 21's goal: 0 NoBackendError over the conformance grid on a CUDA
// device). Every CUDA backend package is imported, as a user with all of them installed has them;
// core selects among them for each grid point, and what runs must match cpu-math. Without a device
// the suite is skipped with the reason printed; ATTN_REQUIRE_GPU=1 turns the skip into a failure.
import '@attn/cpu';
import '@attn/cutlass-memeff';
import '@attn/flash-cuda';
import { describeGridWalk } from '@attn/conformance';
import { envTestGate } from '@attn/core';
import { cudaMathBackend } from '@attn/cuda';
import { describe, expect, it } from 'vitest';

const av = cudaMathBackend.availability();
if (av.ok) {
  describeGridWalk({ device: 'cuda:0' });
} else if (envTestGate('ATTN_REQUIRE_GPU')) {
  describe('grid walk on cuda:0', () => {
    it('runs (ATTN_REQUIRE_GPU=1)', () => {
      expect.fail(`cuda-math cannot run: ${av.reason}`);
    });
  });
} else {
  console.log(`grid walk on cuda:0 skipped: ${av.reason}`);
  describe.skip(`grid walk on cuda:0 (skipped: ${av.reason})`, () => {
    it('needs a CUDA device', () => {});
  });
}
