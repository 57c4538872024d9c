// The suite every backend runs, against cpu-math, on a GPU host. Elsewhere it is skipped with the reason
// printed (a skip is not a pass).
import '@attn/cpu';
import { describeConformance, describeWhereRunnable } from '@attn/conformance';

import { flashCudaBackend } from './index.js';

const av = flashCudaBackend.availability();
describeWhereRunnable(`conformance of 'flash-cuda'`, av.ok ? null : av.reason, () => {
  describeConformance('flash-cuda', { quick: true });
});
