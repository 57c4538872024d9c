#!/usr/bin/env node
// sdpaKvCache decode with append + rotary against the plain decode it replaces, on flash-cuda at
// B 8, Hq 32, Hk 8, Sq 1, D 128, bf16, a cache holding Sk - 1 = 8191 keys per row plus the appended one
// (Sk 8192 attended): paged (--cache 16, 64 or 256, the default: the block size) or contiguous
// ([B, Sk, Hk, D], --cache contiguous). Per call, CUDA events around N back-to-back calls after WARMUP (the
// method of decode-bench.mjs):
//   plain        flashForward on validated sdpaVarlen params over the same memory (the pool through the
//                same table, or the contiguous cache as packed K/V; Sk keys, causal lower-right as the kv
//                call: the query sees every key);
//   plain+copy   the same plus a device copy of kNew and vNew's bytes (an append without rotary);
//   plain graph  the sdpaVarlen call captured into a CUDA graph and replayed (no copy);
//   kvcache      flashKvCacheForward on validated sdpaKvCache params: the plan's path (fused: one forward
//                that appends kNew rotated, rotates q and attends);
//   kv separate  the same call through the separate append + rotary kernel, then the forward (two launches);
//   kv graph     the sdpaKvCache call captured once into a CUDA graph and replayed (a decode loop's cost);
//   kv api       the public sdpaKvCache call (reads cacheSeqlens and blockTable on the host: one sync).
// The goal (issue 22): kvcache no slower than plain+copy.
//
//   node packages/flash-cuda/scripts/kvcache-bench.mjs [--cache 16|64|256|contiguous] [--json out.json]
import { writeFileSync } from 'node:fs';
import * as core from '@attn/core';
import * as cuda from '@attn/cuda';
import { flashForward, flashKvCacheForward, kvCachePlanFor, planFor } from '@attn/flash-cuda';
import { loopTimer } from './lib/loop-timer.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const cache = arg('--cache', '256');
const paged = cache !== 'contiguous';
const [B, Hq, Hk, Sk, D] = [8, 32, 8, 8192, 128];
const BS = paged ? Number(cache) : Sk; // a contiguous cache: one block of Sk per row
const N = 500;
const WARMUP = 50;
const o = { dtype: 'bfloat16', device: 'cuda' };
const props = cuda.deviceProperties(0);
const i32 = (xs, shape) => core.tensor(Int32Array.from(xs), shape, { dtype: 'int32', device: 'cuda' });
const blocks = (B * Sk) / BS;
const kPool = core.randn([blocks, BS, Hk, D], { ...o, seed: 2 });
const vPool = core.randn([blocks, BS, Hk, D], { ...o, seed: 3 });
// A shuffled table (the same for both calls); contiguous: none (row b is cache row b).
const perm = Array.from({ length: blocks }, (_, i) => (i * 97) % blocks);
const table = paged ? i32(perm, [B, Sk / BS]) : null;
const tableOpt = table ? { blockTable: table } : {};
const q = core.randn([B, 1, Hq, D], { ...o, seed: 1 });
const kNew = core.randn([B, 1, Hk, D], { ...o, seed: 4 });
const vNew = core.randn([B, 1, Hk, D], { ...o, seed: 5 });
const cos = core.randn([Sk + 1, D / 2], { ...o, seed: 6 });
const sin = core.randn([Sk + 1, D / 2], { ...o, seed: 7 });
const cacheSeqlens = i32(Array(B).fill(Sk - 1), [B]);
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
// The contiguous cache [B, Sk, Hk, D] is packed K/V [B * Sk, Hk, D] for the plain call.
const [kPlain, vPlain] = paged ? [kPool, vPool] : [kPool.reshape([B * Sk, Hk, D]), vPool.reshape([B * Sk, Hk, D])];

const qPacked = q.reshape([B, Hq, D]);
const varlenOpts = {
  cuSeqlensQ: i32(
    Array.from({ length: B + 1 }, (_, b) => b),
    [B + 1],
  ),
  cuSeqlensK: i32(
    Array.from({ length: B + 1 }, (_, b) => b * Sk),
    [B + 1],
  ),
  maxSeqlenQ: 1,
  maxSeqlenK: Sk,
  ...tableOpt,
  isCausal: true,
  alignment: 'lowerRight',
  enableGqa: true,
};
const plainParams = core.normalizeVarlenParams(qPacked, kPlain, vPlain, varlenOpts);
const copyDst = core.empty([2, B, Hk, D], o);

/** Microseconds per call: events around N back-to-back calls after WARMUP. */
const loopUs = loopTimer(cuda, { warmup: WARMUP, calls: N });
const drop = (r) => {
  r.out.dispose();
  r.logsumexp.dispose();
};
const half = kNew.storage.bytes;
const plain = () => drop(flashForward(plainParams));
const plainCopy = () => {
  cuda.copyDeviceToDevice(copyDst.storage, 0, kNew.storage, 0, half);
  cuda.copyDeviceToDevice(copyDst.storage, half, vNew.storage, 0, half);
  drop(flashForward(plainParams));
};
const kv = () => drop(flashKvCacheForward(kvParams));
const kvSeparate = () => drop(flashKvCacheForward(kvParams, { separateAppend: true }));
// No append, no rotary: the kernel only copies q into its scratch; the rest is the forward.
const kvReadParams = core.normalizeKvCacheParams(q, kPool, vPool, {
  cacheSeqlens: i32(Array(B).fill(Sk), [B]),
  ...tableOpt,
  isCausal: true,
  enableGqa: true,
});
const kvRead = () => drop(flashKvCacheForward(kvReadParams));
const api = () => drop(core.sdpaKvCache(q, kPool, vPool, { ...kvOpts, backends: ['flash-cuda'] }));
cuda.synchronize(0);
const graph = cuda.captureGraph(() => core.sdpaKvCache(q, kPool, vPool, { ...kvOpts, backends: ['flash-cuda'] }));
const replay = () => graph.replay();
const plainGraph = cuda.captureGraph(() =>
  core.sdpaVarlen(qPacked, kPlain, vPlain, { ...varlenOpts, backends: ['flash-cuda'] }),
);
const plainReplay = () => plainGraph.replay();

const rows = {
  plainUs: loopUs(plain),
  plainPlusCopyUs: loopUs(plainCopy),
  plainGraphReplayUs: loopUs(plainReplay),
  kvCacheUs: loopUs(kv),
  kvSeparateAppendUs: loopUs(kvSeparate),
  kvNoAppendNoRotaryUs: loopUs(kvRead),
  kvGraphReplayUs: loopUs(replay),
  kvApiUs: loopUs(api),
};
const result = {
  device: props.name,
  shape: { B, Hq, Hk, Sq: 1, Sk, D, cache: paged ? `paged ${BS}` : 'contiguous', dtype: 'bfloat16', rotaryDim: D },
  method: `CUDA events around ${N} back-to-back calls after ${WARMUP} warm-up calls`,
  ...rows,
  plan: planFor(plainParams),
  kvPlan: kvCachePlanFor(kvParams),
  kvOverPlainPlusCopy: rows.kvCacheUs / rows.plainPlusCopyUs,
  kvSeparateOverPlainPlusCopy: rows.kvSeparateAppendUs / rows.plainPlusCopyUs,
  kvGraphOverPlainGraph: rows.kvGraphReplayUs / rows.plainGraphReplayUs,
};
console.log(JSON.stringify(result, null, 1));
const json = process.argv.indexOf('--json');
if (json > 0) writeFileSync(process.argv[json + 1], JSON.stringify(result, null, 1));
