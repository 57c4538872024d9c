#!/usr/bin/env node
// One GPU run that says as much as possible about 'flash-cuda': every feature and odd shape against a
// float64 reference written here (independent of cpu-math), each case caught on its own so one failure
// hides nothing, then timings (the standard grid, decode, per-call overhead) for the side-by-side with
// scripts/bench_torch.py. Needs the dist/ builds of core, cuda and flash-cuda and the native addons.
//
//   node packages/flash-cuda/scripts/gpu-check.mjs                 # checks, then timings
//   node packages/flash-cuda/scripts/gpu-check.mjs --checks-only
//   node packages/flash-cuda/scripts/gpu-check.mjs --bench-only [--quick]
//   node packages/flash-cuda/scripts/gpu-check.mjs --only gqa      # cases whose name contains 'gqa'
//   node packages/flash-cuda/scripts/gpu-check.mjs --self-test     # no GPU: the same cases through
//        cpu-math on the CPU against this file's reference (checks the script and the reference)
// Exit code: 1 when any check failed.
import * as core from '@attn/core';
import * as cuda from '@attn/cuda';
import { flashCudaBackend, flashForward, planFor } from '@attn/flash-cuda';
import { caseListWithHeadDimGrid, deviceHeader, flops, log, parseArgs, poison as poisonIf, rng, runBench, runChecks, timeCall } from './lib/gpu-check-common.mjs';

const { flag, only, SELF, DEV, BACKEND } = parseArgs();
if (SELF) await import('@attn/cpu');

// ---------------------------------------------------------------- inputs
function randArray(n, seed) {
  const g = rng(seed);
  const a = new Float64Array(n);
  for (let i = 0; i < n; i++) a[i] = g();
  return a;
}
/** Values rounded to dtype (what the GPU sees) and a CPU tensor holding them. */
function rounded(values, shape, dtype) {
  const t = core.tensor(values, shape, { dtype });
  return { cpu: t, values: t.toFloat64Array() };
}

/** A device tensor with logical shape [B, H, S, D] in the requested layout. */
function toDevice(cpuT, layout, misalign) {
  const dtype = cpuT.dtype;
  if (misalign) {
    // Base address 2 bytes past a 16-byte boundary: the kernel's element-wise path.
    const flat = cpuT.contiguous().toFloat64Array();
    const padded = new Float64Array(flat.length + 1);
    padded.set(flat, 1);
    const dev = core.tensor(padded, [padded.length], { dtype }).to(DEV);
    return core.fromStorage(dev.storage, cpuT.shape, { dtype, offset: 1 });
  }
  if (layout === 'bshd') return cpuT.permute([0, 2, 1, 3]).contiguous().to(DEV).permute([0, 2, 1, 3]);
  return cpuT.to(DEV);
}

// ---------------------------------------------------------------- float64 reference
// seqs: per batch {q0, sq, k0, sk}: rows of sequence b are q0..q0+sq-1 in the accessors.
function reference(c, qv, kv, vv, at, seqs) {
  const { Hq, Hk, D } = c;
  const G = Hq / Hk;
  const scale = c.opts.scale ?? 1 / Math.sqrt(D);
  const out = [];
  const lse = [];
  for (let b = 0; b < seqs.length; b++) {
    const { q0, sq, k0, sk } = seqs[b];
    const off = c.opts.alignment === 'lowerRight' ? sk - sq : 0;
    for (let h = 0; h < Hq; h++) {
      const hk = Math.floor(h / G);
      const slope = c.slopes ? c.slopes[c.slopesPerBatch ? b * Hq + h : h] : 0;
      for (let i = 0; i < sq; i++) {
        const s = new Float64Array(sk);
        let mx = -Infinity;
        for (let j = 0; j < sk; j++) {
          const diag = i + off;
          let visible = true;
          if (c.opts.isCausal && j > diag) visible = false;
          const w = c.opts.window;
          if (w && w[0] >= 0 && j < diag - w[0]) visible = false;
          if (w && w[1] >= 0 && j > diag + w[1]) visible = false;
          if (!visible) {
            s[j] = -Infinity;
            continue;
          }
          let dot = 0;
          for (let d = 0; d < D; d++) dot += qv[at.q(b, q0 + i, h, d)] * kv[at.k(b, k0 + j, hk, d)];
          let x = dot * scale;
          if (c.opts.softcap) x = c.opts.softcap * Math.tanh(x / c.opts.softcap);
          if (c.slopes) x -= slope * Math.abs(diag - j);
          s[j] = x;
          mx = Math.max(mx, x);
        }
        let sum = 0;
        for (let j = 0; j < sk; j++) sum += mx === -Infinity ? 0 : Math.exp(s[j] - mx);
        const l = sum > 0 ? mx + Math.log(sum) : -Infinity;
        lse.push({ b, h, i, v: l });
        const o = new Float64Array(D);
        if (sum > 0) {
          for (let j = 0; j < sk; j++) {
            if (s[j] === -Infinity) continue;
            let p = Math.exp(s[j] - l);
            if (c.opts.dropoutP) {
              const keep = core.dropoutKeep(c.seed, c.offset, b, h, i, j, Hq, core.dropoutThreshold(c.opts.dropoutP));
              p = keep ? p / (1 - c.opts.dropoutP) : 0;
            }
            for (let d = 0; d < D; d++) o[d] += p * vv[at.v(b, k0 + j, hk, d)];
          }
        }
        out.push({ b, h, i, o });
      }
    }
  }
  return { out, lse };
}

// ---------------------------------------------------------------- one case
const TOL = { bfloat16: 2.5e-2, float16: 4e-3 };

// Hand the caching allocator memory full of NaN bytes, so an unwritten output element shows.
const poison = (bytes) => poisonIf(bytes, SELF);

function runCase(c) {
  const dtype = c.dtype;
  const opts = { ...c.opts, backends: [BACKEND] };
  if (c.opts.dropoutP) {
    c.seed = 0x1234_5678_9abcn;
    c.offset = 7;
    opts.dropoutSeed = c.seed;
    opts.dropoutOffset = c.offset;
  }
  if (c.alibi) {
    c.slopesPerBatch = c.alibi === 'bh';
    const n = c.slopesPerBatch ? c.B * c.Hq : c.Hq;
    c.slopes = Array.from({ length: n }, (_, i) => 2 ** (-((i % c.Hq) + 1) * 0.5) * (c.slopesPerBatch ? 1 + Math.floor(i / c.Hq) * 0.5 : 1));
    const st = core.tensor(c.slopes, c.slopesPerBatch ? [c.B, c.Hq] : [c.Hq], { dtype: 'float32' });
    c.slopes = Array.from(st.toFloat64Array());
    opts.alibiSlopes = st.to(DEV);
  }
  let result;
  let qv, kv, vv, at, seqs;
  if (c.varlen) {
    const lq = c.varlen.q, lk = c.varlen.k;
    const totQ = lq.reduce((a, b) => a + b, 0), totK = lk.reduce((a, b) => a + b, 0);
    const cum = (xs) => xs.reduce((acc, x) => [...acc, acc[acc.length - 1] + x], [0]);
    const cq = cum(lq), ck = cum(lk);
    const q = rounded(randArray(totQ * c.Hq * c.D, 1), [totQ, c.Hq, c.D], dtype);
    const k = rounded(randArray(totK * c.Hk * c.D, 2), [totK, c.Hk, c.D], dtype);
    const v = rounded(randArray(totK * c.Hk * c.D, 3), [totK, c.Hk, c.D], dtype);
    [qv, kv, vv] = [q.values, k.values, v.values];
    at = {
      q: (_b, t, h, d) => (t * c.Hq + h) * c.D + d,
      k: (_b, t, h, d) => (t * c.Hk + h) * c.D + d,
      v: (_b, t, h, d) => (t * c.Hk + h) * c.D + d,
    };
    seqs = lq.map((sq, b) => ({ q0: cq[b], sq, k0: ck[b], sk: lk[b] }));
    poison(totQ * c.Hq * c.D * 2 + totQ * c.Hq * 4);
    result = core.sdpaVarlen(q.cpu.to(DEV), k.cpu.to(DEV), v.cpu.to(DEV), {
      ...opts,
      cuSeqlensQ: core.tensor(cq, [cq.length], { dtype: 'int32', device: DEV }),
      cuSeqlensK: core.tensor(ck, [ck.length], { dtype: 'int32', device: DEV }),
      maxSeqlenQ: Math.max(...lq),
      maxSeqlenK: Math.max(...lk),
    });
  } else {
    const { B, Hq, Hk, Sq, Sk, D } = c;
    let qd, kd, vd;
    if (c.bigStride && SELF) throw new Error('needs a GPU (4.3 GB device buffer)');
    if (c.bigStride) {
      // Batch stride 2^31 elements: b * stride overflows int32 unless the kernel computes in int64.
      const stride = 2 ** 31;
      const per = (h) => h * Math.max(Sq, Sk) * D;
      const storage = cuda.allocate((stride + 3 * per(Hq) + 64) * 2, 0);
      cuda.fill(storage, 0, storage.bytes, 0);
      const make = (h, s, seed, base) => {
        const r = rounded(randArray(B * h * s * D, seed), [B, h, s, D], dtype);
        const bits = r.cpu.hostData();
        for (let b = 0; b < B; b++) {
          const chunk = bits.subarray(b * h * s * D, (b + 1) * h * s * D);
          cuda.copyHostToDevice(storage, (b * stride + base) * 2, new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        }
        const t = core.fromStorage(storage, [B, h, s, D], { dtype, strides: [stride, s * D, D, 1], offset: base });
        return { values: r.values, t };
      };
      const q = make(Hq, Sq, 1, 0), k = make(Hk, Sk, 2, per(Hq)), v = make(Hk, Sk, 3, 2 * per(Hq));
      [qv, kv, vv, qd, kd, vd] = [q.values, k.values, v.values, q.t, k.t, v.t];
    } else {
      const q = rounded(randArray(B * Hq * Sq * D, 1), [B, Hq, Sq, D], dtype);
      const k = rounded(randArray(B * Hk * Sk * D, 2), [B, Hk, Sk, D], dtype);
      const v = rounded(randArray(B * Hk * Sk * D, 3), [B, Hk, Sk, D], dtype);
      [qv, kv, vv] = [q.values, k.values, v.values];
      qd = toDevice(q.cpu, c.layout, c.misalign);
      kd = toDevice(k.cpu, c.layout, c.misalign);
      vd = toDevice(v.cpu, c.layout, c.misalign);
    }
    at = {
      q: (b, i, h, d) => ((b * Hq + h) * Sq + i) * D + d,
      k: (b, j, h, d) => ((b * Hk + h) * Sk + j) * D + d,
      v: (b, j, h, d) => ((b * Hk + h) * Sk + j) * D + d,
    };
    seqs = Array.from({ length: B }, () => ({ q0: 0, sq: Sq, k0: 0, sk: Sk }));
    poison(B * Hq * Sq * D * 2 + B * Hq * Sq * 4);
    if (SELF) {
      result = core.sdpaForward(qd, kd, vd, opts);
    } else if (c.splits || c.kernel) {
      const { backends: _b, ...rest } = opts;
      const params = core.normalizeParams(qd, kd, vd, rest);
      const force = { ...(c.splits ? { numSplits: c.splits } : {}), ...(c.kernel ? { kernel: c.kernel } : {}) };
      c.plan = planFor(params, force);
      result = flashForward(params, force);
    } else {
      c.plan = planFor(core.normalizeParams(qd, kd, vd, { ...opts, backends: undefined }));
      result = core.sdpaForward(qd, kd, vd, opts);
    }
  }
  if (result.backend !== undefined && result.backend !== BACKEND) throw new Error(`ran on ${result.backend}`);
  const got = result.out.toFloat64Array();
  const gotLse = result.logsumexp.toFloat64Array();
  const ref = reference(c, qv, kv, vv, at, seqs);
  // Output index of (b, h, i): dense [B, Hq, Sq, D]; varlen [totalQ, Hq, D] with lse [Hq, totalQ].
  const totalQ = c.varlen ? c.varlen.q.reduce((a, b) => a + b, 0) : 0;
  const oIdx = (b, h, i, d) => (c.varlen ? ((seqs[b].q0 + i) * c.Hq + h) * c.D + d : ((b * c.Hq + h) * c.Sq + i) * c.D + d);
  const lIdx = (b, h, i) => (c.varlen ? h * totalQ + seqs[b].q0 + i : (b * c.Hq + h) * c.Sq + i);
  let errO = 0, errL = 0, nan = 0, maskedRows = 0, badMasked = 0;
  for (const { b, h, i, o } of ref.out) {
    for (let d = 0; d < c.D; d++) {
      const g = got[oIdx(b, h, i, d)];
      if (Number.isNaN(g)) nan++;
      else errO = Math.max(errO, Math.abs(g - o[d]));
    }
  }
  for (const { b, h, i, v } of ref.lse) {
    const g = gotLse[lIdx(b, h, i)];
    if (v === -Infinity) {
      maskedRows++;
      if (g !== -Infinity) badMasked++;
    } else if (Number.isNaN(g)) nan++;
    else errL = Math.max(errL, Math.abs(g - v));
  }
  result.out.dispose();
  result.logsumexp.dispose();
  const tol = TOL[dtype];
  const ok = nan === 0 && badMasked === 0 && errO <= tol && errL <= 2e-3;
  return { ok, errO, errL, nan, maskedRows, badMasked };
}

// ---------------------------------------------------------------- the cases
function cases() {
  const { list, add } = caseListWithHeadDimGrid();
  const addCase = add;
  for (const D of [1, 8, 33, 40, 72, 100, 250]) add(`bf16 odd D${D}`, { D, Sq: 70, Sk: 90 });
  add('fp16 odd D100 causal', { dtype: 'float16', D: 100, Sq: 70, Sk: 90, opts: { isCausal: true } });
  add('s1', { B: 1, Hq: 1, Hk: 1, Sq: 1, Sk: 1 });
  add('sq1 sk17', { Sq: 1, Sk: 17 });
  add('sq17 sk1', { Sq: 17, Sk: 1 });
  add('long keys sq64 sk3000', { Sq: 64, Sk: 3000, B: 1, Hq: 2, Hk: 2 });
  for (const alignment of ['upperLeft', 'lowerRight']) {
    add(`causal ${alignment} sq37 sk300`, { Sq: 37, Sk: 300, opts: { isCausal: true, alignment } });
    add(`causal ${alignment} sq300 sk37`, { Sq: 300, Sk: 37, opts: { isCausal: true, alignment } });
    add(`window[16,0] ${alignment} sq150 sk260`, { Sq: 150, Sk: 260, opts: { window: [16, 0], alignment } });
    add(`window[40,9] ${alignment}`, { Sq: 200, Sk: 170, opts: { window: [40, 9], alignment } });
    add(`window[-1,5] ${alignment}`, { Sq: 120, Sk: 300, opts: { window: [-1, 5], alignment } });
    add(`window[7,-1] causal ${alignment}`, { Sq: 300, Sk: 120, opts: { window: [7, -1], isCausal: true, alignment } });
    add(`alibi[H] causal ${alignment}`, { Sq: 100, Sk: 150, alibi: 'h', opts: { isCausal: true, alignment } });
  }
  add('alibi[B,H]', { Sq: 90, Sk: 140, alibi: 'bh' });
  add('softcap 5', { Sq: 100, Sk: 170, opts: { softcap: 5, scale: 0.5 } });
  add('softcap 30 causal alibi', { Sq: 150, Sk: 150, alibi: 'h', opts: { softcap: 30, isCausal: true } });
  add('negative scale', { opts: { scale: -0.2 } });
  add('gqa 8/2', { Hq: 8, Hk: 2, opts: { enableGqa: true } });
  add('mqa 4/1 causal', { Hq: 4, Hk: 1, opts: { enableGqa: true, isCausal: true } });
  add('gqa decode sq1 sk1000 (packed GQA, split-KV)', { B: 2, Hq: 8, Hk: 2, Sq: 1, Sk: 1000, D: 128, opts: { enableGqa: true } });
  add('gqa sq4 sk700 lowerRight causal (packed GQA)', { B: 2, Hq: 8, Hk: 2, Sq: 4, Sk: 700, D: 128, opts: { enableGqa: true, isCausal: true, alignment: 'lowerRight' } });
  add('gqa sq5 window alibi dropout (packed GQA)', { B: 2, Hq: 6, Hk: 2, Sq: 5, Sk: 333, alibi: 'h', opts: { enableGqa: true, window: [50, 0], alignment: 'lowerRight', dropoutP: 0.2 } });
  add('dropout 0.17', { Sq: 130, Sk: 150, opts: { dropoutP: 0.17 } });
  add('dropout 0.5 causal gqa fp16', { dtype: 'float16', Hq: 4, Hk: 2, Sq: 97, Sk: 97, opts: { dropoutP: 0.5, isCausal: true, enableGqa: true } });
  add('strided bshd', { layout: 'bshd', Hq: 4, Hk: 4, Sq: 77, Sk: 99 });
  add('strided bshd D72 gqa causal', { layout: 'bshd', D: 72, Hq: 4, Hk: 2, Sq: 77, Sk: 99, opts: { enableGqa: true, isCausal: true } });
  add('misaligned base (element-wise path)', { misalign: true, Sq: 60, Sk: 80 });
  add('forced 3 splits', { splits: 3, Sq: 50, Sk: 700 });
  add('forced 5 splits causal window alibi', { splits: 5, Sq: 64, Sk: 900, alibi: 'h', opts: { isCausal: true, alignment: 'lowerRight', window: [300, 0] } });
  add('forced 4 splits fp16 D256', { dtype: 'float16', splits: 4, D: 256, Sq: 20, Sk: 600 });
  add('varlen', { varlen: { q: [5, 17, 1, 64], k: [9, 17, 30, 130] } });
  add('varlen causal lowerRight gqa', { Hq: 4, Hk: 2, varlen: { q: [5, 130, 1], k: [9, 120, 300] }, opts: { isCausal: true, alignment: 'lowerRight', enableGqa: true } });
  add('varlen decode gqa (packed)', { Hq: 8, Hk: 2, D: 128, varlen: { q: [1, 1, 1], k: [500, 1300, 7] }, opts: { enableGqa: true } });
  add('varlen window dropout', { varlen: { q: [70, 3], k: [90, 200] }, opts: { window: [20, 3], dropoutP: 0.3 } });
  add('int64 offsets (batch stride 2^31)', { bigStride: true, B: 2, Hq: 2, Hk: 2, Sq: 128, Sk: 128, D: 64 });
  // The Hopper kernel forced by name where the plan would not pick it (short queries) or on shapes the
  // grid above reaches only through the auto choice; skipped on GPUs other than sm90.
  if (SM90) {
    // head dims 33-64, 97-128 and 225-256 (the buckets 64, 128, 256): the Hopper kernels' head dims
    const k = (dt, D) => `${dt === 'float16' ? 'fp16' : 'bf16'}_d${D <= 64 ? '64_sm90ws' : D <= 128 ? '128_sm90ws' : '256_sm90'}`;
    for (const [Sq, Sk] of [[1, 1], [17, 17], [1, 300], [1000, 1000], [300, 1000], [1000, 260]])
      for (const alignment of ['upperLeft', 'lowerRight'])
        add(`sm90 forced causal ${alignment} sq${Sq} sk${Sk} D128`, { D: 128, Sq, Sk, B: 1, Hq: 2, Hk: 2, kernel: k('bfloat16', 128), opts: { isCausal: true, alignment } });
    for (const D of [40, 64, 100, 128, 250, 256])
      add(`sm90 forced D${D} sq1000 sk1000 gqa`, { D, Sq: 1000, Sk: 1000, B: 1, Hq: 4, Hk: 2, kernel: k('bfloat16', D), opts: { enableGqa: true } });
    add('sm90 forced fp16 D256 window[-1,33] lowerRight', { dtype: 'float16', D: 256, Sq: 333, Sk: 500, kernel: k('float16', 256), opts: { window: [-1, 33], alignment: 'lowerRight' } });
    add('sm90 forced misaligned D64 sq200', { misalign: true, D: 64, Sq: 200, Sk: 211, kernel: k('bfloat16', 64) });
    add('sm90 forced strided bshd D128 causal', { layout: 'bshd', D: 128, Hq: 4, Hk: 4, Sq: 257, Sk: 257, kernel: k('bfloat16', 128), opts: { isCausal: true } });
    // The warp-specialized kernels (producer warpgroup, 3-stage ring, ping-pong consumers), where compiled.
    for (const ws of ['bf16_d64_sm90ws', 'bf16_d128_sm90ws', 'fp16_d64_sm90ws', 'fp16_d128_sm90ws']) {
      if (!info?.kernelNames?.includes(ws)) continue;
      const D = ws.includes('d64') ? 64 : 128;
      const add = (name, c) => addCase(name, { dtype: ws.startsWith('fp16') ? 'float16' : 'bfloat16', ...c });
      for (const alignment of ['upperLeft', 'lowerRight'])
        for (const [Sq, Sk] of [[1000, 1000], [300, 37], [37, 300], [1, 1], [129, 1000]])
          add(`sm90ws ${ws} causal ${alignment} sq${Sq} sk${Sk}`, { D, Sq, Sk, B: 1, Hq: 2, Hk: 2, kernel: ws, opts: { isCausal: true, alignment } });
      add(`sm90ws ${ws} gqa D${D - 11} sq700 sk900`, { D: D - 11, Sq: 700, Sk: 900, B: 2, Hq: 4, Hk: 2, kernel: ws, opts: { enableGqa: true } });
      add(`sm90ws ${ws} window[-1,20] lowerRight`, { D, Sq: 333, Sk: 500, kernel: ws, opts: { window: [-1, 20], alignment: 'lowerRight' } });
      add(`sm90ws ${ws} misaligned`, { misalign: true, D, Sq: 200, Sk: 211, kernel: ws });
      add(`sm90ws ${ws} strided bshd`, { layout: 'bshd', D, Hq: 4, Hk: 4, Sq: 257, Sk: 1257, kernel: ws });
    }
  }
  return only ? list.filter((c) => c.name.includes(only)) : list;
}

// ---------------------------------------------------------------- timings
function bench(quick) {
  const rows = [];
  const grid = [];
  for (const D of [64, 128, 256])
    for (const S of quick ? [4096] : [1024, 4096, 16384]) for (const causal of [false, true]) grid.push({ D, S, causal });
  for (const { D, S, causal } of grid) {
    const B = 16384 / S, H = 2048 / D;
    const o = { dtype: 'bfloat16', device: 'cuda' };
    const q = core.randn([B, H, S, D], { ...o, seed: 1 });
    const k = core.randn([B, H, S, D], { ...o, seed: 2 });
    const v = core.randn([B, H, S, D], { ...o, seed: 3 });
    const opts = { isCausal: causal, backends: ['flash-cuda'] };
    const plan = planFor(core.normalizeParams(q, k, v, { isCausal: causal }));
    const t = timeCall(() => {
      const r = core.sdpaForward(q, k, v, opts);
      r.out.dispose();
      r.logsumexp.dispose();
    });
    const tf = flops(B, H, S, S, D, causal) / (t.gpuMs * 1e-3) / 1e12;
    rows.push({ kind: 'grid', D, S, causal, B, H, ms: t.gpuMs, tflops: tf, kernel: plan.kernel, splits: plan.numSplits });
    log(`  D=${D} S=${S} causal=${causal ? 1 : 0} B=${B} H=${H}: ${t.gpuMs.toFixed(3)} ms, ${tf.toFixed(1)} TFLOP/s  [${plan.kernel}, splits ${plan.numSplits}]`);
    // The other lean tiles of this head dim, where compiled (and runnable here), forced by name.
    for (const alt of [`bf16_d${D}_lean`, `bf16_d${D}_alt`, ...(SM90 ? [`bf16_d${D}_sm90`, `bf16_d${D}_sm90_alt`, `bf16_d${D}_sm90ws`] : [])]) {
      if (alt === plan.kernel || !info?.kernelNames?.includes(alt)) continue;
      const params = core.normalizeParams(q, k, v, { isCausal: causal });
      const ta = timeCall(() => {
        const r = flashForward(params, { kernel: alt });
        r.out.dispose();
        r.logsumexp.dispose();
      });
      const tfa = flops(B, H, S, S, D, causal) / (ta.gpuMs * 1e-3) / 1e12;
      rows.push({ kind: 'grid-alt', D, S, causal, B, H, ms: ta.gpuMs, tflops: tfa, kernel: alt });
      log(`      alt ${alt}: ${ta.gpuMs.toFixed(3)} ms, ${tfa.toFixed(1)} TFLOP/s`);
    }
    [q, k, v].forEach((x) => x.dispose());
  }
  {
    const [B, Hq, Hk, Sk, D] = [8, 32, 8, 8192, 128];
    const o = { dtype: 'bfloat16', device: 'cuda' };
    const q = core.randn([B, Hq, 1, D], { ...o, seed: 1 });
    const k = core.randn([B, Hk, Sk, D], { ...o, seed: 2 });
    const v = core.randn([B, Hk, Sk, D], { ...o, seed: 3 });
    const opts = { enableGqa: true, backends: ['flash-cuda'] };
    const plan = planFor(core.normalizeParams(q, k, v, { enableGqa: true }));
    const t = timeCall(() => {
      const r = core.sdpaForward(q, k, v, opts);
      r.out.dispose();
      r.logsumexp.dispose();
    });
    const gbs = (2 * B * Hk * Sk * D * 2) / (t.gpuMs * 1e-3) / 1e9;
    rows.push({ kind: 'decode', us: t.gpuMs * 1e3, wallUs: t.wallMs * 1e3, gbs, kernel: plan.kernel, splits: plan.numSplits });
    log(`  decode B=8 Hq=32 Hk=8 Sq=1 Sk=8192 D=128: ${(t.gpuMs * 1e3).toFixed(1)} us GPU, ${(t.wallMs * 1e3).toFixed(1)} us wall, ${gbs.toFixed(0)} GB/s K+V  [${plan.kernel}, splits ${plan.numSplits}, packGqa ${plan.packGqa}]`);
    // Split counts beside the heuristic's choice (decode is bandwidth bound: bytes in flight per SM).
    const params = core.normalizeParams(q, k, v, { enableGqa: true });
    for (const numSplits of [2, 4, 8, 16, 32]) {
      if (numSplits === plan.numSplits) continue;
      const ts = timeCall(() => {
        const r = flashForward(params, { numSplits });
        r.out.dispose();
        r.logsumexp.dispose();
      });
      rows.push({ kind: 'decode-splits', splits: numSplits, us: ts.gpuMs * 1e3 });
      log(`      splits ${numSplits}: ${(ts.gpuMs * 1e3).toFixed(1)} us GPU`);
    }
    // The other decode tiles by name (the plan picks 'lean_small', 64x128; 'small' is 64x64, Q in registers).
    for (const kernel of ['bf16_d128_small', 'bf16_d128_lean_small']) {
      if (kernel === plan.kernel || !info?.kernelNames?.includes(kernel)) continue;
      for (const numSplits of [undefined, 8]) {
        const kp = planFor(params, { kernel, ...(numSplits ? { numSplits } : {}) });
        const tk = timeCall(() => {
          const r = flashForward(params, { kernel, ...(numSplits ? { numSplits } : {}) });
          r.out.dispose();
          r.logsumexp.dispose();
        });
        rows.push({ kind: 'decode-kernel', kernel, splits: kp.numSplits, us: tk.gpuMs * 1e3 });
        log(`      ${kernel}, splits ${kp.numSplits}: ${(tk.gpuMs * 1e3).toFixed(1)} us GPU`);
      }
    }
  }
  {
    const o = { dtype: 'bfloat16', device: 'cuda' };
    const q = core.randn([1, 1, 16, 64], { ...o, seed: 1 });
    const opts = { backends: ['flash-cuda'] };
    const t = timeCall(() => {
      const r = core.sdpaForward(q, q, q, opts);
      r.out.dispose();
      r.logsumexp.dispose();
    }, 500);
    rows.push({ kind: 'overhead', wallUs: t.wallMs * 1e3, gpuUs: t.gpuMs * 1e3 });
    log(`  per-call overhead B=1 H=1 S=16 D=64: ${(t.wallMs * 1e3).toFixed(1)} us wall per call (${t.n} calls)`);
  }
  return rows;
}

// ---------------------------------------------------------------- main
const { props, info } = deviceHeader(flashCudaBackend, SELF);
if (info) log(`build: archs ${info.cudaArchs}, ${info.kernels?.length} kernels`);
for (const k of info?.kernels ?? []) log(`  ${k}`);
// The Hopper kernels run on sm90 devices from an addon built for sm_90a (their forced cases and timings).
const SM90 = !SELF && props.major === 9 && props.minor === 0 && /\b90a\b/.test(String(info?.cudaArchs ?? ''));

let failed = 0;
if (!flag('--bench-only')) {
  const list = cases();
  log(`\n== ${list.length} checks against a float64 reference (tolerance bf16 ${TOL.bfloat16}, fp16 ${TOL.float16}, lse 2e-3)`);
  failed += runChecks(
    list,
    runCase,
    (c, r) =>
      `${r.ok ? 'PASS' : 'FAIL'} ${c.name}: max|dO| ${r.errO.toExponential(2)}, max|dLSE| ${r.errL.toExponential(2)}` +
      `${r.nan ? `, ${r.nan} NaN` : ''}, masked rows ${r.maskedRows}${r.badMasked ? ` (${r.badMasked} not -inf)` : ''}` +
      `${c.plan ? ` [${c.plan.kernel}, splits ${c.splits ?? c.plan.numSplits}${c.plan.packGqa ? ', packGqa' : ''}]` : ''}`,
  );
}
if (!flag('--checks-only') && !SELF) {
  log('\n== timings (bf16; TFLOP/s = 4*B*H*Sq*Sk*D / time, halved when causal; GPU time from CUDA events)');
  failed += runBench(bench, flag('--quick'), props);
}
process.exit(failed ? 1 : 0);
