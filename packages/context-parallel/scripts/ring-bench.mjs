// Time per call of one attention call on 1 GPU (core's sdpaForward/sdpaBackward, the backend core
// selects) against the same call sharded over R GPUs by the ring (NcclRing + deviceMath), each timed
// with CUDA events around the call (the ring: per rank, from a barrier to the call's end; the
// slowest rank counts). Usage on a multi-GPU host: node scripts/ring-bench.mjs [R=2] [S=131072];
// prints one JSON line and writes it to $OUT/ring-bench.json when OUT is set.
import '@attn/cuda';
import '@attn/flash-cuda';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sdpaBackward, sdpaForward, zeros } from '@attn/core';
import { deviceCount, deviceProperties, emptyCache, Event } from '@attn/cuda';
import { launchRing } from './ring-launch.mjs';

const ranks = Number(process.argv[2] ?? 2);
const seq = Number(process.argv[3] ?? 131072);
const iters = Number(process.env.ATTN_CP_ITERS ?? 3);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const cases = [true, false].map((causal) => ({
  name: `${causal ? 'causal-zigzag' : 'full-zigzag'}-S${seq}`,
  seq,
  headsQ: 16,
  headsKV: 16,
  headDim: 128,
  causal,
  layout: 'zigzag',
  dtype: 'bfloat16',
  iters,
}));

function single(c) {
  const shape = [1, c.headsQ, c.seq, c.headDim];
  const [q, k, v, g] = [0, 1, 2, 3].map(() => zeros(shape, { dtype: c.dtype, device: 'cuda:0' }));
  const fwd = [];
  const all = [];
  for (let it = 0; it < iters + 1; it++) {
    const e = [0, 1, 2].map(() => new Event({ device: 0, timing: true }));
    e[0].record();
    const f = sdpaForward(q, k, v, { isCausal: c.causal, requiresGrad: true });
    e[1].record();
    const gr = sdpaBackward(g, f);
    e[2].record();
    e[2].synchronize();
    if (it > 0) {
      fwd.push(e[0].elapsedMs(e[1]));
      all.push(e[0].elapsedMs(e[2]));
    }
    for (const t of [f.out, f.logsumexp, gr.dq, gr.dk, gr.dv]) t.dispose();
    for (const x of e) x.dispose();
  }
  for (const t of [q, k, v, g]) t.dispose();
  emptyCache();
  return { backend: 'flash-cuda (core selects)', forwardMs: median(fwd), forwardBackwardMs: median(all) };
}

const report = { device: deviceProperties(0).name, gpus: deviceCount(), ranks, seq, iters, cases: [] };
for (const c of cases) report.cases.push({ case: c.name, oneGpu: single(c) });
const { results } = await launchRing(ranks, { mode: 'bench', cases }, 540_000);
for (const row of report.cases) {
  const mine = results.filter((r) => r.case === row.case);
  const fwd = Math.max(...mine.map((r) => median(r.times.forward)));
  const all = Math.max(...mine.map((r) => median(r.times.forwardBackward)));
  row.ring = { forwardMs: fwd, forwardBackwardMs: all, perRank: mine.map((r) => r.times) };
  row.efficiency = {
    forward: row.oneGpu.forwardMs / (ranks * fwd),
    forwardBackward: row.oneGpu.forwardBackwardMs / (ranks * all),
  };
}
const line = JSON.stringify(report);
console.log(line);
if (process.env.OUT) writeFileSync(join(process.env.OUT, 'ring-bench.json'), line);
