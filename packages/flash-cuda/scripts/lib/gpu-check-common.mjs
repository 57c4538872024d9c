// Helpers shared by gpu-check.mjs (forward) and gpu-check-bwd.mjs (backward): argument parsing, seeded
// inputs, allocator poisoning, timing, and the main flow (device header, the checks loop, the timings).
import { performance } from 'node:perf_hooks';
import * as core from '@attn/core';
import * as cuda from '@attn/cuda';

export const log = (...a) => console.log(...a);

/** The command line: flags, `--only NAME`, and whether this is a `--self-test` run (cpu-math on the CPU). */
export function parseArgs(argv = process.argv.slice(2)) {
  const args = argv;
  const flag = (f) => args.includes(f);
  const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : null;
  const SELF = flag('--self-test');
  const DEV = SELF ? 'cpu' : 'cuda';
  const BACKEND = SELF ? 'cpu-math' : 'flash-cuda';
  return { args, flag, only, SELF, DEV, BACKEND };
}

// ---------------------------------------------------------------- inputs
/** A seeded standard-normal generator. */
export function rng(seed) {
  let s = seed >>> 0;
  const u = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(u() + 1e-12)) * Math.cos(2 * Math.PI * u());
}

/** Hand the caching allocator memory full of NaN bytes, so an unwritten output element shows (no-op in self-test). */
export function poison(bytes, self) {
  if (self) return;
  try {
    const t = core.empty([Math.ceil(bytes / 4) + 64], { dtype: 'float32', device: 'cuda' });
    cuda.fill(t.storage, 0, t.storage.bytes, 0xff);
    t.dispose();
  } catch {
    /* best effort */
  }
}

// ---------------------------------------------------------------- timings
/** FlashAttention's FLOP count of the forward: 4*B*H*Sq*Sk*D, halved when causal. */
export function flops(B, H, Sq, Sk, D, causal) {
  return (4 * B * H * Sq * Sk * D) / (causal ? 2 : 1);
}

/** Time fn: `warmup` calls, then enough calls for about minMs (at most maxN), timed by CUDA events and wall clock. */
export function timeCall(fn, minMs = 300, { warmup = 3, maxN = 2000 } = {}) {
  for (let i = 0; i < warmup; i++) fn();
  cuda.synchronize(0);
  let t0 = performance.now();
  fn();
  cuda.synchronize(0);
  const one = performance.now() - t0;
  const n = Math.max(3, Math.min(maxN, Math.ceil(minMs / Math.max(one, 1e-3))));
  const start = new cuda.Event();
  const end = new cuda.Event();
  t0 = performance.now();
  start.record();
  for (let i = 0; i < n; i++) fn();
  end.record();
  end.synchronize();
  const wall = (performance.now() - t0) / n;
  const gpu = start.elapsedMs(end) / n;
  start.dispose();
  end.dispose();
  return { gpuMs: gpu, wallMs: wall, n };
}

// ---------------------------------------------------------------- main
const errorText = (e) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e));

/** Log flash-cuda's availability (exit 2 without it, unless self-testing) and the device; returns its properties and build info. */
export function deviceHeader(backend, self) {
  const av = backend.availability();
  log(`flash-cuda availability: ${av.ok ? 'ok' : av.reason}`);
  if (!av.ok && !self) process.exit(2);
  const props = self ? { name: 'cpu (self-test)' } : cuda.deviceProperties(0);
  if (!self) log(`device: ${props.name} sm_${props.major}${props.minor}, ${props.multiProcessorCount} SMs, smem opt-in ${props.sharedMemoryPerBlockOptin}`);
  const info = self ? null : backend.buildInfo?.();
  return { props, info };
}

/** Run each case on its own, logging describe(c, r) and the time taken; returns the number failed. */
export function runChecks(list, runCase, describe) {
  let failed = 0;
  for (const c of list) {
    const t0 = performance.now();
    try {
      const r = runCase(c);
      if (!r.ok) failed++;
      log(`${describe(c, r)} (${(performance.now() - t0).toFixed(0)} ms)`);
    } catch (e) {
      failed++;
      log(`ERROR ${c.name}: ${errorText(e)}`);
    }
  }
  log(`\n${list.length - failed} passed, ${failed} failed`);
  return failed;
}

/** Run the timings and log their JSON; returns the number failed (0 or 1). */
export function runBench(bench, quick, props) {
  try {
    const rows = bench(quick);
    log(`\nJSON ${JSON.stringify({ device: props.name, rows })}`);
    return 0;
  } catch (e) {
    log(`ERROR bench: ${errorText(e)}`);
    return 1;
  }
}

// ---------------------------------------------------------------- the cases
/** A case list and its add(name, overrides) (defaults: bf16, B 2, 3 heads, 131 x 131, D 64, bhsd), seeded with
 * both scripts' head-dim grid: each dtype and D in 32..256, plain and causal. */
export function caseListWithHeadDimGrid() {
  const list = [];
  const add = (name, c) => list.push({ name, dtype: 'bfloat16', B: 2, Hq: 3, Hk: 3, Sq: 131, Sk: 131, D: 64, layout: 'bhsd', opts: {}, ...c });
  for (const dtype of ['bfloat16', 'float16']) {
    for (const D of [32, 64, 96, 128, 160, 192, 224, 256]) {
      add(`${dtype} D${D}`, { dtype, D, Sq: 131, Sk: 197 });
      add(`${dtype} D${D} causal`, { dtype, D, Sq: 197, Sk: 197, opts: { isCausal: true } });
    }
  }
  return { list, add };
}
