// memeff-cuda's case table in fp16 and bf16 (the tensor-core paths), through the conformance harness;
// gpu-table.test.ts runs the float32 cases.
import '@attn/cpu';
import { describeCaseTable, describeWhereRunnable } from '@attn/conformance';
import { gpuEnv } from './gpu-env.js';
import { memeffCases } from './gpu-table-cases.js';

const env = gpuEnv();
describeWhereRunnable('memeff-cuda case table, fp16 and bf16', env.ok ? null : env.reason, () =>
  describeCaseTable('memeff-cuda', env.ok ? memeffCases().filter((c) => c.dtype !== 'float32') : []),
);
