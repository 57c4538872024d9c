#!/usr/bin/env node
// Where the host time of a user's loop of small calls goes: `sdpa(q, k, v)` then `.dispose()` at the tiny
// shape (B 1, H 1, S 16, D 64, bf16), N calls under V8's sampling profiler (node:inspector), self time summed
// per function and printed, the largest first. Events around the same loop (unprofiled) give the per-call
// figure beside it, the figure's settling from a cold start, and the causal call's in alternation.
//
//   node packages/flash-cuda/scripts/host-profile.mjs [--json out.json] [--calls N]
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import * as core from '@attn/core';
import * as cuda from '@attn/cuda';
import '@attn/flash-cuda';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const CALLS = Number(arg('--calls', '200000'));
const o = { dtype: 'bfloat16', device: 'cuda' };
const q = core.randn([1, 1, 16, 64], { ...o, seed: 1 });
const k = core.randn([1, 1, 16, 64], { ...o, seed: 2 });
const v = core.randn([1, 1, 16, 64], { ...o, seed: 3 });
const opts = { backends: ['flash-cuda'] };
const causalOpts = { backends: ['flash-cuda'], isCausal: true };
const loop = (n, o = opts) => {
  for (let i = 0; i < n; i++) core.sdpa(q, k, v, o).dispose();
};
const start = new cuda.Event();
const end = new cuda.Event();
const timed = (n, o) => {
  start.record();
  loop(n, o);
  end.record();
  end.synchronize();
  return (start.elapsedMs(end) * 1e3) / n;
};

// From a cold start: loops of 1000 calls (attn bench --overhead's loop), how the figure settles.
const curve = Array.from({ length: 30 }, () => timed(1000, opts));
// Per call, events around back-to-back calls (as attn bench --overhead), after a warm-up; then the
// causal call, whose host path is the same, in alternation with it.
loop(20000);
cuda.synchronize(0);
const perCall = [];
for (let r = 0; r < 5; r++) perCall.push(timed(2000, opts));
const alternating = [];
for (let r = 0; r < 5; r++) alternating.push([timed(2000, opts), timed(2000, causalOpts)]);

const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 50 });
await session.post('Profiler.start');
loop(CALLS);
cuda.synchronize(0);
const { profile } = await session.post('Profiler.stop');
session.disconnect();

const bySelf = new Map();
const total = profile.samples.length;
const counts = new Map();
for (const id of profile.samples) counts.set(id, (counts.get(id) ?? 0) + 1);
for (const node of profile.nodes) {
  const c = counts.get(node.id) ?? 0;
  if (c === 0) continue;
  const f = node.callFrame;
  const where = f.url ? `${f.url.replace(/^.*\/(packages|node_modules)\//, '$1/')}:${f.lineNumber + 1}` : '(native)';
  const key = `${f.functionName || '(anonymous)'} ${where}`;
  bySelf.set(key, (bySelf.get(key) ?? 0) + c);
}
const top = [...bySelf.entries()].sort((a, b) => b[1] - a[1]).slice(0, 40);
const usPerCall = ((profile.endTime - profile.startTime) / CALLS).toFixed(2);
const f = (xs) => xs.map((x) => x.toFixed(2)).join(' ');
console.log(`cold start, loops of 1000: ${f(curve)} us/call`);
console.log(`events: ${f(perCall)} us/call; profiled loop ${usPerCall} us/call`);
console.log(
  `non-causal / causal alternating: ${alternating.map(([a, b]) => `${a.toFixed(2)}/${b.toFixed(2)}`).join(' ')}`,
);
for (const [key, c] of top) console.log(`${((100 * c) / total).toFixed(1).padStart(5)}%  ${key}`);
const json = process.argv.indexOf('--json');
if (json > 0)
  writeFileSync(
    process.argv[json + 1],
    JSON.stringify(
      {
        coldLoopsUs: curve,
        perCallUs: perCall,
        alternatingUs: alternating,
        calls: CALLS,
        top: top.map(([key, c]) => ({ key, share: c / total })),
      },
      null,
      1,
    ),
  );
