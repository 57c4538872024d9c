// The suite every backend runs against cpu-math, forward and backward, on a GPU host. Without a
// device it is skipped with the reason printed (a skip is never a pass). memeff-cuda declines only
// float64, an empty value head dim (Dv = 0) and paged K/V in this grid (cuda-math and flash-cuda take
// those; the sdpaKvCache cases, which no CUDA backend takes yet, are counted apart). The seeds'
// features, empty sequences and odd sizes all run: every other case must run, so a feature the rules
// start to decline fails here.
import '@attn/cpu';
import { buildCases, describeConformance, describeWhereRunnable } from '@attn/conformance';

import { gpuEnv } from './gpu-env.js';
import './index.js';

const env = gpuEnv();
describeWhereRunnable(`conformance of 'memeff-cuda'`, env.ok ? null : env.reason, () => {
  describeConformance('memeff-cuda', {
    minCases: buildCases().filter((c) => c.dtype !== 'float64' && c.headDimV > 0 && !c.paged).length,
  });
});
