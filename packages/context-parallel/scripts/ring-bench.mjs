// Scaling of one attention call: 1 GPU (core's sdpaForward + sdpaBackward, the backend core selects)
// against the same call sharded over R GPUs by the ring (NcclRing + deviceMath + the local backend),
// bf16, B 1, H 16, D 128, zigzag layout. Every call is timed with CUDA events around it (the ring: per
// rank, from a barrier to the call's end; the slowest rank counts), after one warm-up call at a small
// S that loads the kernels and sets up NCCL's channels. Per ring call it also reports, per rank, the
// compute stream's idle time while the driver waited on transfers (the communication not hidden),
// the transfers' own time on the communication stream, and the peak device memory.
// Usage on a multi-GPU host:
//   node scripts/ring-bench.mjs [--ranks 2,4] [--seq 131072,524288] [--mask causal|full|both]
//                               [--iters 3] [--one-gpu-iters 2] [--label NAME]
// prints one JSON line and writes it to $OUT/ring-bench-NAME.json when OUT is set.
import '@attn/cuda';
import '@attn/flash-cuda';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { sdpaBackward, sdpaForward, zeros } from '@attn/core';
import {
  deviceCount,
  deviceProperties,
  emptyCache,
  Event,
  memoryStats,
  resetPeakMemoryStats,
  synchronize,
} from '@attn/cuda';
import { launchRing } from './ring-launch.mjs';

const { values: args } = parseArgs({
  options: {
    ranks: { type: 'string', default: '2' },
    seq: { type: 'string', default: '131072' },
    mask: { type: 'string', default: 'both' },
    iters: { type: 'string', default: '3' },
    'one-gpu-iters': { type: 'string', default: '2' },
    label: { type: 'string', default: 'run' },
  },
});
const list = (s) => s.split(',').map(Number);
const rankCounts = list(args.ranks);
const seqs = list(args.seq);
const masks = { causal: [true], full: [false], both: [true, false] }[args.mask];
if (!masks) throw new Error(`--mask ${args.mask}: causal, full or both`);
const iters = Number(args.iters);
const oneGpuIters = Number(args['one-gpu-iters']);
const HEADS = 16;
const HEAD_DIM = 128;
const DTYPE = 'bfloat16';

/** The middle value (the mean of the two middle ones for an even count). */
function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function oneGpuCall(seq, causal) {
  const shape = [1, HEADS, seq, HEAD_DIM];
  const [q, k, v, g] = [0, 1, 2, 3].map(() => zeros(shape, { dtype: DTYPE, device: 'cuda:0' }));
  synchronize(0);
  resetPeakMemoryStats(0);
  const e = [0, 1, 2].map(() => new Event({ device: 0, timing: true }));
  e[0].record();
  const f = sdpaForward(q, k, v, { isCausal: causal, requiresGrad: true });
  e[1].record();
  const gr = sdpaBackward(g, f);
  e[2].record();
  e[2].synchronize();
  const row = {
    backend: f.backend,
    forwardMs: e[0].elapsedMs(e[1]),
    forwardBackwardMs: e[0].elapsedMs(e[2]),
    peakAllocatedBytes: memoryStats(0).peakAllocatedBytes,
  };
  for (const t of [f.out, f.logsumexp, gr.dq, gr.dk, gr.dv, q, k, v, g]) t.dispose();
  for (const x of e) x.dispose();
  emptyCache();
  return row;
}

function oneGpu(seq, causal) {
  oneGpuCall(Math.min(seq, 8192), causal); // warm-up
  const calls = Array.from({ length: oneGpuIters }, () => oneGpuCall(seq, causal));
  return {
    backend: calls[0].backend,
    forwardMs: median(calls.map((c) => c.forwardMs)),
    forwardBackwardMs: median(calls.map((c) => c.forwardBackwardMs)),
    calls,
  };
}

const started = Date.now();
const report = {
  device: deviceProperties(0).name,
  deviceMemoryBytes: deviceProperties(0).totalMemoryBytes,
  gpus: deviceCount(),
  heads: HEADS,
  headDim: HEAD_DIM,
  dtype: DTYPE,
  layout: 'zigzag',
  iters,
  oneGpuIters,
  rows: [],
};
const save = () => {
  const line = JSON.stringify(report);
  if (process.env.OUT) writeFileSync(join(process.env.OUT, `ring-bench-${args.label}.json`), line);
  return line;
};
for (const seq of seqs) {
  for (const causal of masks) {
    const one = oneGpu(seq, causal);
    const name = `${causal ? 'causal' : 'full'}-zigzag-S${seq}`;
    console.error(`${name}: 1 GPU fwd ${one.forwardMs.toFixed(1)} ms, fwd+bwd ${one.forwardBackwardMs.toFixed(1)} ms`);
    for (const ranks of rankCounts) {
      const c = {
        name,
        seq,
        headsQ: HEADS,
        headsKV: HEADS,
        headDim: HEAD_DIM,
        causal,
        layout: 'zigzag',
        dtype: DTYPE,
        iters,
      };
      const { results } = await launchRing(ranks, { mode: 'bench', cases: [c] }, { timeoutMs: 540_000 });
      // Per call, the slowest rank; then the median over calls.
      const perCall = (f) => Array.from({ length: iters }, (_, i) => Math.max(...results.map((r) => f(r.calls[i]))));
      const fwd = median(perCall((x) => x.forwardMs));
      const all = median(perCall((x) => x.forwardBackwardMs));
      const row = {
        case: name,
        seq,
        causal,
        ranks,
        oneGpu: one,
        ring: {
          forwardMs: fwd,
          forwardBackwardMs: all,
          forwardCallsMs: perCall((x) => x.forwardMs),
          forwardBackwardCallsMs: perCall((x) => x.forwardBackwardMs),
          maxIdleWaitingMs: {
            forward: median(perCall((x) => x.idleWaitingMs.forward)),
            backward: median(perCall((x) => x.idleWaitingMs.backward)),
          },
          perRank: results.map((r) => ({ rank: r.rank, calls: r.calls })),
        },
        efficiency: {
          forward: one.forwardMs / (ranks * fwd),
          forwardBackward: one.forwardBackwardMs / (ranks * all),
        },
      };
      report.rows.push(row);
      console.error(
        `${name} R${ranks}: fwd ${fwd.toFixed(1)} ms (${(100 * row.efficiency.forward).toFixed(1)}%), ` +
          `fwd+bwd ${all.toFixed(1)} ms (${(100 * row.efficiency.forwardBackward).toFixed(1)}%), idle waiting ` +
          `${row.ring.maxIdleWaitingMs.forward.toFixed(2)} + ${row.ring.maxIdleWaitingMs.backward.toFixed(2)} ms ` +
          `[${((Date.now() - started) / 1000).toFixed(0)} s]`,
      );
      save();
    }
  }
}
console.log(save());
