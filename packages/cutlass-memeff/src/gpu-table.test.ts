// memeff-cuda's case table in float32 (the FMA and 3xTF32 forwards), through the conformance harness;
// gpu-table-half.test.ts runs the fp16 and bf16 cases (a file each, so that they run side by side).
import '@attn/cpu';
import { describeCaseTable, describeWhereRunnable } from '@attn/conformance';
import { gpuEnv } from './gpu-env.js';
import { memeffCases } from './gpu-table-cases.js';

const env = gpuEnv();
describeWhereRunnable('memeff-cuda case table, float32', env.ok ? null : env.reason, () =>
  describeCaseTable('memeff-cuda', env.ok ? memeffCases().filter((c) => c.dtype === 'float32') : []),
);
