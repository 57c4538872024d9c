#!/usr/bin/env node
// Where a decode call's time goes (B=8, Hq=32, Hk=8, Sq=1, Sk=8192, D=128, bf16): `attn bench` times one
// call between two events after a sync (host path + kernels, caches cold from rotated inputs), gpu-check a
// loop of calls on one input (host hidden, caches warm). This prints, per split count and tile:
//   host   the JS call's wall time up to its return (every launch queued), device idle before it
//   single one call between events after a sync, rotating over 4 input sets (what the CLI reports)
//   loop   back-to-back calls on one input set, per call (what gpu-check reports)
// With --ncu it only makes 60 default calls, for `ncu --metrics gpu__time_duration.sum` (kernel times).
//
//   node packages/flash-cuda/scripts/decode-probe.mjs [--ncu] [--json out.json]
import { writeFileSync } from 'node:fs';
import * as core from '@attn/core';
import * as cuda from '@attn/cuda';
import { flashForward, planFor } from '@attn/flash-cuda';
import { timeCall } from './lib/gpu-check-common.mjs';

const [B, Hq, Hk, Sk, D] = [8, 32, 8, 8192, 128];
const o = { dtype: 'bfloat16', device: 'cuda' };
// One random set (core.randn fills on the host: ~10 s per K or V here), three device copies of it: the
// rotation is about caches, not values.
const first = {
  q: core.randn([B, Hq, 1, D], { ...o, seed: 1 }),
  k: core.randn([B, Hk, Sk, D], { ...o, seed: 2 }),
  v: core.randn([B, Hk, Sk, D], { ...o, seed: 3 }),
};
const copyOf = (t) => {
  const c = core.empty(t.shape, o);
  cuda.copyDeviceToDevice(c.storage, 0, t.storage, 0, t.storage.bytes);
  return c;
};
const sets = [first, ...Array.from({ length: 3 }, () => ({ q: copyOf(first.q), k: copyOf(first.k), v: copyOf(first.v) }))].map(
  ({ q, k, v }) => core.normalizeParams(q, k, v, { enableGqa: true }),
);
const call = (p, opts) => {
  const r = flashForward(p, opts);
  return () => {
    r.out.dispose();
    r.logsumexp.dispose();
  };
};

if (process.argv.includes('--ncu')) {
  for (let i = 0; i < 60; i++) call(sets[i % 4], {})();
  cuda.synchronize(0);
  process.exit(0);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const start = new cuda.Event();
const end = new cuda.Event();

function single(opts, n = 60) {
  const host = [];
  const dev = [];
  for (let i = 0; i < 10 + n; i++) {
    cuda.synchronize(0);
    start.record();
    const t0 = performance.now();
    const done = call(sets[i % 4], opts);
    const t1 = performance.now();
    end.record();
    end.synchronize();
    done();
    if (i >= 10) {
      host.push((t1 - t0) * 1e3);
      dev.push(start.elapsedMs(end) * 1e3);
    }
  }
  return { hostUs: median(host), singleUs: median(dev) };
}

const rows = [];
const variants = [{}];
for (const numSplits of [1, 2, 3, 4, 6, 8, 12, 16]) variants.push({ numSplits });
for (const kernel of ['bf16_d128_small', 'bf16_d128_lean_small']) for (const numSplits of [4, 8]) variants.push({ kernel, numSplits });
for (const opts of variants) {
  const plan = planFor(sets[0], opts);
  const s = single(opts);
  const row = { ...opts, kernel: plan.kernel, splits: plan.numSplits, ...s, loopUs: timeCall(() => call(sets[0], opts)(), 300, { warmup: 10 }).gpuMs * 1e3 };
  row.gbsSingle = (2 * B * Hk * Sk * D * 2) / (row.singleUs * 1e-6) / 1e9;
  rows.push(row);
  console.log(
    `${JSON.stringify(opts).padEnd(48)} ${plan.kernel.padEnd(22)} splits ${String(plan.numSplits).padStart(2)}: ` +
      `host ${s.hostUs.toFixed(1)} us, single ${s.singleUs.toFixed(1)} us (${row.gbsSingle.toFixed(0)} GB/s), loop ${row.loopUs.toFixed(1)} us`,
  );
}
const json = process.argv.indexOf('--json');
if (json > 0) writeFileSync(process.argv[json + 1], JSON.stringify(rows, null, 1));
