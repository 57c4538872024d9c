#!/usr/bin/env node
// One attention call (forward, or forward then backward) on the GPU and nothing else, for a kernel profiler:
// the inputs are made, then one flash-cuda forward (and one backward) runs and the process synchronizes.
// scripts/ncu-vs-cudnn.sh runs it under ncu beside profile_call_torch.py (the same call through torch's cuDNN).
//
//   node packages/flash-cuda/scripts/profile-call.mjs [--batch 4] [--heads 16] [--seq 4096] [--dim 128]
//        [--causal] [--dtype bfloat16] [--mode fwd|fwdbwd]
import { parseArgs } from 'node:util';
import * as core from '@attn/core';
import * as cuda from '@attn/cuda';
import '@attn/flash-cuda';

const { values: a } = parseArgs({
  options: {
    batch: { type: 'string', default: '4' },
    heads: { type: 'string', default: '16' },
    seq: { type: 'string', default: '4096' },
    dim: { type: 'string', default: '128' },
    causal: { type: 'boolean', default: false },
    dtype: { type: 'string', default: 'bfloat16' },
    mode: { type: 'string', default: 'fwdbwd' },
  },
});
if (!['fwd', 'fwdbwd'].includes(a.mode)) throw new Error(`--mode ${a.mode}: fwd or fwdbwd`);
const shape = [Number(a.batch), Number(a.heads), Number(a.seq), Number(a.dim)];
const o = { dtype: a.dtype, device: 'cuda' };
const [q, k, v, g] = [1, 2, 3, 4].map((seed) => core.randn(shape, { ...o, seed }));
const opts = { isCausal: a.causal, backends: ['flash-cuda'], requiresGrad: a.mode === 'fwdbwd' };
cuda.synchronize();
const fwd = core.sdpaForward(q, k, v, opts);
if (a.mode === 'fwdbwd') {
  const grads = core.sdpaBackward(g, fwd);
  cuda.synchronize();
  for (const t of [grads.dq, grads.dk, grads.dv]) t.dispose();
}
cuda.synchronize();
console.log(`profile-call: flash-cuda ${a.mode} [${shape.join(', ')}] ${a.dtype}${a.causal ? ' causal' : ''} done`);
