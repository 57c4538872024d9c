// The suite every backend runs against cpu-math, in full (every case in every dtype, float64 included,
// S = 1000 and D = 512 too): cuda-math must run all of it, since it is the CUDA fallback. Without a
// device it is skipped with the reason printed; ATTN_REQUIRE_GPU=1 turns the skip into a failure.
import '@attn/cpu';
import { buildCases, describeConformanceWhereRunnable } from '@attn/conformance';
import '../index.js';
import { mathLoad } from './binding.js';

const load = mathLoad();

describeConformanceWhereRunnable(['cuda-math'], {
  reason: load.ok ? null : load.reason,
  requireEnv: 'ATTN_REQUIRE_GPU',
  needs: 'a CUDA device and a build of this addon',
  device: 'cuda:0',
  // Every case: cuda-math declines none of them.
  minCases: buildCases().length,
});
