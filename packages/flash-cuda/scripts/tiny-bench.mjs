#!/usr/bin/env node
// Device time of one small attention call, per tile configuration: L calls (each on its own K/V) captured
// into one CUDA graph with flashForward and a forced kernel (split-KV off), events around STEPS replays;
// per call = per replay / L. A replay queues the L kernels back to back, so this is the kernel's latency
// plus the graph's per-node cost, without the host. The default plan's pick is timed too ('auto').
// graph_bench_torch.py is the torch twin for the decode-like shape (Sq 1).
//
//   node packages/flash-cuda/scripts/tiny-bench.mjs [--json out.json]
import { writeFileSync } from 'node:fs';
import * as core from '@attn/core';
import * as cuda from '@attn/cuda';
import { flashCudaBackend, flashForward, planFor } from '@attn/flash-cuda';

const L = 32;
const STEPS = 200;
const SHAPES = [
  { name: 'decode-like', B: 1, H: 1, Sq: 1, Sk: 16, D: 64 },
  { name: 'tiny', B: 1, H: 1, Sq: 16, Sk: 16, D: 64 },
];
const o = { dtype: 'bfloat16', device: 'cuda' };
const start = new cuda.Event();
const end = new cuda.Event();

function replayUs(graph) {
  for (let i = 0; i < 10; i++) graph.replay();
  cuda.synchronize(0);
  start.record();
  for (let i = 0; i < STEPS; i++) graph.replay();
  end.record();
  end.synchronize();
  return (start.elapsedMs(end) * 1e3) / (STEPS * L);
}

const names = flashCudaBackend.buildInfo().kernelNames.filter((n) => n.startsWith('bf16_d64_'));
const rows = [];
for (const s of SHAPES) {
  const q = core.randn([s.B, s.H, s.Sq, s.D], { ...o, seed: 1 });
  const layers = Array.from({ length: L }, (_, l) => {
    const k = core.randn([s.B, s.H, s.Sk, s.D], { ...o, seed: 10 + l });
    const v = core.randn([s.B, s.H, s.Sk, s.D], { ...o, seed: 100 + l });
    return core.normalizeParams(q, k, v);
  });
  for (const kernel of ['auto', ...names]) {
    const opts = kernel === 'auto' ? {} : { kernel, numSplits: 1 };
    let us;
    let picked = kernel;
    try {
      if (kernel === 'auto') picked = planFor(layers[0]).kernel;
      const graph = cuda.captureGraph(() => layers.map((p) => flashForward(p, opts)));
      us = replayUs(graph);
      graph.dispose();
      for (const r of graph.result) {
        r.out.dispose();
        r.logsumexp.dispose();
      }
    } catch (e) {
      console.log(`${s.name} ${kernel}: cannot run (${e.message.split('\n')[0]})`);
      continue;
    }
    rows.push({ shape: s, kernel, picked, graphUsPerCall: us });
    console.log(`${s.name.padEnd(11)} ${kernel.padEnd(20)} ${picked.padEnd(20)} graph ${us.toFixed(2)} us/call`);
  }
}
const props = cuda.deviceProperties(0);
const out = { device: `${props.name} (${props.arch})`, layers: L, steps: STEPS, rows };
const json = process.argv.indexOf('--json');
if (json > 0) writeFileSync(process.argv[json + 1], JSON.stringify(out, null, 1));
