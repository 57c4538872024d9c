#!/usr/bin/env node
// Short calls, every forward tile: for each shape of a grid of short queries (Sq 1..256, Sk 16..4k, D 64/128,
// bf16/fp16, causal or not, B*H 1, 16 and 256), the plan's pick ('auto') and every tile configuration of the
// call's dtype and head dim forced by name (each with the plan's split count for it), timed two ways with CUDA
// events: a graph of L captured calls replayed (the kernels back to back, no host) and an eager loop of
// back-to-back flashForward calls, each disposing its outputs (what a user's loop pays). Each figure is the
// median of three samples (of up to 8 replays / 100 calls, fewer for long calls). Inputs are rotated over enough
// sets that small shapes do not all sit in the L2 while big ones stay affordable. They are a finite constant
// filled on the device (cheap for thousands of short shapes), or with `--inputs random` normal samples: with a
// constant no row's running max ever moves, which a kernel may turn into less work than real data gives.
//
//   node packages/flash-cuda/scripts/short-call-sweep.mjs [--json out.json] [--sq 1,16] [--sk 16] [--dim 64]
//     [--dtype bfloat16] [--bh 1x1] [--causal 0,1] [--inputs constant|random]
import { writeFileSync } from 'node:fs';
import * as core from '@attn/core';
import * as cuda from '@attn/cuda';
import { flashCudaBackend, flashForward, planFor } from '@attn/flash-cuda';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const list = (name, fallback) => arg(name, fallback).split(',');
const SQ = list('--sq', '1,16,64,128,256').map(Number);
const SK = list('--sk', '16,256,1024,4096').map(Number);
const DIMS = list('--dim', '64,128').map(Number);
const DTYPES = list('--dtype', 'bfloat16,float16');
const BH = list('--bh', '1x1,2x8,8x32').map((s) => s.split('x').map(Number));
const CAUSAL = list('--causal', '0,1').map((s) => s === '1');
const RANDOM = arg('--inputs', 'constant') === 'random';
const L = 16; // calls per graph
const REPLAYS = 8; // replays per graph sample at most
const EAGER = 100; // calls per eager sample at most
const SAMPLE_US = 1500; // fewer replays / calls per sample for long calls: about this much time per sample
const SET_BYTES_TOTAL = 96 << 20; // rotate input sets until they hold about this much (up to L)

const start = new cuda.Event();
const end = new cuda.Event();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function timeUs(fn, calls) {
  start.record();
  fn();
  end.record();
  end.synchronize();
  return (start.elapsedMs(end) * 1e3) / calls;
}

function graphUs(params, opts) {
  const graph = cuda.captureGraph(() =>
    Array.from({ length: L }, (_, i) => flashForward(params[i % params.length], opts)),
  );
  try {
    graph.replay();
    cuda.synchronize(0);
    const first = timeUs(() => graph.replay(), L);
    const replays = Math.max(1, Math.min(REPLAYS, Math.ceil(SAMPLE_US / (first * L))));
    const samples = [0, 1, 2].map(() =>
      timeUs(() => {
        for (let r = 0; r < replays; r++) graph.replay();
      }, replays * L),
    );
    return { us: median(samples), first };
  } finally {
    graph.dispose();
    for (const r of graph.result) {
      r.out.dispose();
      r.logsumexp.dispose();
    }
  }
}

function eagerUs(params, opts, perCallUs) {
  const call = (i) => {
    const r = flashForward(params[i % params.length], opts);
    r.out.dispose();
    r.logsumexp.dispose();
  };
  const calls = Math.max(10, Math.min(EAGER, Math.ceil(SAMPLE_US / perCallUs)));
  for (let i = 0; i < 20; i++) call(i);
  cuda.synchronize(0);
  const samples = [0, 1, 2].map(() =>
    timeUs(() => {
      for (let i = 0; i < calls; i++) call(i);
    }, calls),
  );
  return median(samples);
}

const names = flashCudaBackend.buildInfo().kernelNames;
const props = cuda.deviceProperties(0);
const rows = [];
const t0 = performance.now();
for (const dtype of DTYPES) {
  const o = { dtype, device: 'cuda' };
  const short = dtype === 'bfloat16' ? 'bf16' : 'fp16';
  for (const D of DIMS) {
    const tiles = names.filter((n) => n.startsWith(`${short}_d${D}_`));
    for (const [B, H] of BH) {
      for (const Sk of SK) {
        for (const Sq of SQ) {
          const setBytes = B * H * (2 * Sq + 2 * Sk) * D * 2;
          const sets = Math.max(2, Math.min(L, Math.ceil(SET_BYTES_TOTAL / setBytes)));
          let seed = 1;
          const filled = (shape) => {
            if (RANDOM) return core.randn(shape, { ...o, seed: seed++ });
            const t = core.empty(shape, o);
            cuda.fill(t.storage, 0, t.storage.bytes, 0x3c); // 0x3c3c: bf16 0.0115, fp16 1.06 (finite)
            return t;
          };
          const inputs = Array.from({ length: sets }, () => [
            filled([B, H, Sq, D]),
            filled([B, H, Sk, D]),
            filled([B, H, Sk, D]),
          ]);
          for (const causal of CAUSAL) {
            const params = inputs.map(([q, k, v]) => core.normalizeParams(q, k, v, { isCausal: causal }));
            const auto = planFor(params[0]);
            const row = { dtype, B, H, Sq, Sk, D, causal, auto: `${auto.kernel} x${auto.numSplits}`, tiles: [] };
            for (const kernel of tiles) {
              const opts = { kernel };
              let plan;
              try {
                plan = planFor(params[0], opts);
              } catch {
                continue; // not eligible for this call (the plan says why)
              }
              const graph = graphUs(params, opts);
              row.tiles.push({
                kernel,
                splits: plan.numSplits,
                graphUs: +graph.us.toFixed(3),
                eagerUs: +eagerUs(params, opts, graph.first).toFixed(3),
              });
            }
            const best = row.tiles.reduce((a, b) => (b.graphUs < a.graphUs ? b : a));
            const picked = row.tiles.find((t) => row.auto.startsWith(`${t.kernel} `));
            console.log(
              `${short} D${D} B${B} H${H} Sq${Sq} Sk${Sk} ${causal ? 'causal' : 'full  '} auto ${row.auto.padEnd(24)} ` +
                row.tiles
                  .map((t) => `${t.kernel.slice(short.length + D.toString().length + 3)} ${t.graphUs}/${t.eagerUs}`)
                  .join('  ') +
                (picked && best.graphUs < picked.graphUs * 0.97 ? `  <- ${best.kernel} faster` : ''),
            );
            rows.push(row);
          }
          for (const set of inputs) for (const t of set) t.dispose();
        }
      }
    }
  }
}
console.log(`${rows.length} shapes in ${((performance.now() - t0) / 1e3).toFixed(1)} s`);
const json = arg('--json', null);
if (json)
  writeFileSync(
    json,
    JSON.stringify(
      {
        device: `${props.name} (${props.arch}, ${props.multiProcessorCount} SMs)`,
        inputs: RANDOM ? 'random' : 'constant',
        layers: L,
        replays: REPLAYS,
        eagerCalls: EAGER,
        rows,
      },
      null,
      0,
    ),
  );
