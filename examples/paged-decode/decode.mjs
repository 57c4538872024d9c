#!/usr/bin/env node
// A decode loop over a paged KV cache, the way an LLM server runs attention: every step, each of L
// layers appends one new token per sequence to its cache pages (kNew / vNew, rotary on q and kNew) and
// attends over the sequence so far, all in one sdpaKvCache call. The weights are random (attention
// alone is timed); the shapes are a 7B-class model's (32 query heads, 8 KV heads, head dim 128).
//
// It prints tokens per second for attention alone:
//   eager   each step's L calls issued one by one (what a plain loop pays, host work included);
//   graph   (CUDA) one step's L calls captured once with captureGraph and replayed every step; the
//           kernels read the lengths and the block table on the device, so one capture serves every
//           step: the host only writes the new lengths before each replay.
// With --check, the first step is also run on the reference backend and the outputs compared.
//
//   node examples/paged-decode/decode.mjs [--device cpu|cuda] [--layers 32] [--batch 8] [--context 4096]
//        [--steps 32] [--block 64] [--dtype bfloat16|float16|float32] [--check] [--smoke]
// (GPU defaults shown; on the CPU: 4 layers, batch 4, context 1024, 8 steps, float32.)
// --smoke: a few tiny steps on the CPU with --check (the package's test).
/* global console, performance */
import { parseArgs } from 'node:util';
import * as core from '@attn/core';
import '@attn/cpu';

const { values: args } = parseArgs({
  options: {
    device: { type: 'string', default: 'cpu' },
    layers: { type: 'string' },
    batch: { type: 'string' },
    context: { type: 'string' },
    steps: { type: 'string' },
    block: { type: 'string', default: '64' },
    dtype: { type: 'string' },
    check: { type: 'boolean', default: false },
    smoke: { type: 'boolean', default: false },
  },
});
const smoke = args.smoke;
const device = smoke ? 'cpu' : args.device;
const int = (s, name) => {
  const n = Number(s);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got ${s}`);
  return n;
};
// Defaults: a 7B-class decode on a GPU; a smaller one on the CPU, which runs it about 100x slower.
const gpu = device !== 'cpu';
const L = smoke ? 2 : int(args.layers ?? (gpu ? '32' : '4'), 'layers');
const B = smoke ? 3 : int(args.batch ?? (gpu ? '8' : '4'), 'batch');
const context = smoke ? 70 : int(args.context ?? (gpu ? '4096' : '1024'), 'context');
const steps = smoke ? 3 : int(args.steps ?? (gpu ? '32' : '8'), 'steps');
const blockSize = smoke ? 16 : int(args.block, 'block');
const dtype = args.dtype ?? (device === 'cpu' ? 'float32' : 'bfloat16');
const check = smoke || args.check;
const [Hq, Hk, D] = smoke ? [4, 2, 32] : [32, 8, 128];

let cuda = null;
if (device !== 'cpu') {
  cuda = await import('@attn/cuda');
  const a = cuda.availability();
  if (!a.ok) throw new Error(`--device ${device}: ${a.reason}`);
  // The fast path; without it the calls run on cuda-math (the banner says which backend ran).
  await import('@attn/flash-cuda').catch((e) =>
    console.warn(`@attn/flash-cuda not loaded (${e.message}): the reference backend runs`),
  );
}
const o = { dtype, device };
const i32 = (xs, shape) => core.tensor(Int32Array.from(xs), shape ?? [xs.length], { dtype: 'int32', device });

// Ragged sequences: row b starts with context - (a few tokens) keys and grows by one per step.
const start = Array.from({ length: B }, (_, b) => context - ((b * 7) % Math.max(1, Math.floor(context / 8))));
// Room for the check's step, one warm-up step each for eager and graph, and the timed steps.
const capacity = Math.max(...start) + steps + 3;
const blocksPerSeq = Math.ceil(capacity / blockSize);
const numBlocks = B * blocksPerSeq;
// One block table for every layer (as servers keep it: per sequence), its blocks shuffled over the pool.
const order = Array.from({ length: numBlocks }, (_, i) => i);
let seed = 12345;
for (let i = order.length - 1; i > 0; i--) {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  const j = seed % (i + 1);
  [order[i], order[j]] = [order[j], order[i]];
}
const blockTable = i32(order, [B, blocksPerSeq]);
const lengths = Int32Array.from(start);
const cacheSeqlens = i32(lengths);

/** Writes the host lengths into the device (or host) tensor the calls read. */
function writeLengths() {
  if (cuda) cuda.copyHostToDevice(cacheSeqlens.storage, cacheSeqlens.offset * 4, new Uint8Array(lengths.buffer));
  else cacheSeqlens.storage.set(lengths, cacheSeqlens.offset);
}

// Rotary tables [capacity, D / 2] (GPT-NeoX halves), base 10000.
const half = D / 2;
const cos = new Float32Array(capacity * half);
const sin = new Float32Array(capacity * half);
for (let p = 0; p < capacity; p++) {
  for (let i = 0; i < half; i++) {
    const a = p / 10000 ** ((2 * i) / D);
    cos[p * half + i] = Math.cos(a);
    sin[p * half + i] = Math.sin(a);
  }
}
const rotaryCos = core.tensor(cos, [capacity, half], o);
const rotarySin = core.tensor(sin, [capacity, half], o);

const elementBytes = dtype === 'float32' ? 4 : 2;
/** Copies n elements of src from element srcAt into dst at element dstAt (same dtype and device). */
function copyElements(dst, dstAt, src, srcAt, n) {
  if (cuda)
    cuda.copyDeviceToDevice(
      dst.storage,
      (dst.offset + dstAt) * elementBytes,
      src.storage,
      (src.offset + srcAt) * elementBytes,
      n * elementBytes,
    );
  else dst.storage.set(src.storage.subarray(src.offset + srcAt, src.offset + srcAt + n), dst.offset + dstAt);
}
/**
 * A pool [numBlocks, blockSize, Hk, D] of random keys: a few random blocks repeated over the pool. A
 * random fill of every pool would draw billions of numbers on the host at the GPU defaults; for timing
 * attention, repeated keys are as good as fresh ones.
 */
function randomPool(seed) {
  const perBlock = blockSize * Hk * D;
  const chunkBlocks = Math.min(numBlocks, 8);
  const chunk = core.randn([chunkBlocks, blockSize, Hk, D], { ...o, seed });
  const pool = core.empty([numBlocks, blockSize, Hk, D], o);
  for (let blk = 0; blk < numBlocks; blk += chunkBlocks) {
    copyElements(pool, blk * perBlock, chunk, 0, Math.min(chunkBlocks, numBlocks - blk) * perBlock);
  }
  chunk.dispose();
  return pool;
}

// Per layer: the K/V pools (the prompt's keys), this step's q, kNew, vNew.
const layers = Array.from({ length: L }, (_, l) => ({
  kPool: randomPool(1000 + l),
  vPool: randomPool(2000 + l),
  q: core.randn([B, 1, Hq, D], { ...o, seed: 3000 + l }),
  kNew: core.randn([B, 1, Hk, D], { ...o, seed: 4000 + l }),
  vNew: core.randn([B, 1, Hk, D], { ...o, seed: 5000 + l }),
}));

const callOpts = (l, backends) => ({
  cacheSeqlens,
  kNew: l.kNew,
  vNew: l.vNew,
  rotaryCos,
  rotarySin,
  blockTable,
  isCausal: true,
  enableGqa: true,
  ...(backends ? { backends } : {}),
});
const attend = (l, backends) => core.sdpaKvCache(l.q, l.kPool, l.vPool, callOpts(l, backends));

const first = attend(layers[0]);
console.log(
  `paged decode: ${L} layers, B ${B}, Hq ${Hq}, Hk ${Hk}, D ${D}, ${dtype} on ${device}, block ${blockSize}, ` +
    `context ${Math.min(...start)}-${Math.max(...start)} keys, backend ${first.backend}`,
);

if (check) {
  // The same step on the reference backend: it appends the same new keys at the same positions (the pool
  // is unchanged by the repeat) and attends over the same cache.
  const reference = device === 'cpu' ? 'cpu-math' : 'cuda-math';
  const ref = attend(layers[0], [reference]);
  const a = first.out.toFloat32Array();
  const b = ref.out.toFloat32Array();
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  const bound = dtype === 'float32' ? 1e-4 : dtype === 'float16' ? 5e-3 : 3e-2;
  console.log(
    `check: ${first.backend} against ${reference}, max |difference| ${worst.toExponential(2)} (bound ${bound})`,
  );
  if (!(worst <= bound)) throw new Error(`check failed: ${worst} > ${bound}`);
  ref.out.dispose();
  ref.logsumexp.dispose();
}
first.out.dispose();
first.logsumexp.dispose();

/** One decode step of every layer: returns the outputs (the caller disposes or keeps them). */
function step() {
  const outs = [];
  for (const l of layers) {
    const r = attend(l);
    r.logsumexp.dispose();
    outs.push(r.out);
  }
  return outs;
}
const advance = () => {
  for (let b = 0; b < B; b++) lengths[b] += 1;
  writeLengths();
};

/** Seconds for `n` runs of fn, on the device's clock where there is one. */
function timed(n, fn) {
  if (!cuda) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) fn();
    return (performance.now() - t0) / 1e3;
  }
  const e0 = new cuda.Event();
  const e1 = new cuda.Event();
  cuda.synchronize(0);
  e0.record();
  for (let i = 0; i < n; i++) fn();
  e1.record();
  e1.synchronize();
  return e0.elapsedMs(e1) / 1e3;
}

const report = (name, seconds, n) => {
  const tokens = B * n;
  console.log(
    `${name.padEnd(6)} ${(tokens / seconds).toFixed(0).padStart(9)} tokens/s  ` +
      `${((seconds / (n * L)) * 1e6).toFixed(1).padStart(8)} us per attention call  (${n} steps x ${L} layers)`,
  );
};

// Eager: the lengths advance on the host between steps, as a server's loop does. The timed steps are
// split between eager and graph, each after one untimed warm-up step.
const eagerSteps = Math.max(1, Math.floor(steps / 2));
const eagerStep = () => {
  for (const out of step()) out.dispose();
  advance();
};
eagerStep(); // warm-up: plans and allocator pools
report('eager', timed(eagerSteps, eagerStep), eagerSteps);

if (cuda) {
  const graph = cuda.captureGraph(() => step());
  const graphSteps = Math.max(1, steps - eagerSteps);
  const replayStep = () => {
    graph.replay();
    advance();
  };
  replayStep(); // warm-up
  report('graph', timed(graphSteps, replayStep), graphSteps);
  graph.dispose();
} else {
  console.log('graph  (CUDA only: captureGraph records CUDA streams)');
}
