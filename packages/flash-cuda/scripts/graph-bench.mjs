#!/usr/bin/env node
// Per-call cost of decode attention, eager and replayed from a CUDA graph: L layers' calls (each on its
// own K/V) captured into one graph, replays timed with events around a loop, the same way as
// graph_bench_torch.py times torch's SDPA eagerly and under torch.cuda.graphs (run both in one GPU run).
//   eager  events around STEPS x L back-to-back calls (each output disposed, as a user's loop does)
//   graph  events around STEPS replays of the L-call graph; per call = per replay / L
//   host   wall time of the loop up to its last return (replay() calls only queue one launch each)
// Forms: dense decode sdpa (q [B, Hq, 1, D]), and varlen decode with cuSeqlensQ/K and sequsedK on the
// device (eager validation reads them back each call; a graph reads them on the device at replay).
//
//   node packages/flash-cuda/scripts/graph-bench.mjs [--json out.json]
import { writeFileSync } from 'node:fs';
import * as core from '@attn/core';
import * as cuda from '@attn/cuda';
import { flashForward } from '@attn/flash-cuda';

const L = 32;
const STEPS = 50;
const SHAPES = [
  { name: 'tiny', B: 1, Hq: 1, Hk: 1, Sk: 16, D: 64 },
  { name: 'decode', B: 8, Hq: 32, Hk: 8, Sk: 512, D: 128 },
];
const o = { dtype: 'bfloat16', device: 'cuda' };
const start = new cuda.Event();
const end = new cuda.Event();

/** Device µs per call and host µs per call of `steps` runs of `step` (each `calls` attention calls). */
function time(step, calls, steps = STEPS) {
  for (let i = 0; i < 5; i++) step();
  cuda.synchronize(0);
  start.record();
  const t0 = performance.now();
  for (let i = 0; i < steps; i++) step();
  const t1 = performance.now();
  end.record();
  end.synchronize();
  return {
    deviceUsPerCall: (start.elapsedMs(end) * 1e3) / (steps * calls),
    hostUsPerCall: ((t1 - t0) * 1e3) / (steps * calls),
  };
}

/** A device copy of t (core.randn fills on the host: one random set, copied per layer). */
function copyOf(t) {
  const c = core.empty(t.shape, o);
  cuda.copyDeviceToDevice(c.storage, 0, t.storage, 0, t.storage.bytes);
  return c;
}

function layers({ B, Hq, Hk, Sk, D }) {
  const ls = [];
  const k0 = core.randn([B * Sk, Hk, D], { ...o, seed: 100 });
  const v0 = core.randn([B * Sk, Hk, D], { ...o, seed: 200 });
  for (let l = 0; l < L; l++) {
    const [k, v] = l === 0 ? [k0, v0] : [copyOf(k0), copyOf(v0)];
    ls.push({ k, v, k4: k.reshape([B, Sk, Hk, D]).transpose(1, 2), v4: v.reshape([B, Sk, Hk, D]).transpose(1, 2) });
  }
  const q3 = core.randn([B, Hq, D], { ...o, seed: 1 });
  const q4 = q3.reshape([B, Hq, 1, D]);
  const i32 = (xs) => core.tensor(xs, [xs.length], { dtype: 'int32', device: 'cuda' });
  const cuQ = i32(Array.from({ length: B + 1 }, (_, b) => b));
  const cuK = i32(Array.from({ length: B + 1 }, (_, b) => b * Sk));
  const used = i32(Array.from({ length: B }, (_, b) => Sk - (b % 3)));
  return { ls, q3, q4, cuQ, cuK, used };
}

const rows = [];
const props = cuda.deviceProperties(0);
for (const shape of SHAPES) {
  const { ls, q3, q4, cuQ, cuK, used } = layers(shape);
  const forms = {
    dense: (l) => core.sdpa(q4, l.k4, l.v4, { enableGqa: true, backends: ['flash-cuda'] }),
    varlen: (l) =>
      core.sdpaVarlen(q3, l.k, l.v, {
        cuSeqlensQ: cuQ,
        cuSeqlensK: cuK,
        maxSeqlenQ: 1,
        maxSeqlenK: shape.Sk,
        sequsedK: used,
        enableGqa: true,
        backends: ['flash-cuda'],
      }).out,
  };
  // The dense call with split-KV off (params validated once, flash-cuda called directly): one kernel per
  // call, to tell the kernels' time from the graph's per-node cost.
  for (const l of ls) l.params = core.normalizeParams(q4, l.k4, l.v4, { enableGqa: true });
  forms['dense 1 split'] = (l) => {
    const r = flashForward(l.params, { numSplits: 1 });
    r.logsumexp.dispose();
    return r.out;
  };
  for (const [form, call] of Object.entries(forms)) {
    const eager = time(() => {
      for (const l of ls) call(l).dispose();
    }, L);
    const graph = cuda.captureGraph(() => ls.map((l) => call(l)));
    const replay = time(() => graph.replay(), L);
    const nodesPerCall = graph.nodeCount / L;
    const row = { shape, form, layers: L, steps: STEPS, eager, graph: replay, nodesPerCall };
    rows.push(row);
    console.log(
      `${shape.name.padEnd(7)} ${form.padEnd(13)} eager ${eager.deviceUsPerCall.toFixed(2)} us/call (host ${eager.hostUsPerCall.toFixed(2)}), ` +
        `graph ${replay.deviceUsPerCall.toFixed(2)} us/call (host ${replay.hostUsPerCall.toFixed(3)} us/call, ${nodesPerCall} nodes/call)`,
    );
    graph.dispose();
    for (const t of graph.result) t.dispose();
  }
}
const out = { device: `${props.name} (${props.arch})`, rows };
const json = process.argv.indexOf('--json');
if (json > 0) writeFileSync(process.argv[json + 1], JSON.stringify(out, null, 1));
