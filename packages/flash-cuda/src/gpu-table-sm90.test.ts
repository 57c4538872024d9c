// flash-cuda's Hopper kernels forced by name where the plan would not pick them (short queries, odd
// head dims in their bucket), every Hopper forward kernel where compiled, and each Hopper dK/dV kernel
// forced through the kernel option (the TMA warp-specialized one, which only the option runs, on every kind of
// call it takes; the cp.async one on a few of the same), through the conformance harness; and the Hopper forward's
// two producers (TMA for dense calls, cp.async for varlen ones) against each other. Runs on sm90 devices with an
// addon built for sm_90a; elsewhere skipped with the reason.
import '@attn/cpu';
import { normalizeParams, normalizeVarlenParams, randn, tensor } from '@attn/core';
import { describeCaseTable, describeWhereRunnable, type TableCase, tableCase as spec } from '@attn/conformance';
import { deviceProperties } from '@attn/cuda';
import { expect, it } from 'vitest';
import { flashBackward, flashCudaBackend, flashForward } from './index.js';

function blocker(): string | null {
  const av = flashCudaBackend.availability();
  if (!av.ok) return av.reason;
  const props = deviceProperties(0);
  const archs = String(flashCudaBackend.buildInfo?.().cudaArchs ?? '');
  if (props.major !== 9 || props.minor !== 0)
    return `the Hopper kernels need an sm90 device, this is sm_${props.major}${props.minor}`;
  if (!/\b90a\b/.test(archs)) return `the addon was built without sm_90a (archs ${archs})`;
  return null;
}

const forced = (kernel: string): Partial<TableCase> => ({
  forwardOnly: true,
  launch: { forward: (p) => flashForward(p, { kernel }) },
});
/** The default forward, then the backward on one kernel family (the kernel option, as sdpa passes it). */
const forcedBackward = (kernel: string): Partial<TableCase> => ({
  launch: {
    forward: (p) => flashForward(p),
    backward: (p, saved, gradOut) => flashBackward({ ...p, kernel }, saved, gradOut),
  },
});
/** The Hopper kernel of a head dim's bucket (64, 128, 256). */
const bucket = (dtype: 'bfloat16' | 'float16', D: number) =>
  `${dtype === 'float16' ? 'fp16' : 'bf16'}_d${D <= 64 ? 64 : D <= 128 ? 128 : 256}_sm90ws`;

function cases(): TableCase[] {
  const list: TableCase[] = [];
  const add = (name: string, c: Parameters<typeof spec>[1], kernel: string) => list.push(spec(name, c, forced(kernel)));
  for (const [Sq, Sk] of [
    [1, 1],
    [17, 17],
    [1, 300],
    [1000, 1000],
    [300, 1000],
    [1000, 260],
  ] as const)
    for (const alignment of ['upperLeft', 'lowerRight'] as const)
      add(
        `sm90 forced causal ${alignment} sq${Sq} sk${Sk} D128`,
        { D: 128, Sq, Sk, B: 1, Hq: 2, causal: true, alignment },
        bucket('bfloat16', 128),
      );
  for (const D of [40, 64, 100, 128, 250, 256])
    add(`sm90 forced D${D} sq1000 sk1000 gqa`, { D, Sq: 1000, Sk: 1000, B: 1, Hq: 4, Hk: 2 }, bucket('bfloat16', D));
  add(
    'sm90 forced fp16 D256 window[-1,33] lowerRight',
    { dtype: 'float16', D: 256, Sq: 333, Sk: 500, window: [-1, 33], alignment: 'lowerRight' },
    bucket('float16', 256),
  );
  add('sm90 forced misaligned D64 sq200', { misalign: 'base', D: 64, Sq: 200, Sk: 211 }, bucket('bfloat16', 64));
  add(
    'sm90 forced strided bshd D128 causal',
    { layout: 'bshd', D: 128, Hq: 4, Sq: 257, Sk: 257, causal: true },
    bucket('bfloat16', 128),
  );
  // Every Hopper kernel (3-stage ring at D 64 / 128, 2 stages at D 256; the joint K/V release at D 64, K and V
  // released apart above) on causal, GQA, window, misaligned and strided calls, where compiled.
  const names = (flashCudaBackend.buildInfo?.().kernelNames ?? []) as readonly string[];
  for (const ws of [
    'bf16_d64_sm90ws',
    'bf16_d64_sm90ws_rows64',
    'bf16_d128_sm90ws',
    'bf16_d256_sm90ws',
    'fp16_d64_sm90ws',
    'fp16_d64_sm90ws_rows64',
    'fp16_d128_sm90ws',
    'fp16_d256_sm90ws',
  ]) {
    if (!names.includes(ws)) continue;
    const D = Number(/_d(\d+)_/.exec(ws)![1]);
    const dtype = ws.startsWith('fp16') ? ('float16' as const) : ('bfloat16' as const);
    for (const alignment of ['upperLeft', 'lowerRight'] as const)
      for (const [Sq, Sk] of [
        [1000, 1000],
        [300, 37],
        [37, 300],
        [1, 1],
        [129, 1000],
      ] as const)
        add(
          `sm90ws ${ws} causal ${alignment} sq${Sq} sk${Sk}`,
          { dtype, D, Sq, Sk, B: 1, Hq: 2, causal: true, alignment },
          ws,
        );
    // A head dim below the bucket: D - 11 (not a multiple of 8: element-wise loads) where the tile has the cp.async
    // path, D - 8 for the one-warpgroup tile, which loads by TMA only.
    const gqaD = ws.endsWith('_rows64') ? D - 8 : D - 11;
    add(`sm90ws ${ws} gqa D${gqaD} sq700 sk900`, { dtype, D: gqaD, Sq: 700, Sk: 900, B: 2, Hq: 4, Hk: 2 }, ws);
    add(
      `sm90ws ${ws} window[-1,20] lowerRight`,
      { dtype, D, Sq: 333, Sk: 500, window: [-1, 20], alignment: 'lowerRight' },
      ws,
    );
    // The one-warpgroup tile loads by TMA only: a misaligned call is refused (addon.test.ts), not run.
    if (!ws.endsWith('_rows64')) add(`sm90ws ${ws} misaligned`, { dtype, misalign: 'base', D, Sq: 200, Sk: 211 }, ws);
    add(`sm90ws ${ws} strided bshd`, { dtype, layout: 'bshd', D, Hq: 4, Sq: 257, Sk: 1257 }, ws);
  }
  // The Hopper dK/dV kernels forced: the TMA warp-specialized one on every kind of call it takes (D <= 128 in
  // steps of 8, dense aligned tensors; both builds, D 64's with 128-query pairs), the cp.async one on a few of the
  // same calls.
  const bwd = (name: string, c: Parameters<typeof spec>[1], kernel: string) =>
    list.push(spec(name, c, forcedBackward(kernel)));
  for (const dtype of ['bfloat16', 'float16'] as const) {
    const tma = (name: string, c: Parameters<typeof spec>[1]) =>
      bwd(`bwd sm90-bwd-tma-ws ${dtype} ${name}`, { dtype, ...c }, 'sm90-bwd-tma-ws');
    // Both alignments on each build: D 128 (named without a prefix) and D 64 (pairs of 128 query rows, dQ split
    // between the warpgroups by rows).
    for (const [D, tag] of [
      [128, ''],
      [64, 'D64 '],
    ] as const)
      for (const alignment of ['upperLeft', 'lowerRight'] as const) {
        tma(`${tag}causal ${alignment} sq1000 sk1000`, { D, Sq: 1000, Sk: 1000, B: 1, Hq: 2, causal: true, alignment });
        if (D === 128)
          tma(`causal ${alignment} sq300 sk1000`, { D, Sq: 300, Sk: 1000, B: 1, Hq: 2, causal: true, alignment });
        tma(`${tag}causal ${alignment} sq1000 sk260 (rows without keys)`, {
          D,
          Sq: 1000,
          Sk: 260,
          B: 1,
          Hq: 2,
          causal: true,
          alignment,
        });
        tma(`${tag}window[40,9] ${alignment}`, { D, Sq: 333, Sk: 500, window: [40, 9], alignment });
      }
    tma('sq1 sk1', { D: 128, Sq: 1, Sk: 1 });
    tma('sq17 sk17 causal', { D: 128, Sq: 17, Sk: 17, causal: true });
    tma('gqa 8/2 D72 sq700 sk900', { D: 72, Sq: 700, Sk: 900, B: 2, Hq: 8, Hk: 2 });
    tma('mqa 4/1 causal D120', { D: 120, Sq: 390, Sk: 390, Hq: 4, Hk: 1, causal: true });
    tma('window[-1,20] lowerRight D96', { D: 96, Sq: 333, Sk: 500, window: [-1, 20], alignment: 'lowerRight' });
    tma('long keys sq64 sk3000', { D: 128, Sq: 64, Sk: 3000, B: 1, Hq: 2 });
    tma('long queries sq3000 sk64', { D: 128, Sq: 3000, Sk: 64, B: 1, Hq: 2 });
    tma('strided bshd gqa causal', { layout: 'bshd', D: 128, Hq: 4, Hk: 2, Sq: 257, Sk: 1257, causal: true });
    tma('negative scale', { D: 128, Sq: 200, Sk: 300, scale: -0.2 });
    tma('deterministic causal gqa', { D: 128, Hq: 4, Hk: 2, Sq: 257, Sk: 257, causal: true, deterministic: true });
    tma('deterministic window lowerRight', {
      D: 128,
      Sq: 90,
      Sk: 300,
      window: [20, 0],
      alignment: 'lowerRight',
      deterministic: true,
    });
    // The rest of the D64 build's cases.
    tma('D64 sq1 sk1', { D: 64, Sq: 1, Sk: 1 });
    tma('D8 sq17 sk17 causal', { D: 8, Sq: 17, Sk: 17, causal: true });
    tma('gqa 8/2 D40 sq700 sk900', { D: 40, Sq: 700, Sk: 900, B: 2, Hq: 8, Hk: 2 });
    tma('D64 long keys sq64 sk3000', { D: 64, Sq: 64, Sk: 3000, B: 1, Hq: 2 });
    tma('D64 long queries sq3000 sk64', { D: 64, Sq: 3000, Sk: 64, B: 1, Hq: 2 });
    tma('D64 strided bshd gqa causal', { layout: 'bshd', D: 64, Hq: 4, Hk: 2, Sq: 257, Sk: 1257, causal: true });
    tma('D64 deterministic causal gqa', { D: 64, Hq: 4, Hk: 2, Sq: 257, Sk: 257, causal: true, deterministic: true });
    tma('D64 deterministic window[150,7] lowerRight', {
      D: 64,
      Sq: 700,
      Sk: 900,
      window: [150, 7],
      alignment: 'lowerRight',
      deterministic: true,
    });
  }
  const cpAsync = (name: string, c: Parameters<typeof spec>[1]) =>
    bwd(`bwd sm90-bwd-cp-async ${name}`, c, 'sm90-bwd-cp-async');
  cpAsync('causal sq1000 sk1000 D128', { D: 128, Sq: 1000, Sk: 1000, B: 1, Hq: 2, causal: true });
  cpAsync('gqa 8/2 D72', { D: 72, Sq: 300, Sk: 400, Hq: 8, Hk: 2 });
  cpAsync('causal sq1000 sk1000 D64', { D: 64, Sq: 1000, Sk: 1000, B: 1, Hq: 2, causal: true });
  cpAsync('deterministic causal D128', { D: 128, Sq: 257, Sk: 257, causal: true, deterministic: true });
  return list;
}

const reason = blocker();
describeWhereRunnable('flash-cuda Hopper kernels forced by name', reason, () =>
  describeCaseTable('flash-cuda', reason === null ? cases() : []),
);

// One sequence as a dense call (its tiles loaded by TMA: rows past the end zero-filled by the tensor map) and as a
// varlen call over the same packed rows (cp.async, rows past the end zero-filled by the loads): the same tiles reach
// shared memory, so out and lse agree bit for bit. Head dims below their bucket (112, 40) zero-fill columns too.
describeWhereRunnable('flash-cuda Hopper forward: TMA and cp.async producers', reason, () => {
  const shapes = [
    { D: 112, Sq: 1000, Sk: 777, Hq: 4, Hk: 2, causal: true },
    { D: 40, Sq: 17, Sk: 1000, Hq: 2, Hk: 2, causal: false },
    { D: 256, Sq: 300, Sk: 333, Hq: 3, Hk: 1, causal: true },
    { D: 128, Sq: 1, Sk: 129, Hq: 8, Hk: 8, causal: false },
  ];
  for (const { D, Sq, Sk, Hq, Hk, causal } of shapes)
    it(`D${D} sq${Sq} sk${Sk} ${Hq}/${Hk}${causal ? ' causal lower-right' : ''}: bitwise equal`, () => {
      const o = { dtype: 'bfloat16' as const, device: 'cuda' as const };
      // Packed [S, H, D] rows; the dense call reads them as [1, H, S, D] through strides.
      const q = randn([Sq, Hq, D], { ...o, seed: 21 }),
        k = randn([Sk, Hk, D], { ...o, seed: 22 }),
        v = randn([Sk, Hk, D], { ...o, seed: 23 });
      const dense = (t: typeof q, s: number, h: number) => t.reshape([1, s, h, D]).transpose(1, 2);
      const opts = { enableGqa: Hq !== Hk, isCausal: causal, alignment: 'lowerRight' as const };
      const kernel = bucket('bfloat16', D);
      const a = flashForward(normalizeParams(dense(q, Sq, Hq), dense(k, Sk, Hk), dense(v, Sk, Hk), opts), { kernel });
      const cu = (n: number) => tensor([0, n], [2], { dtype: 'int32', device: 'cuda' });
      const varlen = { ...opts, cuSeqlensQ: cu(Sq), cuSeqlensK: cu(Sk), maxSeqlenQ: Sq, maxSeqlenK: Sk };
      const b = flashForward(normalizeVarlenParams(q, k, v, varlen), { kernel });
      const outA = a.out.transpose(1, 2).contiguous().toFloat64Array(),
        outB = b.out.toFloat64Array();
      expect(outA.length).toBe(Sq * Hq * D);
      expect(outA.some((x) => x !== 0)).toBe(true);
      expect(Array.from(outA)).toEqual(Array.from(outB));
      expect(Array.from(a.logsumexp.toFloat64Array())).toEqual(Array.from(b.logsumexp.toFloat64Array()));
    });
});

// D 64's one-warpgroup tile (two CTAs per SM) against the 128-row tile: each row's keys, tiles and arithmetic are the
// same, so out and lse agree bit for bit.
describeWhereRunnable('flash-cuda Hopper forward: the one-warpgroup tile', reason, () => {
  for (const { D, Sq, Sk, Hq, Hk, causal } of [
    { D: 64, Sq: 1000, Sk: 1000, Hq: 4, Hk: 2, causal: true },
    { D: 40, Sq: 17, Sk: 777, Hq: 2, Hk: 2, causal: false },
    { D: 64, Sq: 129, Sk: 2000, Hq: 3, Hk: 1, causal: true },
  ])
    it(`D${D} sq${Sq} sk${Sk} ${Hq}/${Hk}${causal ? ' causal lower-right' : ''}: bitwise equal`, () => {
      const o = { dtype: 'bfloat16' as const, device: 'cuda' as const };
      const p = normalizeParams(
        randn([2, Hq, Sq, D], { ...o, seed: 31 }),
        randn([2, Hk, Sk, D], { ...o, seed: 32 }),
        randn([2, Hk, Sk, D], { ...o, seed: 33 }),
        { enableGqa: Hq !== Hk, isCausal: causal, alignment: 'lowerRight' },
      );
      const a = flashForward(p, { kernel: 'bf16_d64_sm90ws' });
      const b = flashForward(p, { kernel: 'bf16_d64_sm90ws_rows64' });
      const outA = a.out.toFloat64Array();
      expect(outA.some((x) => x !== 0)).toBe(true);
      expect(Array.from(outA)).toEqual(Array.from(b.out.toFloat64Array()));
      expect(Array.from(a.logsumexp.toFloat64Array())).toEqual(Array.from(b.logsumexp.toFloat64Array()));
    });
});
