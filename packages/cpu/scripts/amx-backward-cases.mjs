#!/usr/bin/env node
// Crash locator for the cpu-flash backward on one SIMD level (default amx): the cases that
// src/flash/backward.test.ts runs there (its 'auto' cases too: auto is amx on an AMX CPU), each in a
// child process, at the tests' thread counts (every bf16 case at 1, 2, 3 and 16), through the sync call, the async
// call (backwardAsync on a libuv worker) and the sync call with the thread count passed to the kernel as
// is (the backend otherwise lowers it for small calls), forward-then-backward and backward-first (the
// backward the first tile user on its threads, then a forward, then a backward again). Then the whole
// list in one process per entry, in the test file's order, as a vitest worker runs it. Each case's name
// is printed before it runs and its exit code or signal after, so a crash names its case; the gradients'
// digests must agree across thread counts, entries and orders (the backward is bitwise reproducible).
//
// From the repository root, after building the TypeScript and the addon
// (NX_DAEMON=false pnpm exec nx run-many -t build --projects=@attn/cpu;
//  ATTN_BUILD_JOBS=16 node packages/native/bin/attn-native.mjs build ./packages/cpu):
//   node packages/cpu/scripts/amx-backward-cases.mjs [amx|avx512bf16|avx512|...] [--filter REGEX] [--list]
//       [--timeout SECONDS] [--no-sequence]
//
// Exit status: 0 when every case exits 0 and the digests agree, 1 otherwise, 2 when the level does not
// run here.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const { normalizeParams, normalizeVarlenParams, randn, tensor } = await import('@attn/core');
const { createCpuFlashBackend } = await import('../dist/index.js');

const SCRIPT = fileURLToPath(import.meta.url);
const argv = process.argv.slice(2);
const option = (name, fallback) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : fallback;
};
const flag = (name) => argv.includes(`--${name}`);
const WITH_VALUE = new Set(['--filter', '--timeout', '--child']);
const level = argv.find((a, i) => !a.startsWith('--') && !WITH_VALUE.has(argv[i - 1])) ?? 'amx';

// ---- inputs, as src/flash/testing.ts and backward.test.ts make them ----

const odd = { B: 2, Hq: 3, Hk: 3, Sq: 37, Sk: 75, D: 13, Dv: 7 };
const gqa = { B: 1, Hq: 4, Hk: 2, Sq: 70, Sk: 130, D: 32, Dv: 24 };
const f32 = (values) => tensor(values, [values.length], { dtype: 'float32' });
const additive = (shape, dtype = 'float32') => {
  const n = shape.reduce((a, b) => a * b, 1);
  return tensor(
    Array.from({ length: n }, (_, i) => (i % 17 === 3 ? -Infinity : Math.cos(i) * 1.5)),
    shape,
    { dtype },
  );
};
const boolMask = () =>
  tensor(
    Array.from({ length: 37 * 75 }, (_, i) => (i % 7 === 0 ? 0 : 1)),
    [37, 75],
    { dtype: 'bool' },
  );

function params(s, dtype, opts, seed) {
  const make = (h, n, d, k) => randn([s.B, h, n, d], { dtype, seed: seed * 3 + k });
  const q = make(s.Hq, s.Sq, s.D, 0);
  const k = make(s.Hk, s.Sk, s.D, 1);
  const v = make(s.Hk, s.Sk, s.Dv, 2);
  return normalizeParams(q, k, v, { enableGqa: s.Hq !== s.Hk, ...opts });
}

function varlenParams(lensQ, lensK, heads, dtype, opts, seed = 1) {
  const cu = (lens) => lens.reduce((a, n) => [...a, a[a.length - 1] + n], [0]);
  const cuQ = cu(lensQ);
  const cuK = cu(lensK);
  const q = randn([cuQ.at(-1), heads.Hq, heads.D], { dtype, seed: seed * 3 });
  const k = randn([cuK.at(-1), heads.Hk, heads.D], { dtype, seed: seed * 3 + 1 });
  const v = randn([cuK.at(-1), heads.Hk, heads.Dv], { dtype, seed: seed * 3 + 2 });
  return normalizeVarlenParams(q, k, v, {
    enableGqa: heads.Hq !== heads.Hk,
    ...opts,
    cuSeqlensQ: tensor(cuQ, [cuQ.length], { dtype: 'int32' }),
    cuSeqlensK: tensor(cuK, [cuK.length], { dtype: 'int32' }),
    maxSeqlenQ: Math.max(...lensQ),
    maxSeqlenK: Math.max(...lensK),
  });
}

// Options by name (tensors cannot cross the process boundary; each side rebuilds them).
const OPTS = {
  none: () => ({}),
  gqaCausalLowerRight: () => ({ isCausal: true, alignment: 'lowerRight' }),
  window: () => ({ window: [6, 3] }),
  alibiSoftcap: () => ({ alibiSlopes: f32([0.5, 0.25, 0.125, 0.0625]), softcap: 4 }),
  dropout: () => ({ dropoutP: 0.25, dropoutSeed: 0xdeadbeefcafef00dn, dropoutOffset: 3 }),
  boolMask: () => ({ attnMask: boolMask() }),
  maskFull: (dt) => ({ attnMask: additive([2, 3, 37, 75], dt) }),
  maskSqSk: (dt) => ({ attnMask: additive([37, 75], dt) }),
  maskB1Sq1: (dt) => ({ attnMask: additive([2, 1, 37, 1], dt) }),
  mask1Hq1SkCausal: (dt) => ({ attnMask: additive([1, 4, 1, 130], dt), isCausal: true }),
  causalDropout: () => ({ isCausal: true, dropoutP: 0.25, dropoutSeed: 7n }),
  causal: () => ({ isCausal: true }),
  softcap3: () => ({ softcap: 3 }),
  causalDropout01: () => ({ isCausal: true, dropoutP: 0.1, dropoutSeed: 1n }),
};

// The base cases: name, dtype, shape (or 'varlen'), options (OPTS key), input seed, gradOut seed, thread
// counts, and savedFrom for the test that takes its saved forward from another level (avx512).
const fp32Cases = [
  ['plain odd shape', odd, 'none'],
  ['one key', { ...odd, Sk: 1 }, 'none'],
  ['gqa causal lower-right', gqa, 'gqaCausalLowerRight'],
  ['window', { ...odd, Sq: 75 }, 'window'],
  ['alibi + softcap', gqa, 'alibiSoftcap'],
  ['dropout', gqa, 'dropout'],
  ['bool mask', odd, 'boolMask'],
  ['additive mask, full shape', odd, 'maskFull'],
  ['additive mask [Sq, Sk]', odd, 'maskSqSk'],
  ['additive mask [B, 1, Sq, 1]', odd, 'maskB1Sq1'],
  ['additive mask [1, Hq, 1, Sk] + causal', gqa, 'mask1Hq1SkCausal'],
];
const longKeys = [
  ['Delta kept tiles (Sk 8190)', { B: 1, Hq: 2, Hk: 1, Sq: 70, Sk: 8190, D: 16, Dv: 8 }, 'gqaCausalLowerRight'],
  ['Delta own pass (Sk 8250)', { B: 1, Hq: 2, Hk: 1, Sq: 70, Sk: 8250, D: 16, Dv: 8 }, 'gqaCausalLowerRight'],
  ['softcap, Delta kept tiles (Sk 5400)', { B: 1, Hq: 2, Hk: 1, Sq: 9, Sk: 5400, D: 16, Dv: 8 }, 'softcap3'],
  ['softcap, Delta own pass (Sk 5500)', { B: 1, Hq: 2, Hk: 1, Sq: 9, Sk: 5500, D: 16, Dv: 8 }, 'softcap3'],
];
const schedules = [
  ['schedules: plain odd shape', odd, 'none'],
  ['schedules: gqa causal, dropout', gqa, 'causalDropout'],
  ['schedules: gqa causal, dropout, S 320', { B: 1, Hq: 4, Hk: 2, Sq: 320, Sk: 320, D: 64, Dv: 64 }, 'causalDropout'],
  ['schedules: alibi + softcap', gqa, 'alibiSoftcap'],
  ['schedules: additive mask [B, 1, Sq, 1]', odd, 'maskB1Sq1'],
  ['schedules: Delta in its own pass', { B: 1, Hq: 2, Hk: 1, Sq: 70, Sk: 8250, D: 16, Dv: 8 }, 'causal'],
  ['schedules: D128 gqa causal', { B: 1, Hq: 4, Hk: 2, Sq: 150, Sk: 200, D: 128, Dv: 128 }, 'causal'],
];
const ALL_THREADS = [1, 2, 3, 16];

const BASE = [
  ...fp32Cases.map(([n, s, o]) => ({
    name: n,
    dtype: 'float32',
    shape: s,
    opts: o,
    seed: 3,
    gradSeed: 5,
    threads: [2],
  })),
  ...['float16', 'bfloat16'].map((dt) => ({
    name: 'gqa causal with additive mask',
    dtype: dt,
    shape: gqa,
    opts: 'mask1Hq1SkCausal',
    maskDtype: dt,
    seed: 4,
    gradSeed: 5,
    threads: [2],
  })),
  ...['float16', 'bfloat16'].flatMap((dt) =>
    longKeys.map(([n, s, o]) => ({ name: n, dtype: dt, shape: s, opts: o, seed: 6, gradSeed: 5, threads: [2] })),
  ),
  {
    name: 'varlen, empty sides, causal lower-right, dropout',
    dtype: 'float32',
    shape: 'varlen',
    opts: 'none',
    seed: 1,
    gradSeed: 5,
    threads: [2],
  },
  ...['float32', 'float16', 'bfloat16'].flatMap((dt) =>
    schedules.map(([n, s, o]) => ({
      name: n,
      dtype: dt,
      shape: s,
      opts: o,
      seed: 9,
      gradSeed: 10,
      threads: dt === 'bfloat16' ? ALL_THREADS : [1, 16],
      // backward.test.ts gives 16-bit schedule cases a bf16/fp16 [2, 1, 37, 1] mask.
      maskDtype: dt === 'float32' ? 'float32' : dt,
    })),
  ),
  {
    name: 'bf16 pairs vs the avx512 forward',
    dtype: 'bfloat16',
    shape: gqa,
    opts: 'causal',
    seed: 11,
    gradSeed: 12,
    threads: [2],
    savedFrom: 'avx512',
  },
  {
    name: 'reproducible fp32 dropout',
    dtype: 'float32',
    shape: gqa,
    opts: 'causalDropout01',
    seed: 2,
    gradSeed: 8,
    threads: [1, 2],
  },
  {
    name: 'reproducible bf16 (kept tiles)',
    dtype: 'bfloat16',
    shape: gqa,
    opts: 'causal',
    seed: 2,
    gradSeed: 8,
    threads: [1, 3],
  },
];

// Entries and orders: every bf16 case (the AMX path) takes all; the others the tests' own (sync, forward first).
const ENTRIES = ['sync', 'async', 'exact'];
const ORDERS = ['fwd-bwd', 'bwd-first'];

function expand() {
  const out = [];
  for (const [bi, b] of BASE.entries()) {
    const all = b.dtype === 'bfloat16';
    for (const threads of b.threads)
      for (const entry of all ? ENTRIES : ['sync'])
        for (const order of all && !b.savedFrom ? ORDERS : ['fwd-bwd'])
          out.push({
            base: bi,
            threads,
            entry,
            order,
            id: `${b.dtype} ${b.name} | threads ${threads} | ${entry} | ${order}`,
          });
  }
  return out;
}

// ---- the child: one case, or the whole list in order ----

function buildParams(b) {
  if (b.shape === 'varlen')
    return varlenParams([37, 0, 130, 5], [70, 9, 140, 0], { Hq: 4, Hk: 2, D: 24, Dv: 16 }, b.dtype, {
      isCausal: true,
      alignment: 'lowerRight',
      dropoutP: 0.2,
      dropoutSeed: 5n,
      requiresGrad: true,
    });
  return params(b.shape, b.dtype, { ...OPTS[b.opts](b.maskDtype ?? 'float32'), requiresGrad: true }, b.seed);
}

function outShape(p) {
  return p.varlen ? [...p.query.shape.slice(0, 2), p.headDimV] : [p.batch, p.headsQ, p.seqQ, p.headDimV];
}

const bytes = (a) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

// The addon's exports object (the one the backend calls; require's cache gives the same object), with
// forward / backward wrapped: 'exact' passes the case's thread count as is, 'async' runs backwardAsync and
// keeps its promise; both record the descriptor (its gradient buffers are the digest's input).
function instrument(addonPath) {
  const native = createRequire(import.meta.url)(addonPath);
  const orig = { forward: native.forward, backward: native.backward, backwardAsync: native.backwardAsync };
  const state = { mode: 'sync', threads: 0, pending: null, desc: null, native };
  native.forward = (desc) => orig.forward(state.mode === 'exact' ? { ...desc, threads: state.threads } : desc);
  native.backward = (desc) => {
    const d = state.mode === 'exact' ? { ...desc, threads: state.threads } : desc;
    state.desc = d;
    if (state.mode === 'async') {
      state.pending = orig.backwardAsync(d);
      return undefined;
    }
    return orig.backward(d);
  };
  return state;
}

async function runCase(c, state, log) {
  const b = BASE[c.base];
  const p = buildParams(b);
  const gradOut = randn(outShape(p), { dtype: b.dtype, seed: b.gradSeed });
  const flash = createCpuFlashBackend({ threads: c.threads, isa: level });
  const other = createCpuFlashBackend({ threads: c.threads, isa: fallbackLevel() });
  state.mode = c.entry;
  state.threads = c.threads;
  const forward = async (backend, name) => {
    log(`forward on ${name} (${c.entry})`);
    return c.entry === 'async' ? backend.forwardAsync(p) : backend.forward(p);
  };
  const backward = async (saved) => {
    log(`backward on ${level} (${c.entry})`);
    state.pending = null;
    flash.backward(p, saved, gradOut);
    if (state.pending) await state.pending;
    const d = state.desc;
    const h = createHash('sha256');
    for (const v of [d.dq, d.dk, d.dv]) h.update(bytes(v.data));
    if (d.dbias) h.update(bytes(d.dbias.data));
    return h.digest('hex').slice(0, 16);
  };
  const digests = {};
  if (b.savedFrom || c.order === 'bwd-first') {
    // The backward first on these threads (its forward from the other level), then the level's forward.
    const first = await backward(await forward(other, fallbackLevel()));
    if (b.savedFrom) digests.main = first;
    else digests.first = first;
  }
  if (!b.savedFrom) digests.main = await backward(await forward(flash, level));
  return digests;
}

// The level that takes the forward the backward-first order saves (and the bf16-pairs test's): avx512 where
// it runs (as in backward.test.ts), else another.
let fallback;
function fallbackLevel() {
  const runnable = createCpuFlashBackend().buildInfo().runnableIsas ?? [];
  fallback ??= ['avx512', 'avx2', 'neon', 'portable'].find((l) => runnable.includes(l) && l !== level) ?? 'portable';
  return fallback;
}

async function child(spec) {
  const info = createCpuFlashBackend().buildInfo(level);
  const state = instrument(info.addon);
  const cases = spec.sequence ? expand().filter((c) => c.entry === spec.sequence) : [expand()[spec.index]];
  for (const c of cases) {
    // Synchronous on Linux pipes: a crash still leaves the step that was running in the parent's output.
    const log = (...a) => process.stdout.write(`  step: ${c.id}: ${a.join(' ')}\n`);
    const digests = await runCase(c, state, log);
    // The thread count the kernel got (the backend lowers it for small calls, except 'exact') and the pool's size.
    const extra = { kernelThreads: state.desc.threads, poolThreads: state.native.buildInfo(level).poolThreads };
    process.stdout.write(`RESULT ${JSON.stringify({ id: c.id, ...digests, ...extra })}\n`);
  }
}

// ---- the parent ----

function describeExit(r) {
  if (r.error?.code === 'ETIMEDOUT') return `TIMEOUT (killed with ${r.signal})`;
  if (r.signal) return `CRASH: killed by ${r.signal}`;
  if (r.status !== 0) return `FAIL: exit code ${r.status}`;
  return 'ok';
}

async function parent() {
  const backend = createCpuFlashBackend();
  const info = backend.buildInfo();
  if (!info.native) {
    console.log(`no native addon: ${info.reason}`);
    process.exit(2);
  }
  if (!info.runnableIsas.includes(level)) {
    console.log(`level ${level} does not run here (runnable: ${info.runnableIsas.join(', ')})`);
    process.exit(2);
  }
  const li = backend.buildInfo(level);
  console.log(
    `cpu-flash backward cases on level ${level}: addon ${li.addon} (${li.addonOrigin}), compiler ${li.compiler}, ` +
      `backward.bfloat16 ${li['backward.bfloat16']}, forward.bfloat16 ${li['forward.bfloat16']}`,
  );
  const filter = option('filter', null);
  const re = filter ? new RegExp(filter) : null;
  const timeout = Number(option('timeout', '300')) * 1000;
  const cases = expand()
    .map((c, index) => ({ ...c, index }))
    .filter((c) => !re || re.test(c.id));
  const runs = [
    ...cases.map((c) => ({ label: c.id, spec: { index: c.index } })),
    ...(flag('no-sequence') || re
      ? []
      : ENTRIES.map((e) => ({
          label: `every case in one process, the test file's order (${e})`,
          spec: { sequence: e },
        }))),
  ];
  if (flag('list')) {
    for (const r of runs) console.log(r.label);
    return;
  }
  const failures = [];
  const results = [];
  for (const [i, r] of runs.entries()) {
    console.log(`[${i + 1}/${runs.length}] RUN  ${r.label}`);
    const res = spawnSync(process.execPath, [SCRIPT, level, '--child', JSON.stringify(r.spec)], {
      encoding: 'utf8',
      timeout,
      killSignal: 'SIGKILL',
      maxBuffer: 64 << 20,
    });
    const lines = (res.stdout ?? '').split('\n').filter(Boolean);
    for (const l of lines) if (l.startsWith('RESULT ')) results.push({ run: r.label, ...JSON.parse(l.slice(7)) });
    const verdict = describeExit(res);
    console.log(`[${i + 1}/${runs.length}] ${verdict === 'ok' ? 'OK  ' : 'FAIL'} ${r.label}: ${verdict}`);
    if (verdict !== 'ok') {
      const steps = lines.filter((l) => l.startsWith('  step: '));
      if (steps.length) console.log(`    last step started: ${steps.at(-1).slice(8)}`);
      const err = (res.stderr ?? '').trim().split('\n').slice(-15).join('\n    ');
      if (err) console.log(`    stderr:\n    ${err}`);
      failures.push(`${r.label}: ${verdict}${steps.length ? ` (last step: ${steps.at(-1).slice(8)})` : ''}`);
    }
  }
  // Digests: one per case across thread counts, entries and orders (bwd-first's 'main' is a backward on
  // the level's forward, as fwd-bwd's), and the same in the one-process runs.
  const groups = new Map();
  const add = (key, digest, r) => {
    if (!groups.has(key)) groups.set(key, new Map());
    const g = groups.get(key);
    if (!g.has(digest)) g.set(digest, []);
    g.get(digest).push(
      `${r.id.split(' | ').slice(1).join(' | ')}${r.run.startsWith('every case') ? ` [${r.run}]` : ''}`,
    );
  };
  for (const r of results) {
    const key = r.id.split(' | ')[0];
    add(key, r.main, r);
    if (r.first) add(`${key} (backward on the ${fallbackLevel()} forward)`, r.first, r);
  }
  for (const [key, g] of groups) {
    if (g.size <= 1) continue;
    const parts = [...g].map(([d, who]) => `${d}: ${who.join('; ')}`);
    failures.push(`${key}: gradients differ across runs:\n      ${parts.join('\n      ')}`);
  }
  console.log(`\n${runs.length} runs, ${results.length} results, ${groups.size} cases compared`);
  if (failures.length) {
    console.log(`${failures.length} failure(s):`);
    for (const f of failures) console.log(`  - ${f}`);
    process.exit(1);
  }
  console.log('all ok');
}

const ci = argv.indexOf('--child');
if (ci >= 0) await child(JSON.parse(argv[ci + 1]));
else await parent();
