#!/usr/bin/env node
/* global process, console */
// The first GPU run of 'memeff-cuda', self-contained: many shapes, dtypes and features, forward and
// backward, each compared with cpu-math in float64 (per-case errors printed, errors caught per case),
// then timings. Runs the built packages (dist/ and build/): on the GPU host, after gpu/pack.sh,
//   bash .gpu/run.sh node packages/cutlass-memeff/scripts/gpu-check.mjs [--quick] [--no-time] [--only SUBSTR]
// Exit status 1 when any case fails. Env ATTN_CHECK_SEED fixes the input seed (printed either way).
// --cpu-selftest runs the same cases with cpu-math (in the case dtype, on the CPU) standing in for
// memeff-cuda: a check of this script itself on a machine without a GPU.
// --digest adds a 32-bit FNV-1a of each case's forward out and lse values (fwd=...): with ATTN_CHECK_SEED
// fixed, two runs of different builds (e.g. with and without sm_90a, whose fp32 forwards are different
// kernels) print the same digests where their forwards are bit-identical.
import { performance } from 'node:perf_hooks';
import { normalizeParams, normalizeVarlenParams, randn, sdpaBackward, sdpaForward, sdpaVarlen, tensor } from '@attn/core';
import { allocate, deviceProperties, fill, synchronize } from '@attn/cuda';
import '@attn/cpu';
import { memeffCudaBackend, runBackward, runForward } from '@attn/cutlass-memeff';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const noTime = argv.includes('--no-time');
const only = argv.includes('--only') ? argv[argv.indexOf('--only') + 1] : null;
const selftest = argv.includes('--cpu-selftest');
const digest = argv.includes('--digest');
const seed = BigInt(process.env.ATTN_CHECK_SEED ?? Math.floor(Math.random() * 2 ** 31));
console.log(`memeff-cuda gpu-check, seed ${seed} (ATTN_CHECK_SEED to repeat)`);

const avail = memeffCudaBackend.availability();
if (!avail.ok && !selftest) {
  console.log(`SKIP: memeff-cuda unavailable: ${avail.reason}`);
  process.exit(2);
}
if (!selftest) {
  const props = deviceProperties(0);
  console.log(`device: ${props.name} sm_${props.major}${props.minor}, ${props.multiProcessorCount} SMs`);
  console.log(`build: ${JSON.stringify(memeffCudaBackend.buildInfo())}`);
}

// Tolerances on max |gpu - ref| / max(1, max |ref|): the rounding of the output dtype plus
// accumulation; the conformance suite applies the exact rule, this is a first screen.
const TOL = { float32: 2e-5, float16: 4e-3, bfloat16: 3e-2 };
const GRAD_TOL = { float32: 1e-4, float16: 1.5e-2, bfloat16: 8e-2 };

let caseSeed = seed;
const nextSeed = () => (caseSeed = (caseSeed * 6364136223846793005n + 1442695040888963407n) & 0xffffffffn);

/** Random [shape] in dtype on the CPU; the GPU copy and the float64 reference share its rounded values. */
function input(shape, dtype, scale = 1) {
  const t = randn(shape, { dtype: 'float64', seed: nextSeed() });
  const vals = t.toFloat64Array().map((x) => x * scale);
  return tensor(vals, shape, { dtype });
}

function maxAbs(a) {
  let m = 0;
  for (const x of a) if (Number.isFinite(x)) m = Math.max(m, Math.abs(x));
  return m;
}

/** Relative max error; NaN, or a non-finite value where the reference is finite (or the reverse), is Infinity. */
function relErr(got, ref) {
  let e = 0;
  for (let i = 0; i < ref.length; i++) {
    const g = got[i], r = ref[i];
    if (Number.isNaN(g)) return Infinity;
    if (!Number.isFinite(r) || !Number.isFinite(g)) {
      if (g !== r) return Infinity;
      continue;
    }
    e = Math.max(e, Math.abs(g - r));
  }
  return e / Math.max(1, maxAbs(ref));
}

// Fill freed memory with 0xFF (NaN in every float dtype) so unwritten outputs show up as NaN.
function poison() {
  const s = allocate(64 << 20, 0);
  fill(s, 0, s.bytes, 0xff);
  s.dispose();
}

function bshd(t) {
  // The same values in a [B, S, H, D] buffer, seen as [B, H, S, D] (strided, last dim contiguous).
  return t.transpose(1, 2).contiguous().transpose(1, 2);
}

const cumulative = (lens) => tensor([0, ...lens.map((_, i) => lens.slice(0, i + 1).reduce((a, b) => a + b, 0))], [lens.length + 1], { dtype: 'int32' });

function makeCase(c) {
  const { dtype, B, Hq, Hk = Hq, Sq, Sk, D, Dv = D } = c;
  // Varlen (c.varlen: per-sequence lengths): packed [total, H, D]; Sq / Sk are the longest.
  const total = (lens) => lens.reduce((a, b) => a + b, 0);
  const qs = c.varlen ? [total(c.varlen.q), Hq, D] : [B, Hq, Sq, D];
  const ks = c.varlen ? [total(c.varlen.k), Hk, D] : [B, Hk, Sk, D];
  const vs = c.varlen ? [total(c.varlen.k), Hk, Dv] : [B, Hk, Sk, Dv];
  const os = c.varlen ? [total(c.varlen.q), Hq, Dv] : [B, Hq, Sq, Dv];
  let q = input(qs, dtype), k = input(ks, dtype), v = input(vs, dtype);
  const gradOut = input(os, dtype);
  const alignment = c.alignment ?? (c.causal === 'lowerRight' ? 'lowerRight' : 'upperLeft');
  const opts = { enableGqa: Hk !== Hq, isCausal: !!c.causal, alignment, deterministic: !!c.deterministic };
  if (c.dropoutP) Object.assign(opts, { dropoutP: c.dropoutP, dropoutSeed: 0x5eed_0000n + nextSeed(), dropoutOffset: 7 });
  if (c.window) opts.window = c.window;
  if (c.softcap) opts.softcap = c.softcap;
  // Device-read tensors (ALiBi slopes, sequsedK, cuSeqlens) are made here on the CPU; underTest moves them.
  const extra = {};
  if (c.alibi) {
    const rows = c.alibi === 'perBatchHead' ? B : 1;
    const x = Array.from({ length: rows * Hq }, (_, n) => 2 ** ((-8 * ((n % Hq) + 1)) / Hq) * (1 + 0.25 * Math.floor(n / Hq)));
    extra.alibiSlopes = tensor(x, rows > 1 ? [B, Hq] : [Hq], { dtype: 'float32' });
  }
  if (c.sequsedK) extra.sequsedK = tensor(c.sequsedK, [c.sequsedK.length], { dtype: 'int32' });
  if (c.varlen) {
    Object.assign(extra, { cuSeqlensQ: cumulative(c.varlen.q), cuSeqlensK: cumulative(c.varlen.k) });
    Object.assign(opts, { maxSeqlenQ: Sq, maxSeqlenK: Sk });
  }
  let mask = null;
  if (c.mask) {
    const n = c.mask.shape.reduce((a, b) => a * b, 1);
    const vals = randn([n], { dtype: 'float64', seed: nextSeed() }).toFloat64Array();
    if (c.mask.kind === 'bool') {
      // About 80% kept; with fullyMasked every 5th row (from row 1) keeps nothing.
      const keep = Array.from(vals, (x, i) => (c.mask.fullyMasked && Math.floor(i / c.mask.shape.at(-1)) % 5 === 1 ? 0 : x > -0.8 ? 1 : 0));
      mask = tensor(keep, c.mask.shape, { dtype: 'bool' });
    } else {
      const bias = Array.from(vals, (x, i) => (c.mask.fullyMasked && Math.floor(i / c.mask.shape.at(-1)) % 5 === 1 ? -Infinity : x));
      mask = tensor(bias, c.mask.shape, { dtype: c.mask.dtype ?? dtype });
    }
  }
  return { q, k, v, gradOut, mask, opts, extra };
}

const onDevice = (extra) => Object.fromEntries(Object.entries(extra).map(([n, t]) => [n, t.to('cuda')]));

/** The GPU copy of an input: same values, in the case's layout; 'misalign' views it one element into a wider row. */
function toCuda(t, c) {
  if (c.misalign && t.rank === 4) {
    const [b, h, s, d] = t.shape;
    const vals = t.toFloat64Array();
    const row = d + 1;
    const widened = Array.from({ length: b * h * s * row }, (_, i) => (i % row === 0 ? 0 : vals[Math.floor(i / row) * d + (i % row) - 1]));
    const filled = tensor(widened, [b, h, s, row], { dtype: t.dtype }).to('cuda');
    return filled.narrow(3, 1, d);
  }
  const g = t.to('cuda');
  return c.layout === 'bshd' && t.rank === 4 ? bshd(g) : g;
}

/** The call under test: memeff-cuda on the GPU, or (--cpu-selftest) cpu-math on the CPU in the case dtype. */
function underTest(c, q, k, v, gradOut, mask, opts, extra) {
  const bwdPath = c.path === 'simt' ? 'simt' : 'auto';
  if (selftest) {
    const f = c.varlen
      ? sdpaVarlen(q, k, v, { ...opts, ...extra, backends: ['cpu-math'], requiresGrad: true })
      : sdpaForward(q, k, v, { ...opts, ...extra, attnMask: mask, backends: ['cpu-math'], requiresGrad: true });
    return {
      fwd: { outputs: f, kernel: 'cpu-math' },
      backward: () => ({ gradients: sdpaBackward(gradOut, f), kernels: ['cpu-math'], plan: null }),
    };
  }
  const dev = (t) => toCuda(t, c);
  const dog = dev(gradOut);
  const callOpts = { ...opts, ...onDevice(extra), requiresGrad: c.backward !== false };
  const p = c.varlen
    ? normalizeVarlenParams(dev(q), dev(k), dev(v), callOpts)
    : normalizeParams(dev(q), dev(k), dev(v), { ...callOpts, attnMask: mask ? mask.to('cuda') : null });
  poison();
  const fwd = runForward(p, c.path ?? 'auto');
  return {
    fwd,
    backward: () => {
      poison();
      return runBackward(p, fwd.outputs, dog, bwdPath);
    },
  };
}

/** FNV-1a over the float64 bits of the values (an fp32 tensor's values widen exactly). */
function fnv1a(arrays) {
  let h = 0x811c9dc5;
  for (const a of arrays) {
    const bytes = new Uint8Array(Float64Array.from(a).buffer);
    for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}

function runOne(c) {
  const { q, k, v, gradOut, mask, opts, extra } = makeCase(c);
  const run = underTest(c, q, k, v, gradOut, mask, opts, extra);
  const fwd = run.fwd;
  const f64 = (t) => t.toDType('float64');
  const refOpts = { ...opts, ...extra, backends: ['cpu-math'], requiresGrad: true };
  const ref = c.varlen
    ? sdpaVarlen(f64(q), f64(k), f64(v), refOpts)
    : sdpaForward(f64(q), f64(k), f64(v), { ...refOpts, attnMask: mask ? (mask.dtype === 'bool' ? mask : f64(mask)) : null });
  const res = {
    kernel: fwd.kernel,
    out: relErr(fwd.outputs.out.toFloat64Array(), ref.out.toFloat64Array()),
    lse: relErr(fwd.outputs.logsumexp.toFloat64Array(), ref.logsumexp.toFloat64Array()),
  };
  if (digest) res.digest = fnv1a([fwd.outputs.out.toFloat64Array(), fwd.outputs.logsumexp.toFloat64Array()]);
  let ok = res.out <= TOL[c.dtype] && res.lse <= 1e-4;
  if (c.backward !== false) {
    const bwd = run.backward();
    const g = sdpaBackward(f64(gradOut), ref);
    res.bwdKernels = bwd.kernels.join('+');
    res.splits = bwd.plan?.querySplits;
    res.dbiasAtomic = bwd.plan?.dbiasAtomic;
    res.dbiasMode = bwd.plan?.dbiasMode;
    for (const name of ['dq', 'dk', 'dv', 'dbias']) {
      if (!g[name]) continue;
      res[name] = relErr(bwd.gradients[name].toFloat64Array(), g[name].toFloat64Array());
      ok &&= res[name] <= GRAD_TOL[c.dtype];
    }
    if (c.deterministic) {
      const again = run.backward();
      // dbias too where its path is deterministic (its own kernel, or stores of an unbroadcast one).
      const fixed = bwd.gradients.dbias && ['recompute', 'direct', 'direct-x4'].includes(res.dbiasMode) ? ['dbias'] : [];
      const same = ['dq', 'dk', 'dv', ...fixed].every((n) => {
        const a = bwd.gradients[n].toFloat64Array(), b = again.gradients[n].toFloat64Array();
        return a.every((x, i) => Object.is(x, b[i]));
      });
      res.bitwise = same;
      ok &&= same;
    }
  }
  return { ok, res };
}

// ----------------------------------------------------------------------------------------------
const DT = ['float32', 'float16', 'bfloat16'];
const cases = [];
const add = (name, c, dtypes = DT) => {
  for (const dtype of dtypes) cases.push({ name: `${name} ${dtype}`, dtype, ...c });
};
add('tiny s1 d8', { B: 1, Hq: 1, Sq: 1, Sk: 1, D: 8 });
add('sq17 sk23 d8', { B: 2, Hq: 2, Sq: 17, Sk: 23, D: 8 });
add('d72 h3 (mma bucket 128)', { B: 2, Hq: 3, Sq: 65, Sk: 130, D: 72 });
add('d7 dv13 (simt)', { B: 2, Hq: 2, Sq: 33, Sk: 47, D: 7, Dv: 13 });
add('d64 dv128', { B: 1, Hq: 2, Sq: 100, Sk: 200, D: 64, Dv: 128 });
add('d160 dv40 (two z tiles on simt)', { B: 1, Hq: 2, Sq: 70, Sk: 90, D: 160, Dv: 40 });
add('d256', { B: 1, Hq: 2, Sq: 129, Sk: 257, D: 256 });
// Head dims above 128 on the tensor-core backward: dK/dV/dQ columns split over two blocks (balanced
// halves: 80 + 80 at D 160, 96 + 96 at 192), masks read from global memory, dbias from the first block only.
add('d160 col-split', { B: 1, Hq: 2, Sq: 100, Sk: 300, D: 160 }, ['float16', 'bfloat16']);
add('d192 bias gqa col-split', { B: 2, Hq: 4, Hk: 2, Sq: 70, Sk: 260, D: 192, mask: { kind: 'additive', shape: [1, 4, 70, 260] } }, ['float16', 'bfloat16']);
add('d256 causal dropout col-split', { B: 1, Hq: 2, Sq: 200, Sk: 256, D: 256, causal: 'lowerRight', dropoutP: 0.2 }, ['float16', 'bfloat16']);
add('d256 bool mask deterministic col-split', { B: 1, Hq: 2, Sq: 90, Sk: 270, D: 256, deterministic: true, mask: { kind: 'bool', shape: [1, 1, 90, 270] } }, ['float16', 'bfloat16']);
add('d256 dv128 col-split', { B: 1, Hq: 2, Sq: 64, Sk: 200, D: 256, Dv: 128 }, ['float16', 'bfloat16']);
// D == Dv 160 and 192 run their exact head dim's forward (fwd/mma_traits.h; 192-wide shared tiles at 160);
// with a window's left side (a feature) the d256 bucket's feature kernel.
add('d160 causal dropout exact-fwd', { B: 2, Hq: 3, Sq: 333, Sk: 333, D: 160, causal: 'upperLeft', dropoutP: 0.15 }, ['float16', 'bfloat16']);
add('d192 causal lr bool mask exact-fwd', { B: 1, Hq: 2, Sq: 97, Sk: 301, D: 192, causal: 'lowerRight', mask: { kind: 'bool', shape: [1, 1, 97, 301] } }, ['float16', 'bfloat16']);
add('d160 bias gqa exact-fwd', { B: 1, Hq: 4, Hk: 1, Sq: 65, Sk: 190, D: 160, mask: { kind: 'additive', shape: [1, 4, 65, 190] } }, ['float16', 'bfloat16']);
add('d192 window softcap (d256 feature kernel) exact-fwd', { B: 1, Hq: 2, Sq: 150, Sk: 200, D: 192, window: [40, 8], softcap: 3 }, ['float16', 'bfloat16']);
add('d300 (simt only)', { B: 1, Hq: 1, Sq: 40, Sk: 50, D: 300, Dv: 300 });
add('misaligned storage (simt)', { B: 2, Hq: 2, Sq: 40, Sk: 60, D: 64, misalign: true });
add('bshd layout', { B: 2, Hq: 4, Sq: 77, Sk: 77, D: 64, layout: 'bshd' });
add('gqa 8/2', { B: 2, Hq: 8, Hk: 2, Sq: 50, Sk: 70, D: 64 });
add('mqa 4/1', { B: 1, Hq: 4, Hk: 1, Sq: 33, Sk: 65, D: 32 });
add('causal square', { B: 2, Hq: 2, Sq: 130, Sk: 130, D: 64, causal: 'upperLeft' });
add('causal ul sq<sk', { B: 1, Hq: 2, Sq: 40, Sk: 150, D: 64, causal: 'upperLeft' });
add('causal lr sq<sk', { B: 1, Hq: 2, Sq: 40, Sk: 150, D: 64, causal: 'lowerRight' });
add('causal lr sq>sk (empty rows)', { B: 1, Hq: 2, Sq: 150, Sk: 40, D: 64, causal: 'lowerRight' });
add('bias full [B,H,Sq,Sk]', { B: 2, Hq: 2, Sq: 60, Sk: 90, D: 64, mask: { kind: 'additive', shape: [2, 2, 60, 90] } });
add('bias [Sq,Sk]', { B: 2, Hq: 2, Sq: 60, Sk: 90, D: 64, mask: { kind: 'additive', shape: [60, 90] } });
add('bias [B,1,1,Sk] key padding', { B: 2, Hq: 3, Sq: 60, Sk: 90, D: 64, mask: { kind: 'additive', shape: [2, 1, 1, 90] } });
add('bias [H,Sq,1]', { B: 2, Hq: 3, Sq: 60, Sk: 90, D: 32, mask: { kind: 'additive', shape: [3, 60, 1] } });
add('bias scalar []', { B: 1, Hq: 2, Sq: 20, Sk: 30, D: 16, mask: { kind: 'additive', shape: [] } });
add('bias fp32 on half q', { B: 1, Hq: 2, Sq: 60, Sk: 90, D: 64, mask: { kind: 'additive', shape: [1, 2, 60, 90], dtype: 'float32' } }, ['float16', 'bfloat16']);
add('bias -inf rows', { B: 1, Hq: 2, Sq: 40, Sk: 50, D: 64, mask: { kind: 'additive', shape: [1, 2, 40, 50], fullyMasked: true } });
add('bool mask + fully masked rows', { B: 2, Hq: 2, Sq: 40, Sk: 50, D: 64, mask: { kind: 'bool', shape: [2, 1, 40, 50], fullyMasked: true } });
add('bool mask + causal', { B: 1, Hq: 2, Sq: 64, Sk: 64, D: 64, causal: 'upperLeft', mask: { kind: 'bool', shape: [64, 64] } });
// Masks whose rows are 16-byte multiples go through the cp.async mask tile (common/mask_tile.cuh);
// partial key tiles (Sk not a multiple of the tile) and several query blocks. Broadcast over batch
// / heads: dbias by atomics in the main kernel (an fp32 accumulator + convert for 16-bit masks).
add('bias tile [B,H,Sq,Sk] sk144', { B: 2, Hq: 2, Sq: 150, Sk: 144, D: 64, mask: { kind: 'additive', shape: [2, 2, 150, 144] } });
add('bias tile [Sq,Sk] d128 causal lr + dropout + gqa', { B: 2, Hq: 4, Hk: 2, Sq: 200, Sk: 136, D: 128, causal: 'lowerRight', dropoutP: 0.2, mask: { kind: 'additive', shape: [200, 136] } });
add('bool mask tile + mqa', { B: 2, Hq: 4, Hk: 1, Sq: 90, Sk: 160, D: 64, mask: { kind: 'bool', shape: [2, 1, 90, 160] } });
add('bias tile fp32 on half q [1,H,Sq,Sk]', { B: 2, Hq: 2, Sq: 70, Sk: 96, D: 64, mask: { kind: 'additive', shape: [1, 2, 70, 96], dtype: 'float32' } }, ['float16', 'bfloat16']);
// Interior steps of a staged mask add it with one FFMA per score (mask_tile.cuh; forward and
// tensor-core backward, whose key blocks are 128 wide: Sk >= 256 has interior steps); these cover
// broadcast rows (row stride 0), head broadcasts, a causal mix of fast and per-element steps, and
// every tile dtype (bool, 16-bit, fp32 on half q).
add('bias tile [B,1,1,Sk] key padding sk192 d128', { B: 2, Hq: 2, Sq: 130, Sk: 192, D: 128, mask: { kind: 'additive', shape: [2, 1, 1, 192] } });
add('bias tile [H,1,Sk] fp32 on half q sk256', { B: 2, Hq: 3, Sq: 100, Sk: 256, D: 64, mask: { kind: 'additive', shape: [3, 1, 256], dtype: 'float32' } }, ['float16', 'bfloat16']);
add('bool tile [B,1,Sq,Sk] causal ul d128', { B: 2, Hq: 2, Sq: 200, Sk: 224, D: 128, causal: 'upperLeft', mask: { kind: 'bool', shape: [2, 1, 200, 224] } });
add('bias tile deterministic gqa sk256', { B: 2, Hq: 4, Hk: 2, Sq: 100, Sk: 256, D: 64, deterministic: true, mask: { kind: 'additive', shape: [1, 4, 100, 256] } });
add('bias tile [1,H,Sq,Sk] -inf rows d128 sk256', { B: 2, Hq: 2, Sq: 130, Sk: 256, D: 128, mask: { kind: 'additive', shape: [1, 2, 130, 256], fullyMasked: true } });
// dbias 4 keys per request (atomic-x4 / direct-x4 in the plan; tensor cores): a key tail inside a
// 128-key block (Sk = 260), a GQA causal call summed over batch and heads.
add('bias tile [B,1,Sq,Sk] d128 sk260 dbias x4', { B: 2, Hq: 4, Sq: 130, Sk: 260, D: 128, mask: { kind: 'additive', shape: [2, 1, 130, 260] } }, ['float16', 'bfloat16']);
add('bias tile [Sq,Sk] gqa causal ul sk200 dbias x4', { B: 2, Hq: 4, Hk: 2, Sq: 96, Sk: 200, D: 64, causal: 'upperLeft', mask: { kind: 'additive', shape: [96, 200] } }, ['float16', 'bfloat16']);
// The lean backward step (bwd_lean.cuh) on many interior steps (32-query x 128-key, all in bounds):
// interior mask tiles, ldmatrix.trans mask terms (16-bit), branch-free P / dS, one-address dbias quads;
// the key tail (keys 256-299) and the last query rows take the general step in the same call.
add('bias tile [B,1,Sq,Sk] d128 sq256 sk300 lean', { B: 2, Hq: 2, Sq: 256, Sk: 300, D: 128, mask: { kind: 'additive', shape: [2, 1, 256, 300] } }, ['float16', 'bfloat16']);
add('bias tile [1,H,Sq,Sk] d128 sq200 sk256 causal lean', { B: 1, Hq: 2, Sq: 200, Sk: 256, D: 128, causal: 'lowerRight', mask: { kind: 'additive', shape: [1, 2, 200, 256] } }, ['float16', 'bfloat16']);
// The 3xTF32 forward's wide form at d128 (128-query blocks, K and V split once per step; off wgmma only) over several query blocks with a row tail, causal diagonals and a staged bias; D = Dv = 128 and
// D = 96 (zero columns in the split tiles).
add('tf32 d128 sq300 sk200 causal lr bias', { B: 1, Hq: 2, Sq: 300, Sk: 200, D: 128, causal: 'lowerRight', mask: { kind: 'additive', shape: [1, 2, 300, 200], dtype: 'float32' } }, ['float32']);
add('tf32 d96 sq260 sk333 gqa', { B: 2, Hq: 4, Hk: 2, Sq: 260, Sk: 333, D: 96 }, ['float32']);
add('bias tile [1,H,Sq,Sk] deterministic sk256 d128', { B: 2, Hq: 2, Sq: 70, Sk: 256, D: 128, deterministic: true, mask: { kind: 'additive', shape: [1, 2, 70, 256] } }, ['float16', 'bfloat16']);
add('dropout 0.2', { B: 2, Hq: 2, Sq: 70, Sk: 90, D: 64, dropoutP: 0.2 });
add('dropout + causal + bias', { B: 1, Hq: 2, Sq: 70, Sk: 90, D: 64, dropoutP: 0.3, causal: 'lowerRight', mask: { kind: 'additive', shape: [70, 90] } });
add('long q few keys (query splits)', { B: 1, Hq: 1, Sq: 2048, Sk: 40, D: 64 });
add('deterministic', { B: 2, Hq: 4, Hk: 2, Sq: 100, Sk: 130, D: 64, deterministic: true, mask: { kind: 'additive', shape: [1, 4, 100, 130] } });
add('deterministic simt', { B: 2, Hq: 4, Hk: 2, Sq: 100, Sk: 130, D: 64, deterministic: true, path: 'simt' }, ['float16', 'bfloat16']);
add('long q few keys, tensor cores (splits)', { B: 1, Hq: 2, Sq: 3000, Sk: 100, D: 128, causal: 'lowerRight' }, ['float16', 'bfloat16']);
add('simt forced', { B: 2, Hq: 2, Sq: 100, Sk: 130, D: 64, path: 'simt', causal: 'upperLeft' }, ['float16', 'bfloat16']);
add('simt forced + bias + dropout + gqa', { B: 2, Hq: 4, Hk: 2, Sq: 70, Sk: 90, D: 128, path: 'simt', dropoutP: 0.2, mask: { kind: 'additive', shape: [2, 4, 70, 90] } }, ['float16', 'bfloat16']);
add('mma forced', { B: 2, Hq: 2, Sq: 100, Sk: 130, D: 128, path: 'mma', causal: 'upperLeft' }, ['float16', 'bfloat16']);
add('S=1000 d128', { B: 1, Hq: 2, Sq: 1000, Sk: 1000, D: 128, causal: quick ? undefined : 'upperLeft' });
// Issue 21: the seeds' features over several key blocks (the window skips blocks on both sides), on the
// tensor-core kernels and, forced, the FMA ones; varlen with empty sequences; sequsedK.
add('window 50,10 alibi softcap gqa', { B: 1, Hq: 4, Hk: 2, Sq: 200, Sk: 260, D: 64, window: [50, 10], alibi: 'perHead', softcap: 4 });
add('window lr causal bias dropout d128', { B: 2, Hq: 2, Sq: 190, Sk: 130, D: 128, window: [40, -1], causal: 'lowerRight', dropoutP: 0.2, mask: { kind: 'additive', shape: [2, 1, 190, 130] } });
add('window right bool mask softcap', { B: 1, Hq: 2, Sq: 150, Sk: 150, D: 64, window: [-1, 20], softcap: 2, mask: { kind: 'bool', shape: [150, 150] } });
add('window lr alibi [B,H] sequsedK', { B: 2, Hq: 2, Hk: 1, Sq: 120, Sk: 300, D: 64, window: [30, 30], alignment: 'lowerRight', alibi: 'perBatchHead', sequsedK: [170, 0] });
add('window d96 bias dbias gqa (tf32 d128 bucket)', { B: 2, Hq: 4, Hk: 2, Sq: 260, Sk: 333, D: 96, window: [64, 16], mask: { kind: 'additive', shape: [1, 4, 260, 333] } });
add('simt forced window alibi softcap dropout', { B: 1, Hq: 2, Sq: 100, Sk: 130, D: 64, path: 'simt', window: [20, 5], alibi: 'perHead', softcap: 3, dropoutP: 0.2 }, ['float16', 'bfloat16']);
add('deterministic window softcap sequsedK', { B: 2, Hq: 4, Hk: 2, Sq: 100, Sk: 200, D: 64, deterministic: true, window: [40, 0], softcap: 5, sequsedK: [150, 37] });
add('varlen window alibi softcap dropout sequsedK (empty sequences)', {
  B: 4, Hq: 4, Hk: 2, Sq: 201, Sk: 260, D: 64, varlen: { q: [150, 0, 70, 201], k: [180, 40, 0, 260] },
  window: [60, 5], alignment: 'lowerRight', alibi: 'perHead', softcap: 3, dropoutP: 0.1, sequsedK: [100, 40, 0, 260],
});
// Softcap and ALiBi without a window or mask: most steps are in view and take ModRule (tile_mods_only),
// the diagonal and edge steps the per-element rule.
add('alibi softcap causal lr gqa (in view)', { B: 1, Hq: 4, Hk: 2, Sq: 300, Sk: 333, D: 64, alibi: 'perHead', softcap: 5, causal: 'lowerRight' });
add('alibi [B,H] d128 (in view)', { B: 2, Hq: 2, Sq: 260, Sk: 390, D: 128, alibi: 'perBatchHead' });
add('softcap d96 ul sq>sk (in view)', { B: 1, Hq: 2, Sq: 200, Sk: 150, D: 96, softcap: 2, causal: 'upperLeft' });
// The feature kernels (kFeat) on the column-split backward (head dims above 128): window, ALiBi,
// softcap, varlen and sequsedK with the dK/dV/dQ columns split over two blocks.
add('d160 col-split window alibi softcap gqa', { B: 1, Hq: 4, Hk: 2, Sq: 170, Sk: 300, D: 160, window: [70, 20], alibi: 'perHead', softcap: 4 }, ['float16', 'bfloat16']);
add('d192 col-split window lr dropout sequsedK', { B: 2, Hq: 2, Sq: 120, Sk: 280, D: 192, window: [50, -1], alignment: 'lowerRight', causal: 'lowerRight', dropoutP: 0.15, sequsedK: [200, 9] }, ['float16', 'bfloat16']);
add('d256 col-split varlen alibi [B,H] softcap (empty sequences)', {
  B: 3, Hq: 2, Hk: 1, Sq: 190, Sk: 260, D: 256, varlen: { q: [190, 0, 70], k: [260, 30, 0] },
  alibi: 'perBatchHead', softcap: 3, causal: 'lowerRight',
}, ['float16', 'bfloat16']);
add('d256 dv128 col-split deterministic window bias', { B: 1, Hq: 2, Sq: 150, Sk: 200, D: 256, Dv: 128, deterministic: true, window: [30, 30], mask: { kind: 'additive', shape: [1, 2, 150, 200] } }, ['float16', 'bfloat16']);
add('varlen causal d128 (query splits)', { B: 3, Hq: 2, Sq: 1500, Sk: 64, D: 128, varlen: { q: [1500, 7, 900], k: [64, 33, 0] }, causal: 'lowerRight' });

let failed = 0, ran = 0;
const fmt = (x) => (x === undefined ? '' : typeof x === 'number' ? x.toExponential(2) : String(x));
for (const c of cases) {
  if (only && !c.name.includes(only)) continue;
  if (quick && c.dtype === 'float16' && !c.name.includes('forced')) continue;
  ran++;
  const t0 = performance.now();
  try {
    const { ok, res } = runOne(c);
    if (!ok) failed++;
    const errs = ['out', 'lse', 'dq', 'dk', 'dv', 'dbias'].filter((n) => res[n] !== undefined).map((n) => `${n} ${fmt(res[n])}`).join(' ');
    console.log(`${ok ? 'PASS' : 'FAIL'} ${c.name.padEnd(44)} ${errs}  [${res.kernel}${res.bwdKernels ? ` | ${res.bwdKernels}` : ''}${res.splits > 1 ? ` splits=${res.splits}` : ''}${res.dbiasMode ? ` dbias=${res.dbiasMode}` : res.dbiasAtomic ? ' dbias=atomic' : ''}${res.bitwise !== undefined ? ` bitwise=${res.bitwise}` : ''}${res.digest ? ` fwd=${res.digest}` : ''}] ${(performance.now() - t0).toFixed(0)} ms`);
  } catch (e) {
    failed++;
    console.log(`ERROR ${c.name}: ${e?.stack ?? e}`);
  }
}
console.log(`\n${ran - failed}/${ran} cases passed`);

// ----------------------------------------------------------------------------------------------
// Timings (FlashAttention's FLOP convention: fwd 4*B*H*Sq*Sk*D, halved when causal; fwd+bwd 3.5x).
function time(fn, iters) {
  fn();
  synchronize(0);
  const t0 = performance.now();
  for (let i = 0; i < iters; i++) fn();
  synchronize(0);
  return (performance.now() - t0) / iters / 1e3;
}

if (!noTime && !selftest) {
  console.log('\ntimings (TFLOP/s; torch efficient on H200, bf16 D=128 S=4k: 173 fwd, 142 fwd+bwd)');
  const grid = [
    { dtype: 'bfloat16', D: 64, S: 1024 }, { dtype: 'bfloat16', D: 64, S: 4096 },
    { dtype: 'bfloat16', D: 128, S: 1024 }, { dtype: 'bfloat16', D: 128, S: 4096 },
    { dtype: 'bfloat16', D: 128, S: 4096, causal: true }, { dtype: 'bfloat16', D: 128, S: 4096, bias: true },
    { dtype: 'float16', D: 128, S: 4096 }, { dtype: 'float32', D: 64, S: 1024 }, { dtype: 'float32', D: 128, S: 4096 },
    { dtype: 'float32', D: 128, S: 4096, bias: true }, { dtype: 'bfloat16', D: 80, S: 2048 },
  ];
  for (const g of grid) {
    try {
      // Integer head counts, as torch-efficient.py (2048 // D): D=80 gives 25 heads.
      const H = Math.floor(2048 / g.D), B = Math.max(1, Math.floor(16384 / g.S));
      const dev = { dtype: g.dtype, device: 'cuda' };
      const q = randn([B, H, g.S, g.D], dev), k = randn([B, H, g.S, g.D], dev), v = randn([B, H, g.S, g.D], dev);
      const dout = randn([B, H, g.S, g.D], dev);
      const bias = g.bias ? randn([1, H, g.S, g.S], dev) : null;
      const p = normalizeParams(q, k, v, { isCausal: !!g.causal, attnMask: bias, requiresGrad: true });
      const flops = (4 * B * H * g.S * g.S * g.D) / (g.causal ? 2 : 1);
      let saved;
      let kernel = '';
      const tf = time(() => {
        const r = runForward(p);
        kernel = r.kernel;
        saved?.out.dispose();
        saved?.logsumexp.dispose();
        saved = r.outputs;
      }, 5);
      let kernels = '';
      const tfb = time(() => {
        const r = runForward(p);
        const b = runBackward(p, r.outputs, dout);
        kernels = b.kernels.join('+');
        for (const t of [r.outputs.out, r.outputs.logsumexp, b.gradients.dq, b.gradients.dk, b.gradients.dv, b.gradients.dbias]) t?.dispose();
      }, 3);
      console.log(`${g.dtype.padEnd(9)} B=${B} H=${H} S=${g.S} D=${g.D}${g.causal ? ' causal' : ''}${g.bias ? ' bias[1,H,S,S]' : ''}: fwd ${(flops / tf / 1e12).toFixed(1)} TFLOP/s (${(tf * 1e3).toFixed(2)} ms, ${kernel}), fwd+bwd ${((3.5 * flops) / tfb / 1e12).toFixed(1)} TFLOP/s (${(tfb * 1e3).toFixed(2)} ms, ${kernels})`);
      for (const t of [q, k, v, dout, bias, saved?.out, saved?.logsumexp]) t?.dispose();
    } catch (e) {
      console.log(`ERROR timing ${JSON.stringify(g)}: ${e?.message ?? e}`);
    }
  }
}
process.exit(failed ? 1 : 0);
