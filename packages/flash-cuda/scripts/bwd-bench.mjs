#!/usr/bin/env node
// The Hopper backward's two dK/dV kernels side by side, each forced through the kernel option
// ('sm90-bwd-tma-ws': TMA warp-specialized; 'sm90-bwd-cp-async': cp.async), on an sm90 GPU.
//
//   node packages/flash-cuda/scripts/bwd-bench.mjs [--dim 64,128] [--json out.json]   backward alone on the
//        standard grid (bf16, B*S = 16k, H*D = 2048, D 128 or the --dim list, S 1k/4k/16k, causal and not):
//        CUDA events around back-to-back flashBackward calls on one forward, each kernel in the default and the
//        deterministic mode, in TFLOP/s (backward = 2.5 x forward FLOPs, half of it causal); also the
//        deterministic / default time ratio.
//   node packages/flash-cuda/scripts/bwd-bench.mjs --check   small calls (causal, GQA, windows, tails) run by
//        both kernels in both modes: gradients compared with each other (max |diff| / max |ref|), every value
//        finite, the deterministic mode bitwise equal over two runs; exit 1 otherwise. Small enough for
//        compute-sanitizer (racecheck, memcheck).
import { writeFileSync } from 'node:fs';
import * as core from '@attn/core';
import * as cuda from '@attn/cuda';
import { backwardPlanFor, flashBackward, flashForward } from '@attn/flash-cuda';
import { loopTimer } from './lib/loop-timer.mjs';

const args = process.argv.slice(2);
const jsonAt = args.includes('--json') ? args[args.indexOf('--json') + 1] : null;
const dims = args.includes('--dim') ? args[args.indexOf('--dim') + 1].split(',').map(Number) : [128];
const KERNELS = ['sm90-bwd-tma-ws', 'sm90-bwd-cp-async'];
const o = { dtype: 'bfloat16', device: 'cuda' };

// `host`: four host tensors of B * S * H * D elements each, drawn once and uploaded per point (the grid keeps
// that product fixed, and drawing 33.5M values takes seconds per tensor); without it each tensor is drawn.
function problem({ B, Hq, Hk, Sq, Sk, D, opts }, seed, host = null) {
  const draw = (shape, i) => (host ? host[i].reshape(shape).to(o.device) : core.randn(shape, { ...o, seed: seed + i }));
  const q = draw([B, Hq, Sq, D], 0);
  const k = draw([B, Hk, Sk, D], 1);
  const v = draw([B, Hk, Sk, D], 2);
  const g = draw([B, Hq, Sq, D], 3);
  const p = core.normalizeParams(q, k, v, { requiresGrad: true, enableGqa: Hq !== Hk, ...opts });
  const saved = flashForward(p);
  return { q, k, v, g, p, saved, dispose: () => [q, k, v, g, saved.out, saved.logsumexp].forEach((t) => t.dispose()) };
}

const backward = (pr, kernel, deterministic) => flashBackward({ ...pr.p, kernel }, pr.saved, pr.g, { deterministic });

function relDiff(a, b) {
  const x = a.toFloat64Array(),
    y = b.toFloat64Array();
  let m = 0,
    s = 0;
  for (let i = 0; i < x.length; i++) {
    if (!Number.isFinite(x[i]) || !Number.isFinite(y[i])) return Infinity;
    m = Math.max(m, Math.abs(x[i] - y[i]));
    s = Math.max(s, Math.abs(y[i]));
  }
  return m / Math.max(s, 1e-30);
}

function checkMode() {
  const cases = [
    { name: 'causal gqa 4/2 S300', B: 1, Hq: 4, Hk: 2, Sq: 300, Sk: 300, D: 128, opts: { isCausal: true } },
    { name: 'plain B2 Sq200 Sk333', B: 2, Hq: 2, Hk: 2, Sq: 200, Sk: 333, D: 128, opts: {} },
    {
      name: 'causal lowerRight D72 Sq130 Sk70',
      B: 1,
      Hq: 2,
      Hk: 2,
      Sq: 130,
      Sk: 70,
      D: 72,
      opts: { isCausal: true, alignment: 'lowerRight' },
    },
    { name: 'window[30,4] mqa 3/1 S257', B: 1, Hq: 3, Hk: 1, Sq: 257, Sk: 257, D: 128, opts: { window: [30, 4] } },
    { name: 'D64 causal gqa 4/2 S300', B: 1, Hq: 4, Hk: 2, Sq: 300, Sk: 300, D: 64, opts: { isCausal: true } },
    { name: 'D64 plain B2 Sq200 Sk333', B: 2, Hq: 2, Hk: 2, Sq: 200, Sk: 333, D: 64, opts: {} },
  ];
  let ok = true;
  for (const [i, c] of cases.entries()) {
    const pr = problem(c, 100 + 10 * i);
    const plan = backwardPlanFor({ ...pr.p, kernel: KERNELS[0] }).kernel;
    const tma = backward(pr, KERNELS[0], false);
    const cp = backward(pr, KERNELS[1], false);
    const tmaDet = backward(pr, KERNELS[0], true);
    const tmaDet2 = backward(pr, KERNELS[0], true);
    const row = [];
    for (const key of ['dq', 'dk', 'dv']) {
      const d = relDiff(tma[key], cp[key]);
      const dd = relDiff(tmaDet[key], cp[key]);
      const again = tmaDet2[key].toFloat64Array();
      const same = tmaDet[key].toFloat64Array().every((x, j) => Object.is(x, again[j]));
      row.push(`${key} ${d.toExponential(2)} det ${dd.toExponential(2)}${same ? '' : ' NOT-REPRODUCIBLE'}`);
      if (!(d < 2e-2) || !(dd < 2e-2) || !same) ok = false;
    }
    console.log(`check ${c.name} (${plan}): tma vs cp.async ${row.join('; ')}`);
    for (const r of [tma, cp, tmaDet, tmaDet2]) for (const t of Object.values(r)) t.dispose();
    pr.dispose();
  }
  console.log(ok ? 'check: ok' : 'check: FAILED');
  if (!ok) process.exitCode = 1;
}

function benchMode() {
  const timer = loopTimer(cuda, { warmup: 5, calls: 20 });
  const rows = [];
  const props = cuda.deviceProperties(0);
  console.log(`device ${props.name}`);
  const host = [0, 1, 2, 3].map((i) => core.randn([16384 * 2048], { dtype: o.dtype, seed: 7 + i }));
  for (const D of dims)
    for (const S of [1024, 4096, 16384])
      for (const causal of [false, true]) {
        const H = 2048 / D,
          B = 16384 / S;
        const pr = problem({ B, Hq: H, Hk: H, Sq: S, Sk: S, D, opts: { isCausal: causal } }, 7, host);
        const flops = 2.5 * 4 * B * H * S * S * D * (causal ? 0.5 : 1);
        const row = { S, D, B, H, causal };
        for (const kernel of KERNELS)
          for (const det of [false, true]) {
            const us = timer(() => {
              const r = backward(pr, kernel, det);
              r.dq.dispose();
              r.dk.dispose();
              r.dv.dispose();
            });
            row[`${kernel}${det ? ' det' : ''}`] = { us, tflops: flops / us / 1e6 };
          }
        rows.push(row);
        pr.dispose();
        const f = (k) => `${row[k].tflops.toFixed(0)}`;
        console.log(
          `D${D} S${S}${causal ? ' causal' : ''}: tma-ws ${f(KERNELS[0])} (det ${f(`${KERNELS[0]} det`)}, ` +
            `${(row[`${KERNELS[0]} det`].us / row[KERNELS[0]].us).toFixed(2)}x time), cp.async ${f(KERNELS[1])} ` +
            `(det ${f(`${KERNELS[1]} det`)}, ${(row[`${KERNELS[1]} det`].us / row[KERNELS[1]].us).toFixed(2)}x time) ` +
            `TFLOP/s; tma-ws / cp.async ${(row[KERNELS[1]].us / row[KERNELS[0]].us).toFixed(2)}x`,
        );
      }
  if (jsonAt) writeFileSync(jsonAt, JSON.stringify({ device: props.name, rows }, null, 2));
}

if (args.includes('--check')) checkMode();
else benchMode();
