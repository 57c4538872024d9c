#!/usr/bin/env node
// Decode at the memory bound: B 8, Hq 32, Hk 8, Sq 1, Sk 8192, D 128, bf16, flash-cuda's K/V read three
// ways from the same bytes: dense (a [B, Sk, Hk, D] buffer seen as [B, Hk, Sk, D]), varlen (packed
// [B*Sk, Hk, D]) and paged (the same buffer seen as a pool [B*Sk/bs, bs, Hk, D], the block table a
// random permutation of its blocks, bs 16 / 64 / 256). Each variant: CUDA events around 500
// back-to-back calls after 50 warm-up calls, per call:
//   kernel   flashForward on validated params, outputs disposed (what the GPU does; the host's ~10 us
//            per call overlaps the kernels);
//   api      the public call (sdpa / sdpaVarlen with backends ['flash-cuda']) and dispose, as a user's
//            loop pays it (core reads varlen offsets and the block table on the host: one sync per call).
// Also the split count the plan chose (merged in a cluster or by the combine), each variant at fixed split counts
// (on sm90 a pair whose grid is one CTA per SM merges in a cluster, more by the combine), and the fraction of the HBM
// floor (K+V bytes / the GPU's bandwidth). torch's side: scripts/decode_bench_torch.py, the same loop.
// Then the decode-shaped tiles (the decode kernel and 'lean_small', by name) at split counts 1..16 on dense, paged 16
// and paged 256, first checked against the varlen output (max |diff|).
//
//   node packages/flash-cuda/scripts/decode-bench.mjs [--json out.json] [--ncu]
// --ncu: only 3 kernel-path calls of each of dense, paged 16 and paged 256, on the plan's kernel and on the decode kernel at
// 4 splits (the paged plan's count: the same launch on every layout), for ncu's kernel sections.
import { writeFileSync } from 'node:fs';
import * as core from '@attn/core';
import * as cuda from '@attn/cuda';
import { flashCudaBackend, flashForward, planFor } from '@attn/flash-cuda';
import { loopTimer } from './lib/loop-timer.mjs';

const [B, Hq, Hk, Sk, D] = [8, 32, 8, 8192, 128];
const N = 500;
const WARMUP = 50;
const o = { dtype: 'bfloat16', device: 'cuda' };
const props = cuda.deviceProperties(0);
// HBM bandwidth by GPU name (the floor's denominator): H100 SXM 3.35 TB/s, H200 4.8 TB/s.
const bandwidth = /H200/.test(props.name) ? 4.8e12 : /H100/.test(props.name) ? 3.35e12 : Number.NaN;
const kvBytes = 2 * B * Sk * Hk * D * 2;
const floorUs = (kvBytes / bandwidth) * 1e6;

// One random sequence of keys (host fill), copied into every batch row on the device.
function filled(seed) {
  const row = core.randn([Sk, Hk, D], { ...o, seed });
  const t = core.empty([B * Sk, Hk, D], o);
  for (let b = 0; b < B; b++)
    cuda.copyDeviceToDevice(t.storage, b * row.storage.bytes, row.storage, 0, row.storage.bytes);
  row.dispose();
  return t;
}
const kPacked = filled(2);
const vPacked = filled(3);
const qPacked = core.randn([B, Hq, D], { ...o, seed: 1 });
const qDense = qPacked.reshape([B, Hq, 1, D]);
const kDense = kPacked.reshape([B, Sk, Hk, D]).transpose(1, 2);
const vDense = vPacked.reshape([B, Sk, Hk, D]).transpose(1, 2);
const i32 = (xs, shape) => core.tensor(Int32Array.from(xs), shape, { dtype: 'int32', device: 'cuda' });
const cuQ = i32(
  Array.from({ length: B + 1 }, (_, b) => b),
  [B + 1],
);
const cuK = i32(
  Array.from({ length: B + 1 }, (_, b) => b * Sk),
  [B + 1],
);

/** A deterministic shuffle of 0..n-1 (mulberry32). */
function permutation(n, seed) {
  let a = seed >>> 0;
  const r = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const p = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [p[i], p[j]] = [p[j], p[i]];
  }
  return p;
}

const varlenOpts = { cuSeqlensQ: cuQ, cuSeqlensK: cuK, maxSeqlenQ: 1, maxSeqlenK: Sk, enableGqa: true };
const variants = [
  { name: 'dense', q: qDense, k: kDense, v: vDense, opts: { enableGqa: true }, varlen: false },
  { name: 'varlen', q: qPacked, k: kPacked, v: vPacked, opts: varlenOpts, varlen: true },
];
for (const bs of [16, 64, 256]) {
  const blocks = (B * Sk) / bs;
  const table = i32(permutation(blocks, bs), [B, Sk / bs]);
  variants.push({
    name: `paged ${bs}`,
    q: qPacked,
    k: kPacked.reshape([blocks, bs, Hk, D]),
    v: vPacked.reshape([blocks, bs, Hk, D]),
    opts: { ...varlenOpts, blockTable: table },
    varlen: true,
  });
}
for (const v of variants) {
  v.params = v.varlen ? core.normalizeVarlenParams(v.q, v.k, v.v, v.opts) : core.normalizeParams(v.q, v.k, v.v, v.opts);
}

const kernelCall = (v, over) => () => {
  const r = flashForward(v.params, over);
  r.out.dispose();
  r.logsumexp.dispose();
};
const apiCall = (v) => () => {
  const opts = { ...v.opts, backends: ['flash-cuda'] };
  const r = v.varlen ? core.sdpaVarlen(v.q, v.k, v.v, opts) : core.sdpaForward(v.q, v.k, v.v, opts);
  r.out.dispose();
  r.logsumexp.dispose();
};

if (process.argv.includes('--ncu')) {
  for (const v of variants.filter((x) => ['dense', 'paged 16', 'paged 256'].includes(x.name))) {
    for (let i = 0; i < 3; i++) kernelCall(v, {})();
    for (let i = 0; i < 3; i++) kernelCall(v, { kernel: 'bf16_d128_decode', numSplits: 4 })();
  }
  cuda.synchronize(0);
  process.exit(0);
}

/** Microseconds per call: events around N back-to-back calls after WARMUP. */
const loopUs = loopTimer(cuda, { warmup: WARMUP, calls: N });

// The bench times correct calls: dense and paged with the identity table read the varlen call's bytes in
// its order and give its bits on the same tile and split count (the plan may read paged K/V with another tile;
// the timed paged variants read a shuffled table: other keys, other numbers).
const ref = flashForward(variants[1].params).out.toFloat64Array();
const identity = (bs) =>
  core.normalizeVarlenParams(
    qPacked,
    kPacked.reshape([(B * Sk) / bs, bs, Hk, D]),
    vPacked.reshape([(B * Sk) / bs, bs, Hk, D]),
    {
      ...varlenOpts,
      blockTable: i32(
        Array.from({ length: (B * Sk) / bs }, (_, i) => i),
        [B, Sk / bs],
      ),
    },
  );
for (const [name, params] of [
  ['dense', variants[0].params],
  ...[16, 64, 256].map((bs) => [`paged ${bs} (identity table)`, identity(bs)]),
]) {
  const { kernel, numSplits } = planFor(params);
  const got = flashForward(params).out.toFloat64Array();
  const want = flashForward(variants[1].params, { kernel, numSplits }).out.toFloat64Array();
  if (!got.every((x, i) => Object.is(x, want[i])))
    console.log(`WARNING: ${name} output differs from varlen (${kernel})`);
}

const rows = [];
for (const v of variants) {
  const plan = planFor(v.params);
  const kernelUs = loopUs(kernelCall(v, {}));
  const api = loopUs(apiCall(v));
  const splits = {};
  for (const s of [1, 2, 3, 4, 6, 8, 12, 16]) splits[s] = Number(loopUs(kernelCall(v, { numSplits: s })).toFixed(2));
  const row = {
    variant: v.name,
    kernel: plan.kernel,
    numSplits: plan.numSplits,
    clusterSplits: plan.clusterSplits,
    kernelUs,
    apiUs: api,
    floorFraction: floorUs / kernelUs,
    bySplits: splits,
  };
  rows.push(row);
  console.log(
    `${v.name.padEnd(10)} ${plan.kernel} splits ${plan.numSplits}${plan.clusterSplits ? ' (cluster)' : ''}: kernel path ${kernelUs.toFixed(1)} us (${((100 * floorUs) / kernelUs).toFixed(0)}% of the HBM floor), ` +
      `public call ${api.toFixed(1)} us; by splits ${JSON.stringify(splits)}`,
  );
}
// The decode-shaped tiles (the decode kernel, the plan's; 'lean_small', the 64-row split tile) at each split
// count on dense, paged 16 and paged 256, first checked against the varlen output (max |diff|).
const tiles = (flashCudaBackend.buildInfo().kernelNames ?? []).filter((k) =>
  /^bf16_d128_(decode|decode_wide|lean_small)$/.test(k),
);
const sweep = [];
for (const v of variants.filter((x) => ['dense', 'paged 16', 'paged 256'].includes(x.name))) {
  const bs = v.name === 'dense' ? 0 : Number(v.name.split(' ')[1]);
  for (const kernel of tiles) {
    const got = flashForward(bs === 0 ? v.params : identity(bs), {
      kernel,
      numSplits: 4,
    }).out.toFloat64Array();
    let maxDiff = 0;
    for (let i = 0; i < got.length; i++) maxDiff = Math.max(maxDiff, Math.abs(got[i] - ref[i]));
    if (!(maxDiff < 2e-2)) console.log(`WARNING: ${kernel} on ${v.name} differs from varlen by ${maxDiff}`);
    const us = {};
    for (const s of [1, 2, 3, 4, 5, 6, 8, 12, 16])
      us[s] = Number(loopUs(kernelCall(v, { kernel, numSplits: s })).toFixed(2));
    const best = Object.entries(us).sort((a, b) => a[1] - b[1])[0];
    sweep.push({ variant: v.name, kernel, maxDiff, bySplits: us, best: { splits: Number(best[0]), us: best[1] } });
    console.log(
      `${v.name.padEnd(10)} ${kernel.padEnd(28)} best ${best[1].toFixed(1)} us at ${best[0]} splits; max|diff| ${maxDiff.toExponential(1)}; ${JSON.stringify(us)}`,
    );
  }
}
const contiguous = rows.find((r) => r.variant === 'varlen').kernelUs;
for (const r of rows) r.vsVarlen = r.kernelUs / contiguous;
const result = {
  device: props.name,
  shape: { B, Hq, Hk, Sq: 1, Sk, D, dtype: 'bfloat16' },
  method: `CUDA events around ${N} back-to-back calls after ${WARMUP} warm-up calls`,
  kvBytes,
  bandwidthBytesPerS: bandwidth,
  floorUs,
  rows,
  sweep,
};
console.log(
  `HBM floor ${floorUs.toFixed(1)} us (${(kvBytes / 1e6).toFixed(0)} MB at ${(bandwidth / 1e12).toFixed(2)} TB/s)`,
);
const json = process.argv.indexOf('--json');
if (json > 0) writeFileSync(process.argv[json + 1], JSON.stringify(result, null, 1));
