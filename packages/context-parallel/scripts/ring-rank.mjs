// One rank of a multi-GPU ring job: a child process pinned to GPU `ATTN_CP_RANK` (one process per
// GPU, README "Process model"), started by src/nccl/gpu.test.ts (check) or scripts/ring-bench.mjs
// (bench). Plain JavaScript over the packages' dist/, so a child needs nothing but node.
// The job (JSON in ATTN_CP_JOB): { dir, key, size, mode: 'check' | 'bench', cases: [...] }.
// - check: inputs from randn seeds (the same tensors in every process), the ring forward and backward
//   with NcclRing + deviceMath; each result chunk written as float64 to dir/<case>.<what>.r<rank>.bin.
// - bench: zero-filled shards made on the device (attention's time does not depend on the values),
//   warm-up, then `iters` timed calls between barriers; per rank the times in ms, reported on stdout.
import '@attn/cuda';
import '@attn/flash-cuda';
import '@attn/cutlass-memeff';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randn, zeros } from '@attn/core';
import { Event, synchronize } from '@attn/cuda';
import { FileRendezvous, ringBackward, ringForward, shardLayout, shardTensor } from '@attn/context-parallel';
import { deviceMath, NcclRing } from '@attn/context-parallel/nccl';

const job = JSON.parse(process.env.ATTN_CP_JOB);
const rank = Number(process.env.ATTN_CP_RANK);
const device = `cuda:${rank}`;

function shapes(c) {
  const B = c.batch ?? 1;
  return {
    q: [B, c.headsQ, c.seq, c.headDim],
    k: [B, c.headsKV, c.seq, c.headDim],
    v: [B, c.headsKV, c.seq, c.headDim],
  };
}

const ring = await NcclRing.create({
  rank,
  size: job.size,
  device: rank,
  rendezvous: new FileRendezvous(job.dir),
  key: job.key,
});
const math = deviceMath();

/** Every rank passes once both neighbours did: a tiny send/recv, waited on the host. */
async function barrier() {
  const t = zeros([1], { dtype: 'float32', device });
  for (let i = 0; i < job.size; i++) for (const r of await ring.sendRecv('kv', [t], [[1]])) r.dispose();
  t.dispose();
  synchronize(rank);
}

function options(c, layout) {
  return { layout, isCausal: c.causal, enableGqa: c.headsQ !== c.headsKV, math, backends: c.backends };
}

async function check(c) {
  const s = shapes(c);
  const layout = shardLayout(c.layout, c.seq, job.size);
  const full = {
    q: randn(s.q, { seed: c.seed, dtype: c.dtype, device }),
    k: randn(s.k, { seed: c.seed + 1, dtype: c.dtype, device }),
    v: randn(s.v, { seed: c.seed + 2, dtype: c.dtype, device }),
    g: randn(s.q, { seed: c.seed + 3, dtype: c.dtype, device }),
  };
  const mine = Object.fromEntries(Object.entries(full).map(([n, t]) => [n, shardTensor(t, layout)[rank]]));
  const opts = options(c, layout);
  const fwd = await ringForward(ring, mine, opts);
  const grads = await ringBackward(ring, mine, fwd, mine.g, opts);
  const results = { out: fwd.out, lse: fwd.logsumexp, dq: grads.dq, dk: grads.dk, dv: grads.dv };
  for (const [what, chunks] of Object.entries(results)) {
    chunks.forEach((t, i) => {
      const file = join(job.dir, `${c.name}.${what}.r${rank}.c${i}.bin`);
      writeFileSync(file, Buffer.from(t.toFloat64Array().buffer));
    });
  }
  for (const t of [...Object.values(full), ...Object.values(mine).flat(), ...Object.values(results).flat()])
    t.dispose();
  return { case: c.name, rank, stats: ring.stats };
}

async function bench(c) {
  const s = shapes(c);
  const layout = shardLayout(c.layout, c.seq, job.size);
  const mk = (shape) =>
    layout.chunksOf(rank).map((ch) => zeros([shape[0], shape[1], ch.length, shape[3]], { dtype: c.dtype, device }));
  const mine = { q: mk(s.q), k: mk(s.k), v: mk(s.v), g: mk(s.q) };
  const opts = options(c, layout);
  const times = { forward: [], forwardBackward: [] };
  for (let it = 0; it < c.iters + 1; it++) {
    await barrier();
    const t0 = new Event({ device: rank, timing: true }).record();
    const fwd = await ringForward(ring, mine, opts);
    const t1 = new Event({ device: rank, timing: true }).record();
    const grads = await ringBackward(ring, mine, fwd, mine.g, opts);
    const t2 = new Event({ device: rank, timing: true }).record();
    t2.synchronize();
    if (it > 0) {
      times.forward.push(t0.elapsedMs(t1));
      times.forwardBackward.push(t0.elapsedMs(t2));
    }
    for (const t of [...fwd.out, ...fwd.logsumexp, ...grads.dq, ...grads.dk, ...grads.dv]) t.dispose();
    for (const e of [t0, t1, t2]) e.dispose();
  }
  for (const t of Object.values(mine).flat()) t.dispose();
  return { case: c.name, rank, times };
}

const out = [];
for (const c of job.cases) out.push(job.mode === 'check' ? await check(c) : await bench(c));
ring.destroy();
console.log(`RESULT ${JSON.stringify(out)}`);
