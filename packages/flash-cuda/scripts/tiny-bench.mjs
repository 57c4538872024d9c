#!/usr/bin/env node
// Device time of one attention call, per tile configuration: L calls (the small shapes each on its own K/V)
// captured into one CUDA graph with flashForward and a forced kernel (the plan's split count for it), events
// around STEPS replays; per call = per replay / L. A replay queues the kernels back to back, so this is the
// kernels' latency plus the graph's per-node cost, without the host. The default plan's pick is timed too
// ('auto'). tiny_bench_torch.py is the torch twin of the small shapes. The D 64 decode shape (its K/V filled
// on the device, one set shared by the calls: 134 MB, past the L2) tells whether a short-query tile that
// helps small calls costs decode anything.
//
//   node packages/flash-cuda/scripts/tiny-bench.mjs [--json out.json]
import { writeFileSync } from 'node:fs';
import * as core from '@attn/core';
import * as cuda from '@attn/cuda';
import { flashCudaBackend, flashForward, planFor } from '@attn/flash-cuda';

const L = 32;
const STEPS = 200;
const SHAPES = [
  { name: 'decode-like', B: 1, H: 1, Hk: 1, Sq: 1, Sk: 16, D: 64 },
  { name: 'tiny', B: 1, H: 1, Hk: 1, Sq: 16, Sk: 16, D: 64 },
  { name: 'decode-d64', B: 8, H: 32, Hk: 8, Sq: 1, Sk: 8192, D: 64, shared: true },
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
  const filled = () => {
    const t = core.empty([s.B, s.Hk, s.Sk, s.D], o);
    cuda.fill(t.storage, 0, t.storage.bytes, 0x3c); // bf16 0x3c3c: 0.0115, finite
    return t;
  };
  const shared = s.shared ? [filled(), filled()] : null;
  const layers = Array.from({ length: L }, (_, l) => {
    const [k, v] = shared ?? [
      core.randn([s.B, s.Hk, s.Sk, s.D], { ...o, seed: 10 + l }),
      core.randn([s.B, s.Hk, s.Sk, s.D], { ...o, seed: 100 + l }),
    ];
    return core.normalizeParams(q, k, v, { enableGqa: s.H !== s.Hk });
  });
  for (const kernel of ['auto', ...names]) {
    const opts = kernel === 'auto' ? {} : { kernel };
    let us;
    let picked = kernel;
    try {
      const plan = planFor(layers[0], opts);
      picked = `${plan.kernel} x${plan.numSplits}`;
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
    console.log(`${s.name.padEnd(11)} ${kernel.padEnd(20)} ${picked.padEnd(24)} graph ${us.toFixed(2)} us/call`);
  }
}
const props = cuda.deviceProperties(0);
const out = { device: `${props.name} (${props.arch})`, layers: L, steps: STEPS, rows };
const json = process.argv.indexOf('--json');
if (json > 0) writeFileSync(process.argv[json + 1], JSON.stringify(out, null, 1));
