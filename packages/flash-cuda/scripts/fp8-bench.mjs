#!/usr/bin/env node
// The fp8 (float8_e4m3) forward beside the bf16 forward, both through the public sdpa call on an sm90 GPU.
//
//   node packages/flash-cuda/scripts/fp8-bench.mjs [--dim 128] [--rounds 2] [--json out.json]
//        the standard grid (B*S = 16k, H*D = 2048, S 1k/4k/16k, causal and not): CUDA events around back-to-back
//        sdpa() calls (each output disposed, as a user's loop does), in TFLOP/s (4*B*H*S^2*D, half of it causal),
//        and fp8 over bf16 per point; each round times both dtypes again (a number is reported only if the
//        rounds agree). The fp8 inputs are random e4m3 bytes (no NaN) with descale 1/64.
import { writeFileSync } from 'node:fs';
import * as core from '@attn/core';
import * as cuda from '@attn/cuda';
import '@attn/flash-cuda';
import { loopTimer } from './lib/loop-timer.mjs';

const args = process.argv.slice(2);
const arg = (name, dflt) => (args.includes(name) ? args[args.indexOf(name) + 1] : dflt);
const jsonAt = arg('--json', null);
const D = Number(arg('--dim', '128'));
const rounds = Number(arg('--rounds', '2'));
const H = 2048 / D;

// B*S*H*D bytes of e4m3 drawn once: exponent field 0..14 and any mantissa (never 0x7f / 0xff, e4m3's NaN).
function randomE4m3(n, seed) {
  const bits = new Uint8Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    bits[i] = (s >>> 24) & 0xf7;
  }
  return bits;
}

const n = 16384 * 2048;
const host = [1, 2, 3].map((seed) => randomE4m3(n, seed));
const timer = loopTimer(cuda, { warmup: 3, calls: 20 });
const rows = [];
for (const S of [1024, 4096, 16384]) {
  const B = 16384 / S;
  const shape = [B, H, S, D];
  const [q8, k8, v8] = host.map((bits) => core.tensor(bits, shape, { dtype: 'float8_e4m3', device: 'cuda' }));
  const [q, k, v] = [11, 12, 13].map((seed) => core.randn(shape, { dtype: 'bfloat16', device: 'cuda', seed }));
  for (const causal of [false, true]) {
    const fp8Opts = { isCausal: causal, descale: { q: 1 / 64, k: 1 / 64, v: 1 / 64 } };
    const flops = 4 * B * H * S * S * D * (causal ? 0.5 : 1);
    const tf = (us) => flops / us / 1e6;
    const times = [];
    for (let r = 0; r < rounds; r++) {
      const bf16 = timer(() => core.sdpa(q, k, v, { isCausal: causal }).dispose());
      const fp8 = timer(() => core.sdpa(q8, k8, v8, fp8Opts).dispose());
      times.push({ bf16, fp8 });
    }
    const row = {
      S,
      B,
      H,
      D,
      causal,
      rounds: times.map((t) => ({
        bf16Us: +t.bf16.toFixed(1),
        fp8Us: +t.fp8.toFixed(1),
        bf16Tflops: +tf(t.bf16).toFixed(0),
        fp8Tflops: +tf(t.fp8).toFixed(0),
        fp8OverBf16: +(t.bf16 / t.fp8).toFixed(3),
      })),
    };
    rows.push(row);
    console.log(
      `S ${String(S).padStart(5)} causal ${causal ? 1 : 0}: ` +
        row.rounds
          .map((t) => `bf16 ${t.bf16Tflops} / fp8 ${t.fp8Tflops} TFLOP/s (fp8 ${t.fp8OverBf16}x)`)
          .join('  |  '),
    );
  }
  [q8, k8, v8, q, k, v].forEach((t) => t.dispose());
}
if (jsonAt) {
  const props = cuda.deviceProperties(0);
  writeFileSync(
    jsonAt,
    JSON.stringify({ device: props.name, method: 'CUDA events around 20 sdpa calls after 3', rows }, null, 2),
  );
}
