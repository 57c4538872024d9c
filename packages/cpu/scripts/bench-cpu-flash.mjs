#!/usr/bin/env node
// Forward timings of cpu-flash (and, once per shape, cpu-math) as JSON lines, for comparison with
// torch's CPU SDPA (scripts/torch_cpu_bench.py prints the same fields for the same shapes).
//
//   pnpm --filter @attn/core --filter @attn/cpu build && (cd packages/cpu && pnpm build:native)
//   node packages/cpu/scripts/bench-cpu-flash.mjs [--threads 2,16] [--dtypes float32,bfloat16]
//       [--shape 1,8,1024,64] [--reps 20] [--math] [--torch torch.jsonl]
//
// FLOPs as FlashAttention counts them: 4*B*H*Sq*Sk*D, halved when causal. Timings are wall-clock
// medians of --reps calls after two warm-up calls. --torch reads torch_cpu_bench.py's output and
// adds the ratio cpu-flash / torch for each matching row.
import { readFileSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';

const { normalizeParams, randn } = await import('@attn/core');
const { createCpuFlashBackend, cpuMathBackend } = await import('../dist/index.js');

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}
const flag = (name) => process.argv.includes(`--${name}`);

const threadList = arg('threads', `2,${availableParallelism()}`).split(',').map(Number);
const dtypes = arg('dtypes', 'float32,bfloat16').split(',');
const [B, H, S, D] = arg('shape', '1,8,1024,64').split(',').map(Number);
const reps = Number(arg('reps', '20'));
const causals = arg('causal', 'false,true')
  .split(',')
  .map((x) => x === 'true');
const torchFile = arg('torch', null);

const torchRows = torchFile
  ? readFileSync(torchFile, 'utf8')
      .split('\n')
      .filter((l) => l.trim().startsWith('{'))
      .map((l) => JSON.parse(l))
  : [];

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
}

function time(fn, n) {
  for (let i = 0; i < 2; i++) fn();
  const ts = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    fn();
    ts.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return { ms: median(ts), min: Math.min(...ts) };
}

const machine = { cpu: cpus()[0]?.model ?? 'unknown', logicalCpus: availableParallelism() };
console.log(JSON.stringify({ machine, shape: { B, H, S, D }, threads: threadList, reps }));

for (const dtype of dtypes) {
  for (const causal of causals) {
    const q = randn([B, H, S, D], { dtype, seed: 1 });
    const k = randn([B, H, S, D], { dtype, seed: 2 });
    const v = randn([B, H, S, D], { dtype, seed: 3 });
    const p = normalizeParams(q, k, v, { isCausal: causal });
    const flops = (4 * B * H * S * S * D) / (causal ? 2 : 1);
    const row = (impl, threads, t, extra = {}) => {
      const r = {
        impl,
        dtype,
        causal,
        B,
        H,
        S,
        D,
        threads,
        ms: +t.ms.toFixed(3),
        msMin: +t.min.toFixed(3),
        gflops: +(flops / t.ms / 1e6).toFixed(1),
        ...extra,
      };
      const torch = torchRows.find(
        (x) =>
          x.dtype === dtype &&
          x.causal === causal &&
          x.threads === threads &&
          x.S === S &&
          x.D === D &&
          x.H === H &&
          x.B === B,
      );
      if (torch && impl === 'cpu-flash') r.vsTorch = +(r.gflops / torch.gflops).toFixed(2);
      console.log(JSON.stringify(r));
      return r;
    };
    let flash1 = null;
    for (const threads of threadList) {
      const b = createCpuFlashBackend({ threads });
      const info = b.buildInfo();
      const t = time(() => b.forward(p), reps);
      const r = row('cpu-flash', threads, t, { path: info[`forward.${dtype}`] });
      if (threads === threadList[0]) flash1 = r;
    }
    if (flag('math')) {
      // cpu-math is single-threaded float64 TypeScript: one timed call.
      const t = time(() => cpuMathBackend.forward(p), 1);
      const r = row('cpu-math', 1, t);
      console.log(
        JSON.stringify({
          ratio: 'cpu-flash/cpu-math',
          dtype,
          causal,
          flashThreads: flash1.threads,
          speedup: +(flash1.gflops / r.gflops).toFixed(1),
        }),
      );
    }
  }
}
