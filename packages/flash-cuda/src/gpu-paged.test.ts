// Paged K/V (blockTable) on a GPU: every call runs on the paged pools and again on the packed K/V
// gathered from them, against cpu-math on the gathered K/V (the suite's reference), and against
// flash-cuda's own packed call (the same kernel and split count give the same bits). Pools are larger
// than the sequences need, blocks shuffled, unused blocks and unused table entries poisoned (NaN blocks,
// table entries outside the pool), lengths ending mid-block. Also: values written on the device after
// validation (what a replayed CUDA graph sees) never move an access outside the tensors. Skipped with
// the reason printed where there is no usable device.
import '@attn/cpu';
import { normalizeVarlenParams, randn, sdpaVarlen, type Tensor, tensor, type VarlenOptions } from '@attn/core';
import { expect, it } from 'vitest';
import { scaledMaxError as relErr } from '@attn/core/testing';
import { flashCudaBackend, flashForward, planFor } from './index.js';
import { describeWhereRunnable } from '@attn/conformance';

const av = flashCudaBackend.availability();

function sameBits(a: Tensor, b: Tensor): boolean {
  const x = a.toFloat64Array();
  const y = b.toFloat64Array();
  return x.length === y.length && x.every((v, i) => Object.is(v, y[i]));
}

const TOL = 3e-2; // bf16 / fp16, relative to the largest reference element
type Dt = 'bfloat16' | 'float16';
const cum = (xs: readonly number[]) => xs.reduce<number[]>((a, x) => [...a, a[a.length - 1]! + x], [0]);
const i32 = (xs: readonly number[], shape: number[], device: 'cpu' | 'cuda') =>
  tensor([...xs], shape, { dtype: 'int32', device });

/** A small deterministic generator (mulberry32) for the block shuffle. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Paged {
  /** Packed [totalK, Hk, D] on the GPU, the same values as the pools hold. */
  readonly kPacked: Tensor;
  readonly vPacked: Tensor;
  /** Pools [numBlocks, blockSize, Hk, D], unused blocks NaN. */
  readonly kPool: Tensor;
  readonly vPool: Tensor;
  /** int32 [B, maxBlocks]; entries no sequence reads are outside the pool. */
  readonly table: number[];
  readonly maxBlocks: number;
}

/** Packed K/V of these lengths and the same keys in shuffled pages of `bs` rows (a pool with spare blocks). */
function pagedKv(lensK: readonly number[], hk: number, d: number, bs: number, dtype: Dt, seed: number): Paged {
  const total = lensK.reduce((a, b) => a + b, 0);
  const row = hk * d;
  const k = randn([total, hk, d], { dtype, device: 'cpu', seed }).toFloat64Array();
  const v = randn([total, hk, d], { dtype, device: 'cpu', seed: seed + 1 }).toFloat64Array();
  const used = lensK.map((n) => Math.ceil(n / bs));
  const maxBlocks = Math.max(1, ...used) + 1; // one column nobody reads
  const numBlocks = used.reduce((a, b) => a + b, 0) + 3; // spare blocks, NaN-filled
  const order = Array.from({ length: numBlocks }, (_, i) => i);
  const r = rng(seed);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const kPool = new Float64Array(numBlocks * bs * row).fill(Number.NaN);
  const vPool = new Float64Array(numBlocks * bs * row).fill(Number.NaN);
  const table = new Array<number>(lensK.length * maxBlocks).fill(-1);
  let next = 0;
  let start = 0;
  lensK.forEach((n, b) => {
    for (let i = 0; i < maxBlocks; i++) table[b * maxBlocks + i] = i < used[b]! ? order[next++]! : numBlocks + 5 + i;
    for (let j = 0; j < n; j++) {
      const dst = (table[b * maxBlocks + Math.floor(j / bs)]! * bs + (j % bs)) * row;
      kPool.set(k.subarray((start + j) * row, (start + j + 1) * row), dst);
      vPool.set(v.subarray((start + j) * row, (start + j + 1) * row), dst);
    }
    start += n;
  });
  const o = { dtype, device: 'cuda' as const };
  return {
    kPacked: tensor(k, [total, hk, d], o),
    vPacked: tensor(v, [total, hk, d], o),
    kPool: tensor(kPool, [numBlocks, bs, hk, d], o),
    vPool: tensor(vPool, [numBlocks, bs, hk, d], o),
    table,
    maxBlocks,
  };
}

interface Case {
  readonly lensQ: readonly number[];
  readonly lensK: readonly number[];
  readonly hq: number;
  readonly hk: number;
  readonly d: number;
  readonly bs: number;
  readonly dtype?: Dt;
  readonly opts?: (device: 'cpu' | 'cuda') => Partial<VarlenOptions>;
  /** V's pool as a view with 8 spare columns a row: K and V pools of different row and block strides. */
  readonly vPadded?: boolean;
}

/** The same pool as a view of [numBlocks, blockSize, Hk, D + 8] (its spare columns NaN). */
function paddedPool(pool: Tensor): Tensor {
  const [nb, bs, hk, d] = pool.shape as [number, number, number, number];
  const src = pool.toFloat64Array();
  const wide = new Float64Array(nb * bs * hk * (d + 8)).fill(Number.NaN);
  for (let r = 0; r < nb * bs * hk; r++) wide.set(src.subarray(r * d, (r + 1) * d), r * (d + 8));
  return tensor(wide, [nb, bs, hk, d + 8], { dtype: pool.dtype, device: 'cuda' }).narrow(3, 0, d);
}

/** The varlen options of a case on one device (paged or packed K/V). */
function callOptions(c: Case, pg: Paged, device: 'cpu' | 'cuda', paged: boolean): VarlenOptions {
  return {
    cuSeqlensQ: i32(cum(c.lensQ), [c.lensQ.length + 1], device),
    cuSeqlensK: i32(cum(c.lensK), [c.lensK.length + 1], device),
    maxSeqlenQ: Math.max(...c.lensQ),
    maxSeqlenK: Math.max(...c.lensK),
    enableGqa: c.hq !== c.hk,
    ...(paged ? { blockTable: i32(pg.table, [c.lensK.length, pg.maxBlocks], device) } : {}),
    ...(c.opts?.(device) ?? {}),
  };
}

function setup(c: Case, seed: number) {
  const dtype = c.dtype ?? 'bfloat16';
  const totalQ = c.lensQ.reduce((a, b) => a + b, 0);
  const q = randn([totalQ, c.hq, c.d], { dtype, device: 'cuda', seed: seed + 7 });
  const pg = pagedKv(c.lensK, c.hk, c.d, c.bs, dtype, seed);
  const ref = sdpaVarlen(q.to('cpu'), pg.kPacked.to('cpu'), pg.vPacked.to('cpu'), {
    ...callOptions(c, pg, 'cpu', false),
    backends: ['cpu-math'],
  });
  const vPool = c.vPadded ? paddedPool(pg.vPool) : pg.vPool;
  const pagedParams = normalizeVarlenParams(q, pg.kPool, vPool, callOptions(c, pg, 'cuda', true));
  const packedParams = normalizeVarlenParams(q, pg.kPacked, pg.vPacked, callOptions(c, pg, 'cuda', false));
  return { q, pg, ref, pagedParams, packedParams };
}

describeWhereRunnable('flash-cuda paged K/V on a GPU', av.ok ? null : av.reason, () => {
  const slopes = (device: 'cpu' | 'cuda') =>
    tensor([0.5, 0.25, 0.4, 0.125, 0.3, 0.2, 0.1, 0.05], [2, 4], { dtype: 'float32', device });
  const cases: Array<[string, Case]> = [];
  for (const bs of [1, 16, 64, 256]) {
    cases.push([
      `decode, packed GQA, block ${bs}`,
      { lensQ: [1, 1, 1], lensK: [1000, 17, 513], hq: 8, hk: 2, d: 128, bs },
    ]);
    cases.push([
      `decode, packed GQA, block ${bs}, V's pool with padded rows (K and V laid out apart)`,
      { lensQ: [1, 1, 1], lensK: [1000, 17, 513], hq: 8, hk: 2, d: 128, bs, vPadded: true },
    ]);
    cases.push([
      `prefill chunks, causal lower-right, block ${bs}`,
      {
        lensQ: [5, 130, 1, 40],
        lensK: [9, 120, 300, 60],
        hq: 4,
        hk: 2,
        d: 64,
        bs,
        opts: () => ({ isCausal: true, alignment: 'lowerRight' }),
      },
    ]);
  }
  cases.push(
    ['D 256, fp16, block 16', { lensQ: [3, 70], lensK: [33, 200], hq: 2, hk: 2, d: 256, bs: 16, dtype: 'float16' }],
    ['D 96 (generic tile loads), block 64', { lensQ: [20, 1], lensK: [150, 65], hq: 4, hk: 4, d: 96, bs: 64 }],
    ['D 72 (generic tile loads), block 16', { lensQ: [7, 33], lensK: [100, 47], hq: 2, hk: 1, d: 72, bs: 16 }],
    [
      'D 20 (not a multiple of 8: element-wise loads), block 16',
      { lensQ: [9, 1], lensK: [70, 33], hq: 4, hk: 2, d: 20, bs: 16 },
    ],
    [
      'window lower-right, softcap, ALiBi, block 16',
      {
        lensQ: [30, 9],
        lensK: [250, 40],
        hq: 4,
        hk: 2,
        d: 128,
        bs: 16,
        opts: (device) => ({ window: [40, 3], alignment: 'lowerRight', softcap: 5, alibiSlopes: slopes(device) }),
      },
    ],
    [
      'sequsedK (rows using none, some and all keys), block 16',
      {
        lensQ: [1, 4, 2],
        lensK: [300, 90, 64],
        hq: 8,
        hk: 2,
        d: 128,
        bs: 16,
        opts: (device) => ({ sequsedK: i32([0, 77, 64], [3], device) }),
      },
    ],
  );
  cases.forEach(([name, c], n) => {
    it(`paged == packed == cpu-math: ${name}`, () => {
      const { pagedParams, packedParams, ref } = setup(c, 100 + 10 * n);
      const plan = planFor(pagedParams);
      expect(plan.kernel).not.toMatch(/sm90/);
      const paged = flashForward(pagedParams, { numSplits: plan.numSplits });
      const packed = flashForward(packedParams, { numSplits: plan.numSplits, kernel: plan.kernel });
      expect(relErr(paged.out, ref.out)).toBeLessThan(TOL);
      expect(relErr(paged.logsumexp, ref.logsumexp)).toBeLessThan(TOL);
      expect(sameBits(paged.out, packed.out), 'paged and packed out').toBe(true);
      expect(sameBits(paged.logsumexp, packed.logsumexp), 'paged and packed lse').toBe(true);
    });
  });

  it('split-KV decode (packed GQA): every split count 1..128, block 16 and 64', () => {
    for (const bs of [16, 64]) {
      const c: Case = { lensQ: [1, 1, 1, 1], lensK: [3000, 1111, 1, 0], hq: 8, hk: 2, d: 128, bs };
      const { pagedParams, packedParams, ref } = setup(c, 900 + bs);
      expect(planFor(pagedParams).packGqa).toBe(true);
      for (let numSplits = 1; numSplits <= 128; numSplits++) {
        const paged = flashForward(pagedParams, { numSplits });
        // The paged plan's tile at this split count (the 8-warp decode tile while its grid is one wave).
        const packed = flashForward(packedParams, { numSplits, kernel: planFor(pagedParams, { numSplits }).kernel });
        expect(sameBits(paged.out, packed.out), `block ${bs}, ${numSplits} splits`).toBe(true);
        if (numSplits % 16 === 1 || numSplits === 128) {
          expect(relErr(paged.out, ref.out), `${numSplits} splits`).toBeLessThan(TOL);
          expect(relErr(paged.logsumexp, ref.logsumexp), `${numSplits} splits`).toBeLessThan(TOL);
        }
      }
    }
  });

  it('through sdpaVarlen (selection picks flash-cuda for a paged call)', () => {
    const c: Case = { lensQ: [1, 1], lensK: [700, 33], hq: 8, hk: 2, d: 128, bs: 64 };
    const { q, pg, ref } = setup(c, 77);
    const r = sdpaVarlen(q, pg.kPool, pg.vPool, { ...callOptions(c, pg, 'cuda', true), backends: ['flash-cuda'] });
    expect(relErr(r.out, ref.out)).toBeLessThan(TOL);
  });

  // The kernels read cuSeqlensQ/K, sequsedK and the block table on the device. Values changed there after
  // validation (a replayed graph) give unspecified numbers, never an out-of-bounds access: run the params
  // of a validated call with device tensors holding values core would refuse (compute-sanitizer memcheck
  // runs this test in the GPU suite).
  it('out-of-range lengths and table entries on the device: no fault, the next call is right again', () => {
    const c: Case = { lensQ: [1, 3, 1], lensK: [500, 40, 129], hq: 8, hk: 2, d: 128, bs: 16 };
    const { pagedParams, packedParams, ref } = setup(c, 4242);
    const B = c.lensQ.length;
    const badQ = i32([-5, 2, 1 << 30, -7], [B + 1], 'cuda');
    const badK = i32([0, 2147483647, -3, 2000000000], [B + 1], 'cuda');
    const badUsed = i32([-9, 1 << 30, 100000], [B], 'cuda');
    const badTable = i32(
      Array.from({ length: B * pagedParams.paged!.maxBlocksPerSeq }, (_, i) => (i % 3 === 0 ? -100 : 1e9 + i)),
      [B, pagedParams.paged!.maxBlocksPerSeq],
      'cuda',
    );
    const bad = (p: typeof pagedParams, withTable: boolean) => ({
      ...p,
      varlen: { ...p.varlen!, cuSeqlensQ: badQ, cuSeqlensK: badK },
      sequsedK: { ...(p.sequsedK ?? { lengths: new Int32Array(B) }), tensor: badUsed },
      paged: withTable ? { ...p.paged!, blockTable: badTable } : p.paged,
    });
    for (const numSplits of [1, 7]) {
      for (const r of [
        flashForward(bad(pagedParams, true), { numSplits }),
        flashForward(bad(packedParams, false), { numSplits }),
      ]) {
        r.out.toFloat64Array(); // synchronizes: a fault would surface here
        r.logsumexp.toFloat64Array();
      }
    }
    const again = flashForward(pagedParams);
    expect(relErr(again.out, ref.out)).toBeLessThan(TOL);
  });
});
