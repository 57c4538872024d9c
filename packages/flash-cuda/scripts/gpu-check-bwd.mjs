#!/usr/bin/env node
// One GPU run that says as much as possible about the backward of 'flash-cuda': every feature and odd
// shape, dq/dk/dv against cpu-math's backward computed in float64 on the same (rounded) inputs, each case
// caught on its own; the deterministic mode's bitwise reproducibility; then timings of fwd+bwd and bwd
// (default and deterministic) on the standard bf16 grid, for the side-by-side with
// `scripts/bench_torch.py --backward`. Needs the dist/ builds of core, cpu, cuda, flash-cuda and the addons.
//
//   node packages/flash-cuda/scripts/gpu-check-bwd.mjs                 # checks, then timings
//   node packages/flash-cuda/scripts/gpu-check-bwd.mjs --checks-only
//   node packages/flash-cuda/scripts/gpu-check-bwd.mjs --bench-only [--quick]
//   node packages/flash-cuda/scripts/gpu-check-bwd.mjs --only gqa      # cases whose name contains 'gqa'
//   node packages/flash-cuda/scripts/gpu-check-bwd.mjs --dim 128       # D 128 wherever a case names none
//   node packages/flash-cuda/scripts/gpu-check-bwd.mjs --self-test     # no GPU: the same cases through
//        cpu-math in bf16/fp16 on the CPU (checks the script, its inputs and its tolerances)
// Exit code: 1 when any check failed.
//
// FLOPs (FlashAttention's convention, perf-anchors.md §0): fwd = 4*B*H*Sq*Sk*D (halved when causal),
// bwd = 2.5 * fwd, fwd+bwd = 3.5 * fwd.
import '@attn/cpu';
import * as core from '@attn/core';
import '@attn/cuda';
import { backwardPlanFor, flashBackward, flashCudaBackend } from '@attn/flash-cuda';
import { caseListWithHeadDimGrid, deviceHeader, flops, log, parseArgs, poison as poisonIf, rng, runBench, runChecks, timeCall } from './lib/gpu-check-common.mjs';

const { flag, only, SELF, DEV, BACKEND } = parseArgs();

// ---------------------------------------------------------------- inputs
/** A tensor of dtype with seeded normal values, and the float64 copy of exactly those (rounded) values. */
function rounded(shape, dtype, seed) {
  const n = shape.reduce((a, b) => a * b, 1);
  const g = rng(seed);
  const a = new Float64Array(n);
  for (let i = 0; i < n; i++) a[i] = g();
  const t = core.tensor(a, shape, { dtype });
  return { t, f64: core.tensor(t.toFloat64Array(), shape, { dtype: 'float64' }) };
}
function toDevice(t, layout, misalign) {
  if (misalign) {
    // Base address 2 bytes past a 16-byte boundary: the kernels' element-wise path.
    const flat = t.contiguous().toFloat64Array();
    const padded = new Float64Array(flat.length + 1);
    padded.set(flat, 1);
    const dev = core.tensor(padded, [padded.length], { dtype: t.dtype }).to(DEV);
    return core.fromStorage(dev.storage, t.shape, { dtype: t.dtype, offset: 1 });
  }
  if (layout === 'bshd') return t.permute([0, 2, 1, 3]).contiguous().to(DEV).permute([0, 2, 1, 3]);
  return t.to(DEV);
}

// Hand the caching allocator memory full of NaN bytes, so an unwritten gradient element shows.
const poison = (bytes) => poisonIf(bytes, SELF);

// ---------------------------------------------------------------- one case
const TOL = { bfloat16: 3e-2, float16: 5e-3 }; // max |err| / max(1, max |ref|), per gradient

function compare(got, ref) {
  const a = got.toFloat64Array();
  const b = ref.toFloat64Array();
  let err = 0, scale = 1, nan = 0;
  for (let i = 0; i < a.length; i++) {
    if (Number.isNaN(a[i])) nan++;
    else err = Math.max(err, Math.abs(a[i] - b[i]));
    scale = Math.max(scale, Math.abs(b[i]));
  }
  return { err, rel: err / scale, nan };
}

function runCase(c) {
  const { dtype } = c;
  const opts = { ...c.opts, requiresGrad: true };
  if (c.opts.dropoutP) Object.assign(opts, { dropoutSeed: 0x1234_5678_9abcn, dropoutOffset: 7 });
  const devOpts = { ...opts };
  const cpuOpts = { ...opts };
  if (c.alibi) {
    const n = c.alibi === 'bh' ? c.B * c.Hq : c.Hq;
    const vals = Array.from({ length: n }, (_, i) => 2 ** (-((i % c.Hq) + 1) * 0.5) * (1 + Math.floor(i / c.Hq) * 0.5));
    const st = core.tensor(vals, c.alibi === 'bh' ? [c.B, c.Hq] : [c.Hq], { dtype: 'float32' });
    devOpts.alibiSlopes = st.to(DEV);
    cpuOpts.alibiSlopes = st;
  }
  if (c.used) {
    // Keys used per batch row: the poisoned allocator below makes every unused key's dK/dV NaN unless the
    // backward writes it.
    const st = core.tensor(c.used, [c.used.length], { dtype: 'int32' });
    devOpts.sequsedK = st.to(DEV);
    cpuOpts.sequsedK = st;
  }
  let gpu, ref, fwd;
  if (c.varlen) {
    const { q: lq, k: lk } = c.varlen;
    const totQ = lq.reduce((a, b) => a + b, 0), totK = lk.reduce((a, b) => a + b, 0);
    const cum = (xs) => xs.reduce((acc, x) => [...acc, acc[acc.length - 1] + x], [0]);
    const cq = cum(lq), ck = cum(lk);
    const q = rounded([totQ, c.Hq, c.D], dtype, 1), k = rounded([totK, c.Hk, c.D], dtype, 2);
    const v = rounded([totK, c.Hk, c.D], dtype, 3), g = rounded([totQ, c.Hq, c.D], dtype, 4);
    const vl = (device) => ({
      cuSeqlensQ: core.tensor(cq, [cq.length], { dtype: 'int32', device }),
      cuSeqlensK: core.tensor(ck, [ck.length], { dtype: 'int32', device }),
      maxSeqlenQ: Math.max(...lq),
      maxSeqlenK: Math.max(...lk),
    });
    fwd = core.sdpaVarlen(q.t.to(DEV), k.t.to(DEV), v.t.to(DEV), { ...devOpts, ...vl(DEV), backends: [BACKEND] });
    poison(3 * totQ * c.Hq * c.D * 4);
    gpu = core.sdpaBackward(g.t.to(DEV), fwd);
    const rf = core.sdpaVarlen(q.f64, k.f64, v.f64, { ...cpuOpts, ...vl('cpu'), backends: ['cpu-math'] });
    ref = core.sdpaBackward(g.f64, rf);
  } else {
    const { B, Hq, Hk, Sq, Sk, D } = c;
    const q = rounded([B, Hq, Sq, D], dtype, 1), k = rounded([B, Hk, Sk, D], dtype, 2);
    const v = rounded([B, Hk, Sk, D], dtype, 3), g = rounded([B, Hq, Sq, D], dtype, 4);
    const [qd, kd, vd] = [q, k, v].map((x) => toDevice(x.t, c.layout, c.misalign));
    const gd = toDevice(g.t, c.layout, c.misalign);
    fwd = core.sdpaForward(qd, kd, vd, { ...devOpts, backends: [BACKEND] });
    if (!SELF) c.plan = backwardPlanFor(core.normalizeParams(qd, kd, vd, devOpts));
    poison(3 * B * Hq * Math.max(Sq, Sk) * D * 4);
    gpu = core.sdpaBackward(gd, fwd);
    if (c.opts.deterministic) {
      const again = core.sdpaBackward(gd, fwd);
      c.bitwise = ['dq', 'dk', 'dv'].every((n) => {
        const a = gpu[n].toFloat64Array(), b = again[n].toFloat64Array();
        return a.every((x, i) => Object.is(x, b[i]));
      });
      [again.dq, again.dk, again.dv].forEach((t) => t.dispose());
    }
    const rf = core.sdpaForward(q.f64, k.f64, v.f64, { ...cpuOpts, backends: ['cpu-math'] });
    ref = core.sdpaBackward(g.f64, rf);
  }
  if (fwd.backend !== BACKEND) throw new Error(`forward ran on ${fwd.backend}`);
  const r = { dq: compare(gpu.dq, ref.dq), dk: compare(gpu.dk, ref.dk), dv: compare(gpu.dv, ref.dv) };
  [gpu.dq, gpu.dk, gpu.dv, fwd.out, fwd.logsumexp].forEach((t) => t.dispose());
  const tol = TOL[dtype];
  const ok = Object.values(r).every((x) => x.nan === 0 && x.rel <= tol) && c.bitwise !== false;
  return { ok, ...r };
}

// ---------------------------------------------------------------- the cases
// --dim N: the head dim of every case that does not name one (default 64), e.g. to run all the feature
// cases on the D128 / D256 buckets (their 2-D tiled and Hopper dK/dV kernels).
const DIM = process.argv.includes('--dim') ? Number(process.argv[process.argv.indexOf('--dim') + 1]) : null;
function cases() {
  const { list, add: addAny } = caseListWithHeadDimGrid();
  const add = (name, c) => (DIM && c.D === undefined ? addAny(`${name} D${DIM}`, { ...c, D: DIM }) : addAny(name, c));
  for (const D of [1, 8, 40, 72, 100, 250]) add(`bf16 odd D${D}`, { D, Sq: 70, Sk: 90 });
  add('s1', { B: 1, Hq: 1, Hk: 1, Sq: 1, Sk: 1 });
  add('sq1 sk17', { Sq: 1, Sk: 17 });
  add('sq17 sk1', { Sq: 17, Sk: 1 });
  add('long keys sq64 sk3000', { Sq: 64, Sk: 3000, B: 1, Hq: 2, Hk: 2 });
  add('long queries sq3000 sk64', { Sq: 3000, Sk: 64, B: 1, Hq: 2, Hk: 2 });
  for (const alignment of ['upperLeft', 'lowerRight']) {
    add(`causal ${alignment} sq37 sk300`, { Sq: 37, Sk: 300, opts: { isCausal: true, alignment } });
    add(`causal ${alignment} sq300 sk37 (rows without keys)`, { Sq: 300, Sk: 37, opts: { isCausal: true, alignment } });
    add(`window[16,0] ${alignment} sq150 sk260`, { Sq: 150, Sk: 260, opts: { window: [16, 0], alignment } });
    add(`window[40,9] ${alignment}`, { Sq: 200, Sk: 170, opts: { window: [40, 9], alignment } });
    add(`window[-1,5] ${alignment}`, { Sq: 120, Sk: 300, opts: { window: [-1, 5], alignment } });
    add(`alibi[H] causal ${alignment}`, { Sq: 100, Sk: 150, alibi: 'h', opts: { isCausal: true, alignment } });
  }
  add('alibi[B,H]', { Sq: 90, Sk: 140, alibi: 'bh' });
  add('softcap 5', { Sq: 100, Sk: 170, opts: { softcap: 5, scale: 0.5 } });
  add('softcap 30 causal alibi', { Sq: 150, Sk: 150, alibi: 'h', opts: { softcap: 30, isCausal: true } });
  add('negative scale', { opts: { scale: -0.2 } });
  add('gqa 8/2', { Hq: 8, Hk: 2, opts: { enableGqa: true } });
  add('mqa 4/1 causal D128', { Hq: 4, Hk: 1, D: 128, opts: { enableGqa: true, isCausal: true } });
  add('gqa 6/2 D256 window', { Hq: 6, Hk: 2, D: 256, Sq: 90, Sk: 150, opts: { enableGqa: true, window: [30, 5] } });
  add('dropout 0.17', { Sq: 130, Sk: 150, opts: { dropoutP: 0.17 } });
  add('dropout 0.5 causal gqa fp16', { dtype: 'float16', Hq: 4, Hk: 2, Sq: 97, Sk: 97, opts: { dropoutP: 0.5, isCausal: true, enableGqa: true } });
  add('dropout D256 softcap', { D: 256, Sq: 70, Sk: 90, opts: { dropoutP: 0.2, softcap: 10 } });
  add('strided bshd', { layout: 'bshd', Hq: 4, Hk: 4, Sq: 77, Sk: 99 });
  add('strided bshd D72 gqa causal', { layout: 'bshd', D: 72, Hq: 4, Hk: 2, Sq: 77, Sk: 99, opts: { enableGqa: true, isCausal: true } });
  add('misaligned base (element-wise path)', { misalign: true, Sq: 60, Sk: 80 });
  add('deterministic', { Sq: 300, Sk: 300, opts: { deterministic: true } });
  add('deterministic causal gqa D128', { Hq: 4, Hk: 2, D: 128, Sq: 257, Sk: 257, opts: { deterministic: true, isCausal: true, enableGqa: true } });
  add('deterministic D256 dropout alibi', { D: 256, Sq: 100, Sk: 120, alibi: 'h', opts: { deterministic: true, dropoutP: 0.1 } });
  add('deterministic fp16 D192 window lowerRight', { dtype: 'float16', D: 192, Sq: 90, Sk: 200, opts: { deterministic: true, window: [20, 0], alignment: 'lowerRight' } });
  add('varlen', { varlen: { q: [5, 17, 1, 64], k: [9, 17, 30, 130] } });
  add('varlen causal lowerRight gqa', { Hq: 4, Hk: 2, varlen: { q: [5, 130, 1], k: [9, 120, 300] }, opts: { isCausal: true, alignment: 'lowerRight', enableGqa: true } });
  add('varlen window dropout', { varlen: { q: [70, 3], k: [90, 200] }, opts: { window: [20, 3], dropoutP: 0.3 } });
  add('varlen deterministic alibi softcap', { D: 128, alibi: 'h', varlen: { q: [40, 7], k: [33, 90] }, opts: { deterministic: true, softcap: 4 } });
  // sequsedK: rows using all, some and none of their keys (the dK/dV of the rest must come out 0).
  add('sequsedK', { B: 3, Sq: 130, Sk: 300, used: [300, 0, 77] });
  add('sequsedK causal lowerRight gqa D128', { B: 3, Hq: 4, Hk: 2, D: 128, Sq: 100, Sk: 260, used: [1, 259, 0], opts: { isCausal: true, alignment: 'lowerRight', enableGqa: true } });
  add('sequsedK window alibi dropout lowerRight', { B: 2, Sq: 90, Sk: 200, alibi: 'bh', used: [150, 33], opts: { window: [20, 5], alignment: 'lowerRight', dropoutP: 0.2 } });
  add('sequsedK deterministic causal D256', { B: 2, D: 256, Sq: 70, Sk: 150, used: [0, 100], opts: { deterministic: true, isCausal: true } });
  add('sequsedK fp16 misaligned D72', { dtype: 'float16', misalign: true, D: 72, Sq: 60, Sk: 80, used: [13, 80] });
  add('varlen sequsedK causal lowerRight', { varlen: { q: [5, 130, 1, 40], k: [9, 120, 300, 60] }, used: [0, 100, 300, 7], opts: { isCausal: true, alignment: 'lowerRight' } });
  return only ? list.filter((c) => c.name.includes(only)) : list;
}

// ---------------------------------------------------------------- timings
// GPU ms per call: 2 warm-up calls, at most 500 timed.
const timeMs = (fn) => timeCall(fn, 300, { warmup: 2, maxN: 500 }).gpuMs;

function bench(quick) {
  const rows = [];
  for (const D of [64, 128, 256])
    for (const S of quick ? [4096] : [1024, 4096, 16384]) {
      const B = 16384 / S, H = 2048 / D;
      const o = { dtype: 'bfloat16', device: 'cuda' };
      // one set of inputs for both masks: the host-side randn of 4 x 33.5M elements is the slow part of a row
      const [q, k, v, g] = [1, 2, 3, 4].map((seed) => core.randn([B, H, S, D], { ...o, seed }));
      for (const causal of [false, true]) {
        const opts = { isCausal: causal, requiresGrad: true, backends: ['flash-cuda'] };
        const f = flops(B, H, S, S, D, causal);
        const tf = (mult, ms) => (mult * f) / (ms * 1e-3) / 1e12;
        const fwdbwd = timeMs(() => {
          const r = core.sdpaForward(q, k, v, opts);
          const gr = core.sdpaBackward(g, r);
          [r.out, r.logsumexp, gr.dq, gr.dk, gr.dv].forEach((t) => t.dispose());
        });
        const saved = core.sdpaForward(q, k, v, opts);
        const { backends: _b, ...rest } = opts;
        const p = core.normalizeParams(q, k, v, rest);
        const bwdOnly = (deterministic) =>
          timeMs(() => {
            const gr = flashBackward(p, saved, g, { deterministic });
            [gr.dq, gr.dk, gr.dv].forEach((t) => t.dispose());
          });
        const bwd = bwdOnly(false);
        const det = bwdOnly(true);
        const plan = backwardPlanFor(p);
        const row = { kind: 'grid', D, S, causal, B, H, kernel: plan.kernel, fwdbwdMs: fwdbwd, bwdMs: bwd, detBwdMs: det,
          fwdbwdTflops: tf(3.5, fwdbwd), bwdTflops: tf(2.5, bwd), detBwdTflops: tf(2.5, det) };
        rows.push(row);
        log(`  D=${D} S=${S} causal=${causal ? 1 : 0} B=${B} H=${H}: fwd+bwd ${fwdbwd.toFixed(3)} ms ${row.fwdbwdTflops.toFixed(1)} TFLOP/s; ` +
          `bwd ${bwd.toFixed(3)} ms ${row.bwdTflops.toFixed(1)}; deterministic bwd ${det.toFixed(3)} ms ${row.detBwdTflops.toFixed(1)} ` +
          `(${(det / bwd).toFixed(2)}x)  [${plan.kernel}]`);
        [saved.out, saved.logsumexp].forEach((t) => t.dispose());
      }
      [q, k, v, g].forEach((t) => t.dispose());
    }
  return rows;
}

// ---------------------------------------------------------------- main
const { props, info } = deviceHeader(flashCudaBackend, SELF);
for (const k of info?.backwardKernels ?? []) log(`  backward ${k}`);

let failed = 0;
if (!flag('--bench-only')) {
  const list = cases();
  log(`\n== ${list.length} backward checks against cpu-math in float64 (max |err| / max(1, max |ref|): bf16 ${TOL.bfloat16}, fp16 ${TOL.float16})`);
  failed += runChecks(list, runCase, (c, r) => {
    const f = (n) => `${n} ${r[n].err.toExponential(2)} (rel ${r[n].rel.toExponential(2)})${r[n].nan ? ` ${r[n].nan} NaN` : ''}`;
    return `${r.ok ? 'PASS' : 'FAIL'} ${c.name}: ${f('dq')}, ${f('dk')}, ${f('dv')}` +
      `${c.bitwise === undefined ? '' : c.bitwise ? ', bitwise reproducible' : ', NOT bitwise reproducible'}` +
      `${c.plan ? ` [${c.plan.kernel}]` : ''}`;
  });
}
if (!flag('--checks-only') && !SELF) {
  log('\n== backward timings (bf16; TFLOP/s: bwd = 2.5x fwd FLOPs, fwd+bwd = 3.5x; GPU time from CUDA events)');
  failed += runBench(bench, flag('--quick'), props);
}
process.exit(failed ? 1 : 0);
