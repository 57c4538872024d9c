#!/usr/bin/env node
// sdpaKvCache decode with append + rotary against the plain decode it replaces, on flash-cuda at
// B 8, Hq 32, Hk 8, Sq 1, D 128, bf16, a cache holding Sk - 1 = 8191 keys per row plus the appended one
// (Sk 8192 attended): paged (block size 16, 64 or 256; a shuffled table) or contiguous ([B, Sk, Hk, D]), each
// a view of the same K/V memory (random data, a random 1/16 tiled on the device: generating 268 MB on the
// host takes longer than the whole measurement). Per call, CUDA events around N back-to-back calls after
// WARMUP (the method of decode-bench.mjs), every row of every cache per round:
//   plain        flashForward on validated sdpaVarlen params over the same memory (the pool through the
//                same table, or the contiguous cache as packed K/V; Sk keys, causal lower-right as the kv
//                call: the query sees every key);
//   plain+copy   the same plus a device copy of kNew and vNew's bytes (an append without rotary);
//   plain graph  the sdpaVarlen call captured into a CUDA graph and replayed (no copy);
//   kvcache      flashKvCacheForward on validated sdpaKvCache params: the plan's path (fused: one forward
//                that appends kNew rotated, rotates q and attends);
//   kv separate  the same call through the separate append + rotary kernel, then the forward (two launches);
//   kv no append the kv call without kNew or rotary (the forward over the cache alone);
//   kv graph     the sdpaKvCache call captured once into a CUDA graph and replayed (a decode loop's cost);
//   kv api       the public sdpaKvCache call (reads cacheSeqlens and blockTable on the host: one sync).
// The goal (issue 22): kvcache no slower than plain+copy.
//
//   node packages/flash-cuda/scripts/kvcache-bench.mjs [--caches 256,64,16,contiguous] [--rounds 2] [--json out.json]
import { writeFileSync } from 'node:fs';
import * as core from '@attn/core';
import * as cuda from '@attn/cuda';
import { flashForward, flashKvCacheForward, kvCachePlanFor, planFor } from '@attn/flash-cuda';
import { loopTimer } from './lib/loop-timer.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const caches = arg('--caches', '256').split(',');
const rounds = Number(arg('--rounds', '1'));
const [B, Hq, Hk, Sk, D] = [8, 32, 8, 8192, 128];
const N = 500;
const WARMUP = 50;
const o = { dtype: 'bfloat16', device: 'cuda' };
const props = cuda.deviceProperties(0);
const i32 = (xs, shape) => core.tensor(Int32Array.from(xs), shape, { dtype: 'int32', device: 'cuda' });

/** [B * Sk, Hk, D] of random values: a random sixteenth, copied 16 times on the device. */
function randomKv(seed) {
  const part = core.randn([(B * Sk) / 16, Hk, D], { ...o, seed });
  const all = core.empty([B * Sk, Hk, D], o);
  const bytes = part.storage.bytes;
  for (let i = 0; i < 16; i++) cuda.copyDeviceToDevice(all.storage, i * bytes, part.storage, 0, bytes);
  cuda.synchronize(0);
  part.dispose();
  return all;
}
const kData = randomKv(2);
const vData = randomKv(3);
const q = core.randn([B, 1, Hq, D], { ...o, seed: 1 });
const kNew = core.randn([B, 1, Hk, D], { ...o, seed: 4 });
const vNew = core.randn([B, 1, Hk, D], { ...o, seed: 5 });
const cos = core.randn([Sk + 1, D / 2], { ...o, seed: 6 });
const sin = core.randn([Sk + 1, D / 2], { ...o, seed: 7 });
const cacheSeqlens = i32(Array(B).fill(Sk - 1), [B]);
const fullSeqlens = i32(Array(B).fill(Sk), [B]);
const qPacked = q.reshape([B, Hq, D]);
const copyDst = core.empty([2, B, Hk, D], o);
const half = kNew.storage.bytes;
const cuSeqlensQ = i32(
  Array.from({ length: B + 1 }, (_, b) => b),
  [B + 1],
);
const cuSeqlensK = i32(
  Array.from({ length: B + 1 }, (_, b) => b * Sk),
  [B + 1],
);

/** Microseconds per call: events around N back-to-back calls after WARMUP. */
const loopUs = loopTimer(cuda, { warmup: WARMUP, calls: N });
const drop = (r) => {
  r.out.dispose();
  r.logsumexp.dispose();
};

/** The calls of one cache layout over kData / vData ('16', '64', '256': paged block size; 'contiguous'). */
function layout(cache) {
  const paged = cache !== 'contiguous';
  const BS = paged ? Number(cache) : Sk; // a contiguous cache: one block of Sk per row
  const blocks = (B * Sk) / BS;
  const kPool = kData.reshape([blocks, BS, Hk, D]);
  const vPool = vData.reshape([blocks, BS, Hk, D]);
  // A shuffled table (the same for both calls); contiguous: none (row b is cache row b).
  const table = paged
    ? i32(
        Array.from({ length: blocks }, (_, i) => (i * 97) % blocks),
        [B, Sk / BS],
      )
    : null;
  const tableOpt = table ? { blockTable: table } : {};
  const kvOpts = {
    cacheSeqlens,
    kNew,
    vNew,
    rotaryCos: cos,
    rotarySin: sin,
    ...tableOpt,
    isCausal: true,
    enableGqa: true,
  };
  const kvParams = core.normalizeKvCacheParams(q, kPool, vPool, kvOpts);
  // The contiguous cache is packed K/V [B * Sk, Hk, D] for the plain call.
  const [kPlain, vPlain] = paged ? [kPool, vPool] : [kData, vData];
  const varlenOpts = {
    cuSeqlensQ,
    cuSeqlensK,
    maxSeqlenQ: 1,
    maxSeqlenK: Sk,
    ...tableOpt,
    isCausal: true,
    alignment: 'lowerRight',
    enableGqa: true,
  };
  const plainParams = core.normalizeVarlenParams(qPacked, kPlain, vPlain, varlenOpts);
  const kvReadParams = core.normalizeKvCacheParams(q, kPool, vPool, {
    cacheSeqlens: fullSeqlens,
    ...tableOpt,
    isCausal: true,
    enableGqa: true,
  });
  cuda.synchronize(0);
  const graph = cuda.captureGraph(() => core.sdpaKvCache(q, kPool, vPool, { ...kvOpts, backends: ['flash-cuda'] }));
  const plainGraph = cuda.captureGraph(() =>
    core.sdpaVarlen(qPacked, kPlain, vPlain, { ...varlenOpts, backends: ['flash-cuda'] }),
  );
  return {
    name: paged ? `paged ${BS}` : 'contiguous',
    plan: planFor(plainParams),
    kvPlan: kvCachePlanFor(kvParams),
    calls: {
      plainUs: () => drop(flashForward(plainParams)),
      plainPlusCopyUs: () => {
        cuda.copyDeviceToDevice(copyDst.storage, 0, kNew.storage, 0, half);
        cuda.copyDeviceToDevice(copyDst.storage, half, vNew.storage, 0, half);
        drop(flashForward(plainParams));
      },
      plainGraphReplayUs: () => plainGraph.replay(),
      kvCacheUs: () => drop(flashKvCacheForward(kvParams)),
      kvSeparateAppendUs: () => drop(flashKvCacheForward(kvParams, { separateAppend: true })),
      kvNoAppendNoRotaryUs: () => drop(flashKvCacheForward(kvReadParams)),
      kvGraphReplayUs: () => graph.replay(),
      kvApiUs: () => drop(core.sdpaKvCache(q, kPool, vPool, { ...kvOpts, backends: ['flash-cuda'] })),
    },
  };
}

const layouts = caches.map(layout);
const results = [];
for (let round = 1; round <= rounds; round++) {
  for (const l of layouts) {
    const rows = Object.fromEntries(Object.entries(l.calls).map(([k, fn]) => [k, loopUs(fn)]));
    const r = {
      round,
      cache: l.name,
      ...rows,
      kvOverPlainPlusCopy: rows.kvCacheUs / rows.plainPlusCopyUs,
      kvSeparateOverPlainPlusCopy: rows.kvSeparateAppendUs / rows.plainPlusCopyUs,
      kvGraphOverPlainGraph: rows.kvGraphReplayUs / rows.plainGraphReplayUs,
    };
    results.push(r);
    const f = (x) => x.toFixed(1);
    console.log(
      `round ${round} ${l.name}: plain ${f(r.plainUs)}, plain+copy ${f(r.plainPlusCopyUs)}, kv ${f(r.kvCacheUs)} ` +
        `(${r.kvOverPlainPlusCopy.toFixed(3)}x), kv separate ${f(r.kvSeparateAppendUs)} ` +
        `(${r.kvSeparateOverPlainPlusCopy.toFixed(3)}x), kv no append ${f(r.kvNoAppendNoRotaryUs)}, ` +
        `graphs kv / plain ${f(r.kvGraphReplayUs)} / ${f(r.plainGraphReplayUs)}, api ${f(r.kvApiUs)}`,
    );
  }
}
const result = {
  device: props.name,
  shape: { B, Hq, Hk, Sq: 1, Sk, D, dtype: 'bfloat16', rotaryDim: D, newLen: 1 },
  method: `CUDA events around ${N} back-to-back calls after ${WARMUP} warm-up calls; every layout per round`,
  plans: Object.fromEntries(layouts.map((l) => [l.name, { plain: l.plan, kv: l.kvPlan }])),
  results,
};
console.log(JSON.stringify(result.plans));
const json = process.argv.indexOf('--json');
if (json > 0) writeFileSync(process.argv[json + 1], JSON.stringify(result, null, 1));
