// One rank of a multi-GPU ring job: a child process pinned to GPU `rank` (one process per
// GPU, README "Process model"), started by src/nccl/gpu.test.ts (check, fail, stall) or
// scripts/ring-bench.mjs (bench). Plain JavaScript over the packages' dist/, so a child needs
// nothing but node. Arguments: the rank, then the job as JSON: { dir, key, size, mode, cases, ... }.
// - check: inputs from randn seeds (the same tensors in every process), the ring forward and backward
//   with NcclRing + deviceMath; each result chunk written as float64 to dir/<case>.<what>.r<rank>.bin.
// - bench: zero-filled shards made on the device (attention's time does not depend on the values),
//   one warm-up call at `warmupSeq`, then `iters` timed calls between barriers; per rank and call the
//   time, the compute-stream time spent waiting on transfers (the trace), the transfers' own time on
//   the communication stream, and the peak device memory.
// - fail: rank `failRank` runs its local calls restricted to a backend that does not exist, so its
//   first step throws after its first transfer was posted; the job must fail with that error.
// - stall: rank `stallRank` joins the communicator and then never calls the ring; the others must
//   give up at their transfer deadline (`transferTimeoutMs`) with ATTN_CP_TIMEOUT.
// A rank that fails prints its error, aborts its communicator and exits 1.
import '@attn/cuda';
import '@attn/flash-cuda';
import '@attn/cutlass-memeff';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randn, zeros } from '@attn/core';
import { Event, memoryStats, resetPeakMemoryStats, synchronize } from '@attn/cuda';
import { FileRendezvous, ringBackward, ringForward, shardLayout, shardTensor } from '@attn/context-parallel';
import { deviceMath, NcclRing } from '@attn/context-parallel/nccl';

const rank = Number(process.argv[2]);
const job = JSON.parse(process.argv[3]);
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
  transferTimeoutMs: job.transferTimeoutMs,
  profile: job.mode === 'bench',
});
const math = deviceMath();

/** Every rank passes once both neighbours did: a tiny send/recv, waited on the host. */
async function barrier() {
  const t = zeros([1], { dtype: 'float32', device });
  for (let i = 0; i < job.size; i++) for (const r of await ring.sendRecv('kv', [t], [[1]])) r.dispose();
  t.dispose();
  synchronize(rank);
}

function options(c, layout, extra = {}) {
  return { layout, isCausal: c.causal, enableGqa: c.headsQ !== c.headsKV, math, backends: c.backends, ...extra };
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

/** A RingTrace recording compute-stream events where the driver waits and resumes. */
function eventTrace() {
  const waits = [];
  let open = null;
  return {
    trace: {
      waiting: (channel, step) => (open = { channel, step, at: new Event({ device: rank, timing: true }).record() }),
      resumed: () => {
        waits.push({ ...open, until: new Event({ device: rank, timing: true }).record() });
        open = null;
      },
    },
    /** Total ms the compute stream idled in the waits; frees the events. Call after a synchronize. */
    idleMs() {
      let ms = 0;
      for (const w of waits.splice(0)) {
        ms += w.at.elapsedMs(w.until);
        w.at.dispose();
        w.until.dispose();
      }
      return ms;
    },
  };
}

async function timedCall(c, seq, iteration) {
  const s = shapes({ ...c, seq });
  const layout = shardLayout(c.layout, seq, job.size);
  const mk = (shape) =>
    layout.chunksOf(rank).map((ch) => zeros([shape[0], shape[1], ch.length, shape[3]], { dtype: c.dtype, device }));
  const mine = { q: mk(s.q), k: mk(s.k), v: mk(s.v), g: mk(s.q) };
  const fwdTrace = eventTrace();
  const bwdTrace = eventTrace();
  await barrier();
  ring.transferTimes(); // the barrier's
  resetPeakMemoryStats(rank);
  const t0 = new Event({ device: rank, timing: true }).record();
  const fwd = await ringForward(ring, mine, options(c, layout, { trace: fwdTrace.trace }));
  const t1 = new Event({ device: rank, timing: true }).record();
  const grads = await ringBackward(ring, mine, fwd, mine.g, options(c, layout, { trace: bwdTrace.trace }));
  const t2 = new Event({ device: rank, timing: true }).record();
  t2.synchronize();
  const transfers = ring.transferTimes();
  const sum = (ch, f) => transfers.filter((t) => t.channel === ch).reduce((a, t) => a + f(t), 0);
  const row = {
    iteration,
    forwardMs: t0.elapsedMs(t1),
    forwardBackwardMs: t0.elapsedMs(t2),
    idleWaitingMs: { forward: fwdTrace.idleMs(), backward: bwdTrace.idleMs() },
    transfers: {
      kv: { count: sum('kv', () => 1), ms: sum('kv', (t) => t.ms), sentBytes: sum('kv', (t) => t.sentBytes) },
      grad: { count: sum('grad', () => 1), ms: sum('grad', (t) => t.ms), sentBytes: sum('grad', (t) => t.sentBytes) },
    },
    peakAllocatedBytes: memoryStats(rank).peakAllocatedBytes,
  };
  for (const t of [...fwd.out, ...fwd.logsumexp, ...grads.dq, ...grads.dk, ...grads.dv]) t.dispose();
  for (const e of [t0, t1, t2]) e.dispose();
  for (const t of Object.values(mine).flat()) t.dispose();
  return row;
}

async function bench(c) {
  await timedCall(c, c.warmupSeq ?? Math.min(c.seq, 8192 * job.size), -1);
  const calls = [];
  for (let it = 0; it < c.iters; it++) calls.push(await timedCall(c, c.seq, it));
  return { case: c.name, rank, calls };
}

/** fail: rank failRank's local calls name a backend that does not exist. */
async function fail(c) {
  const s = shapes(c);
  const layout = shardLayout(c.layout, c.seq, job.size);
  const mine = Object.fromEntries(
    ['q', 'k', 'v'].map((n) => [n, shardTensor(randn(s[n], { seed: c.seed, dtype: c.dtype, device }), layout)[rank]]),
  );
  const backends = rank === job.failRank ? ['no-such-backend'] : c.backends;
  await ringForward(ring, mine, options({ ...c, backends }, layout));
  return { case: c.name, rank };
}

/** stall: rank stallRank never calls the ring; the others call it and must time out. */
async function stall(c) {
  if (rank === job.stallRank) await new Promise(() => setInterval(() => undefined, 1_000));
  return fail(c);
}

const MODES = { check, bench, fail, stall };
try {
  const out = [];
  for (const c of job.cases) out.push(await MODES[job.mode](c));
  await ring.destroy();
  console.log(`RESULT ${JSON.stringify(out)}`);
} catch (e) {
  console.error(`rank ${rank} failed: ${e?.code ?? ''} ${e?.stack ?? e}`);
  if (e?.cause) console.error(`cause: ${e.cause?.stack ?? e.cause}`);
  ring.abort();
  process.exit(1);
}
