// sdpaKvCache on the CUDA backends: the conformance kv-cache cases (append, rotary, paged and
// contiguous caches, cacheBatchIdx, leftpadK, GQA, causal, window, softcap, ALiBi) plus decode shapes
// with D == Dv on flash-cuda and cuda-math against cpu-math with the accuracy rule; flash-cuda must take
// every half-precision case with D == Dv. Then flash-cuda's forward that appends and rotates itself (the
// plan's fusedKvAppend) against its separate append kernel, bit for bit (out, logsumexp, both caches), at
// forced split counts with the appended keys across split, tile and page boundaries; which calls the plan
// fuses; and a decode step with append captured into a CUDA graph and replayed with new lengths written on
// the device, each replay against cpu-math on the same inputs. Skipped with the reason printed where there
// is no usable device.
import '@attn/cpu';
import {
  explainKvCache,
  type KvCacheOptions,
  normalizeKvCacheParams,
  randn,
  sdpaKvCache,
  type Tensor,
  tensor,
} from '@attn/core';
import { buildKvCacheCases, describeWhereRunnable, type KvCacheCaseSpec, runKvCacheCase } from '@attn/conformance';
import { captureGraph, copyDeviceToDevice, type CudaStorage, synchronize } from '@attn/cuda';
import { expect, it } from 'vitest';
import { scaledMaxError as relErr } from '@attn/core/testing';
import { flashCudaBackend, flashKvCacheForward, kvCachePlanFor } from './index.js';

const av = flashCudaBackend.availability();

const decode = {
  batch: 3,
  headsQ: 8,
  headsKV: 2,
  seqQ: 1,
  headDim: 64,
  headDimV: 64,
  newLen: 1,
  causal: true,
} as const;
const EXTRA: KvCacheCaseSpec[] = (['float16', 'bfloat16'] as const).flatMap((dtype) => [
  {
    ...decode,
    dtype,
    name: `paged-b16-append-rotary-softcap-d64/${dtype}`,
    seqQ: 3,
    newLen: 3,
    seqlens: [33, 15, 0],
    cache: { kind: 'paged', blockSize: 16 },
    rotary: { dim: 64, interleaved: false },
    softcap: 4,
  },
  {
    ...decode,
    dtype,
    name: `paged-b64-window-alibi-leftpad/${dtype}`,
    seqlens: [100, 3, 200],
    leftpadK: [10, 0, 64],
    cache: { kind: 'paged', blockSize: 64 },
    window: [50, 0],
    alibi: true,
    rotary: { dim: 32, interleaved: true },
  },
  {
    ...decode,
    dtype,
    name: `contiguous-cachebatchidx-leftpad-d128/${dtype}`,
    headDim: 128,
    headDimV: 128,
    seqlens: [700, 1, 1023],
    leftpadK: [5, 1, 0],
    cacheBatchIdx: [3, 0, 1],
    cache: { kind: 'contiguous', rows: 4, length: 1024 },
    rotary: { dim: 128, interleaved: false },
  },
  {
    ...decode,
    dtype,
    name: `paged-b256-prefill-chunk-noncausal-d72/${dtype}`,
    batch: 2,
    headDim: 72,
    headDimV: 72,
    seqQ: 20,
    newLen: 20,
    seqlens: [100, 300],
    cache: { kind: 'paged', blockSize: 256 },
    causal: false,
    rotary: { dim: 24, interleaved: false },
  },
  {
    ...decode,
    dtype,
    name: `paged-b16-append6-across-pages-interleaved-d128/${dtype}`,
    headDim: 128,
    headDimV: 128,
    seqQ: 2,
    newLen: 6,
    seqlens: [13, 250, 0],
    cache: { kind: 'paged', blockSize: 16 },
    rotary: { dim: 64, interleaved: true },
  },
  {
    ...decode,
    dtype,
    name: `contiguous-append16-cachebatchidx-leftpad-noncausal/${dtype}`,
    seqQ: 4,
    newLen: 16,
    seqlens: [40, 100, 3],
    leftpadK: [2, 90, 0],
    cacheBatchIdx: [1, 3, 0],
    cache: { kind: 'contiguous', rows: 4, length: 160 },
    causal: false,
    rotary: { dim: 32, interleaved: false },
  },
  {
    ...decode,
    dtype,
    name: `decode-b8-hq32-hk8-d128-paged256/${dtype}`,
    batch: 8,
    headsQ: 32,
    headsKV: 8,
    headDim: 128,
    headDimV: 128,
    seqlens: [4000, 17, 1, 2500, 999, 0, 3000, 64],
    cache: { kind: 'paged', blockSize: 256 },
    rotary: { dim: 128, interleaved: false },
  },
]);
const CASES = [...buildKvCacheCases(), ...EXTRA];
const halfSameDims = (s: KvCacheCaseSpec) =>
  (s.dtype === 'float16' || s.dtype === 'bfloat16') && s.headDim === s.headDimV;

describeWhereRunnable('sdpaKvCache on CUDA against cpu-math', av.ok ? null : av.reason, () => {
  const seed = BigInt(Date.now() % 1_000_000);
  for (const backend of ['flash-cuda', 'cuda-math'] as const) {
    CASES.forEach((spec, i) => {
      it(`${backend}: ${spec.name}`, () => {
        const outcome = runKvCacheCase(backend, spec, seed + BigInt(i), { type: 'cuda', index: 0 });
        if (!outcome.ran) {
          // cuda-math takes every call; flash-cuda declines only float32/float64 and Dv != D.
          expect(
            backend === 'flash-cuda' && !halfSameDims(spec),
            `${backend} declined ${spec.name}: ${outcome.reasons.join('; ')}`,
          ).toBe(true);
          return;
        }
        const failed = outcome.verdicts.filter((v) => !v.ok).map((v) => v.message);
        expect(failed, `${spec.name} (seed ${seed + BigInt(i)})`).toEqual([]);
      });
    });
  }

  it('explain says why flash-cuda declines a kv-cache call (Dv != D) and cuda-math runs it', () => {
    const o = { dtype: 'float16' as const, device: 'cuda' as const };
    const report = explainKvCache(randn([1, 1, 2, 16], o), randn([1, 8, 2, 16], o), randn([1, 8, 2, 8], o), {});
    expect(report.selected).toBe('cuda-math');
    const flash = report.candidates.find((c) => c.backend === 'flash-cuda')!;
    expect(flash.reasons.map((r) => r.rule)).toContain('headDimsEqual');
  });
});

/** One fused-against-separate comparison: shapes, cache, features and the split counts to force. */
interface FusedCase {
  readonly name: string;
  readonly dtype: 'float16' | 'bfloat16';
  readonly hq: number;
  readonly hk: number;
  readonly sq: number;
  readonly d: number;
  readonly newLen: number;
  readonly seqlens: readonly number[];
  readonly cache: { readonly blockSize: number } | { readonly rows: number; readonly length: number };
  readonly cacheBatchIdx?: readonly number[];
  readonly leftpadK?: readonly number[];
  readonly rotary?: { readonly dim: number; readonly interleaved: boolean };
  readonly causal: boolean;
  readonly softcap?: number;
  readonly splits: readonly number[];
  /** The tile the plan must pick, where the case's boundaries were laid out for its key block. */
  readonly kernel?: string;
  /** A tile forced by name on both paths instead (one the plan picks for other calls). */
  readonly forceKernel?: string;
}

// Row 0's appended keys 254..259 cross key 256: a page boundary (block 16) and, at 3 splits, a split boundary
// (of the 128-key tile the plan picks for this paged step, 1 tile per split; of the 64-key tile, 2 tiles each);
// row 1's end at a tile's last key; row 2 appends into an empty row.
const DECODE_APPEND6: FusedCase = {
  name: 'paged-b16-d128-gqa-append6-across-split-and-page-rotary-halves',
  dtype: 'bfloat16',
  hq: 8,
  hk: 2,
  sq: 1,
  d: 128,
  newLen: 6,
  seqlens: [254, 122, 0],
  cache: { blockSize: 16 },
  rotary: { dim: 128, interleaved: false },
  causal: true,
  splits: [1, 2, 3],
  kernel: 'bf16_d128_decode_wide',
};

// The key blocks of the tiles these cases run: for the decode kernel (at most 16 packed rows) 64 keys on its 4-warp
// tile and 128 on its 8-warp one ('decode_wide'), 128 for the 64-row tiles ('lean_small' at D 64 and 128, 'small'
// at D 64). A split holds whole key blocks.
const FUSED: FusedCase[] = [
  DECODE_APPEND6,
  // The same on the 64-key tile of 4 warps (the plan's where the wide tile's grid would exceed one wave).
  {
    ...DECODE_APPEND6,
    name: 'paged-b16-d128-gqa-append6-across-split-and-page-rotary-halves-64-key-tile',
    kernel: undefined,
    forceKernel: 'bf16_d128_decode',
  },
  // The same over 20 packed rows (5 queries x 4): the 64-row tile, whose 128-key tiles put the boundary at
  // key 256 at 2 and 3 splits.
  {
    ...DECODE_APPEND6,
    name: 'paged-b16-d128-gqa-sq5-append6-across-split-and-page-rotary-halves',
    sq: 5,
    kernel: 'bf16_d128_lean_small',
  },
  // 16 appended keys (the most the plan fuses) across key 128 (row 0: a split boundary at 2 and 4 splits of
  // 64-key tiles); GPT-J pairs over part of D.
  {
    name: 'paged-b64-d64-gqa-sq4-append16-across-split-rotary-interleaved',
    dtype: 'float16',
    hq: 8,
    hk: 2,
    sq: 4,
    d: 64,
    newLen: 16,
    seqlens: [120, 300],
    cache: { blockSize: 64 },
    rotary: { dim: 32, interleaved: true },
    causal: true,
    splits: [1, 2, 4],
    kernel: 'fp16_d64_decode',
  },
  // Decode, one appended key, no GQA (a CTA per query head), no rotary.
  {
    name: 'paged-b256-d128-mha-decode-append1-no-rotary',
    dtype: 'bfloat16',
    hq: 4,
    hk: 4,
    sq: 1,
    d: 128,
    newLen: 1,
    seqlens: [1000, 255, 511],
    cache: { blockSize: 256 },
    causal: true,
    splits: [1, 4, 7],
  },
  // Contiguous cache read as dense rows: cacheBatchIdx and leftpadK, the appended keys of row 1 across key 128.
  {
    name: 'contiguous-d128-gqa-sq2-append3-cachebatchidx-leftpad-rotary-interleaved',
    dtype: 'bfloat16',
    hq: 8,
    hk: 2,
    sq: 2,
    d: 128,
    newLen: 3,
    seqlens: [200, 127, 400],
    cacheBatchIdx: [4, 0, 2],
    leftpadK: [3, 0, 100],
    cache: { rows: 5, length: 512 },
    rotary: { dim: 64, interleaved: true },
    causal: true,
    splits: [1, 3],
  },
  // The tile with the score features (softcap): 'small'; the appended keys across key 128 (a page and, at 2
  // splits, a split boundary).
  {
    name: 'paged-b16-d64-gqa-append2-softcap-noncausal-rotary-halves',
    dtype: 'bfloat16',
    hq: 6,
    hk: 2,
    sq: 1,
    d: 64,
    newLen: 2,
    seqlens: [127, 17],
    cache: { blockSize: 16 },
    rotary: { dim: 48, interleaved: false },
    causal: false,
    softcap: 5,
    splits: [1, 2],
    kernel: 'bf16_d64_small',
  },
];

/** Bit-for-bit equality of two tensors' elements (NaN equal to NaN): the index of the first difference, or -1. */
function firstDifference(a: Tensor, b: Tensor): number {
  const x = a.toFloat64Array();
  const y = b.toFloat64Array();
  if (x.length !== y.length) return 0;
  for (let n = 0; n < x.length; n++)
    if (!Object.is(x[n], y[n]) && !(Number.isNaN(x[n]!) && Number.isNaN(y[n]!))) return n;
  return -1;
}

describeWhereRunnable(
  'flash-cuda kv-cache: the forward that appends against the append kernel',
  av.ok ? null : av.reason,
  () => {
    FUSED.forEach((c, index) => {
      it(c.name, () => {
        const o = { dtype: c.dtype, device: 'cuda' as const };
        const B = c.seqlens.length;
        const i32 = (xs: readonly number[], shape: number[]) =>
          tensor([...xs], shape, { dtype: 'int32', device: 'cuda' });
        const paged = 'blockSize' in c.cache;
        // Paged: each row's blocks for its capacity, in reverse through the pool (two spare blocks); contiguous:
        // [rows, length].
        const perRow = paged
          ? Math.ceil((Math.max(...c.seqlens) + c.newLen + 1) / (c.cache as { blockSize: number }).blockSize)
          : 1;
        const cacheShape = paged
          ? [B * perRow + 2, (c.cache as { blockSize: number }).blockSize, c.hk, c.d]
          : [(c.cache as { rows: number }).rows, (c.cache as { length: number }).length, c.hk, c.d];
        const capacity = paged ? perRow * cacheShape[1]! : cacheShape[1]!;
        const seed = 100 * (index + 1);
        const made: Tensor[] = [];
        const keep = <T extends Tensor>(t: T): T => {
          made.push(t);
          return t;
        };
        const q = keep(randn([B, c.sq, c.hq, c.d], { ...o, seed }));
        const kNew = keep(randn([B, c.newLen, c.hk, c.d], { ...o, seed: seed + 1 }));
        const vNew = keep(randn([B, c.newLen, c.hk, c.d], { ...o, seed: seed + 2 }));
        // Two copies of each cache, equal bits: the fused call writes one, the append kernel the other.
        const caches = [0, 1].map(() => [
          keep(randn(cacheShape, { ...o, seed: seed + 3 })),
          keep(randn(cacheShape, { ...o, seed: seed + 4 })),
        ]);
        const table = paged
          ? keep(
              i32(
                Array.from({ length: B * perRow }, (_, n) => B * perRow + 1 - n),
                [B, perRow],
              ),
            )
          : null;
        const rot = c.rotary;
        const cos = rot ? keep(randn([capacity + c.sq, rot.dim / 2], { ...o, seed: seed + 5 })) : null;
        const sin = rot ? keep(randn([capacity + c.sq, rot.dim / 2], { ...o, seed: seed + 6 })) : null;
        const opts: KvCacheOptions = {
          cacheSeqlens: keep(i32(c.seqlens, [B])),
          kNew,
          vNew,
          ...(rot ? { rotaryCos: cos!, rotarySin: sin!, rotaryInterleaved: rot.interleaved } : {}),
          ...(table ? { blockTable: table } : {}),
          ...(c.cacheBatchIdx ? { cacheBatchIdx: keep(i32(c.cacheBatchIdx, [B])) } : {}),
          ...(c.leftpadK ? { leftpadK: keep(i32(c.leftpadK, [B])) } : {}),
          isCausal: c.causal,
          softcap: c.softcap ?? 0,
          enableGqa: c.hq !== c.hk,
        };
        try {
          for (const numSplits of c.splits) {
            const [[kF, vF], [kS, vS]] = caches as [[Tensor, Tensor], [Tensor, Tensor]];
            const pF = normalizeKvCacheParams(q, kF, vF, opts);
            const pS = normalizeKvCacheParams(q, kS, vS, opts);
            const over = c.forceKernel ? { numSplits, kernel: c.forceKernel } : { numSplits };
            const plan = kvCachePlanFor(pF, over);
            expect(plan.fusedKvAppend, 'the plan fuses this call').toBe(true);
            expect(plan.numSplits).toBe(numSplits);
            if (c.kernel ?? c.forceKernel) expect(plan.kernel).toBe(c.kernel ?? c.forceKernel);
            // Each call appends once more at the same positions, into its own caches: equal inputs each time.
            const fused = flashKvCacheForward(pF, over);
            const separate = flashKvCacheForward(pS, { ...over, separateAppend: true });
            const at = `${c.name}, ${numSplits} splits`;
            expect(firstDifference(kF, kS), `${at}: kCache`).toBe(-1);
            expect(firstDifference(vF, vS), `${at}: vCache`).toBe(-1);
            expect(firstDifference(fused.out, separate.out), `${at}: out`).toBe(-1);
            expect(firstDifference(fused.logsumexp, separate.logsumexp), `${at}: logsumexp`).toBe(-1);
            for (const t of [fused.out, fused.logsumexp, separate.out, separate.logsumexp]) t.dispose();
          }
          // The appends landed: the cache differs from its state before the first call where row 0 appended.
          const before = randn(cacheShape, { ...o, seed: seed + 3 });
          expect(firstDifference(caches[0]![0]!, before), `${c.name}: kCache written`).toBeGreaterThanOrEqual(0);
          before.dispose();
        } finally {
          for (const t of made) t.dispose();
        }
      });
    });

    // The replay rule for the forward that appends: lengths, left pads, cache rows and table entries on the device
    // that validation would refuse (a replayed graph's) give unspecified numbers and cache contents, never a fault.
    it('out-of-range kv-cache values on the device: no fault on either path, the next call runs', () => {
      const o = { dtype: 'bfloat16' as const, device: 'cuda' as const };
      const i32 = (xs: number[], shape: number[]) => tensor(xs, shape, { dtype: 'int32', device: 'cuda' });
      const made: Tensor[] = [];
      const keep = <T extends Tensor>(t: T): T => {
        made.push(t);
        return t;
      };
      const q = keep(randn([3, 2, 8, 128], { ...o, seed: 1 }));
      const kNew = keep(randn([3, 4, 2, 128], { ...o, seed: 2 }));
      const vNew = keep(randn([3, 4, 2, 128], { ...o, seed: 3 }));
      const cos = keep(randn([600, 64], { ...o, seed: 4 }));
      const sin = keep(randn([600, 64], { ...o, seed: 5 }));
      const badLens = keep(i32([-5, 1 << 30, 2147483647], [3]));
      const badPad = keep(i32([1 << 30, -3, 2000000000], [3]));
      const common = { kNew, vNew, rotaryCos: cos, rotarySin: sin, isCausal: true, enableGqa: true };
      try {
        const pool = keep(randn([12, 64, 2, 128], { ...o, seed: 6 }));
        const paged = normalizeKvCacheParams(q, pool, pool, {
          ...common,
          cacheSeqlens: keep(i32([10, 100, 200], [3])),
          leftpadK: keep(i32([0, 5, 0], [3])),
          blockTable: keep(i32([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], [3, 4])),
        });
        const rows = keep(randn([4, 512, 2, 128], { ...o, seed: 7 }));
        const contiguous = normalizeKvCacheParams(q, rows, rows, {
          ...common,
          cacheSeqlens: keep(i32([10, 100, 200], [3])),
          leftpadK: keep(i32([0, 5, 0], [3])),
          cacheBatchIdx: keep(i32([3, 0, 1], [3])),
        });
        const badTable = keep(i32([-100, 1e9, 5, -1, 11, 12, 2147483647, 0, 3, -7, 1, 2], [3, 4]));
        const badRows = keep(i32([-1, 99, 1000000000], [3]));
        const badPaged = {
          ...paged,
          kvCache: { ...paged.kvCache!, cacheSeqlens: badLens, leftpadK: badPad },
          paged: { ...paged.paged!, blockTable: badTable },
        };
        const badContiguous = {
          ...contiguous,
          kvCache: { ...contiguous.kvCache!, cacheSeqlens: badLens, leftpadK: badPad, cacheBatchIdx: badRows },
        };
        for (const p of [badPaged, badContiguous])
          for (const numSplits of [1, 5])
            for (const separateAppend of [false, true]) {
              if (!separateAppend) expect(kvCachePlanFor(p, { numSplits }).fusedKvAppend).toBe(true);
              const r = flashKvCacheForward(p, { numSplits, separateAppend });
              r.out.toFloat64Array(); // synchronizes: a fault would surface here
              r.logsumexp.dispose();
              r.out.dispose();
            }
        for (const p of [paged, contiguous]) {
          const r = flashKvCacheForward(p);
          expect(r.out.toFloat64Array().every(Number.isFinite)).toBe(true);
          r.out.dispose();
          r.logsumexp.dispose();
        }
      } finally {
        for (const t of made) t.dispose();
      }
    });

    it('fuses decode and short speculative steps; more appended keys or packed query rows take the append kernel', () => {
      const o = { dtype: 'bfloat16' as const, device: 'cuda' as const };
      const pool = randn([16, 64, 2, 64], { ...o, seed: 7 });
      const table = tensor(
        Array.from({ length: 16 }, (_, n) => n),
        [2, 8],
        { dtype: 'int32', device: 'cuda' },
      );
      const plan = (sq: number, newLen: number) => {
        const p = normalizeKvCacheParams(randn([2, sq, 8, 64], o), pool, pool, {
          cacheSeqlens: tensor([100, 3], [2], { dtype: 'int32', device: 'cuda' }),
          ...(newLen > 0 ? { kNew: randn([2, newLen, 2, 64], o), vNew: randn([2, newLen, 2, 64], o) } : {}),
          blockTable: table,
          isCausal: true,
          enableGqa: true,
        });
        return kvCachePlanFor(p).fusedKvAppend;
      };
      expect(plan(1, 1)).toBe(true); // decode
      expect(plan(1, 0)).toBe(true); // attention over the cache alone
      expect(plan(4, 16)).toBe(true); // 16 packed rows, 16 appended keys
      expect(plan(4, 17)).toBe(false); // more appended keys than a CTA writes before its loads
      expect(plan(17, 1)).toBe(false); // 68 packed query rows: more than one 64-row tile
      expect(
        kvCachePlanFor(
          normalizeKvCacheParams(randn([2, 1, 8, 64], o), pool, pool, {
            cacheSeqlens: tensor([100, 3], [2], { dtype: 'int32', device: 'cuda' }),
            kNew: randn([2, 1, 2, 64], o),
            vNew: randn([2, 1, 2, 64], o),
            blockTable: table,
            enableGqa: true,
          }),
          { separateAppend: true },
        ).fusedKvAppend,
      ).toBe(false);
      pool.dispose();
      table.dispose();
    });
  },
);

const storage = (t: Tensor): CudaStorage => t.storage as CudaStorage;
const copyInto = (dst: Tensor, src: Tensor): void =>
  copyDeviceToDevice(storage(dst), 0, storage(src), 0, storage(src).bytes);

describeWhereRunnable('flash-cuda kv-cache decode step in a CUDA graph', av.ok ? null : av.reason, () => {
  it('replays append + rotary + attention for new lengths written on the device, matching cpu-math', () => {
    const B = 4,
      HQ = 8,
      HK = 2,
      D = 128,
      BS = 16,
      PAGES = 8; // 128 positions per row
    const o = { dtype: 'bfloat16' as const, device: 'cuda' as const };
    const i32 = (xs: number[], shape: number[], device: 'cpu' | 'cuda') =>
      tensor(xs, shape, { dtype: 'int32', device });
    const q = randn([B, 1, HQ, D], { ...o, seed: 1 });
    const kNew = randn([B, 1, HK, D], { ...o, seed: 2 });
    const vNew = randn([B, 1, HK, D], { ...o, seed: 3 });
    const kCache = randn([B * PAGES, BS, HK, D], { ...o, seed: 4 });
    const vCache = randn([B * PAGES, BS, HK, D], { ...o, seed: 5 });
    // Row b's pages, shuffled through the pool.
    const table = Array.from({ length: B * PAGES }, (_, n) => (n * 7) % (B * PAGES));
    const blockTable = i32(table, [B, PAGES], 'cuda');
    const half = D / 2;
    const angles = Array.from(
      { length: (B * PAGES * BS + 1) * half },
      (_, n) => Math.floor(n / half) * 10000 ** (-(n % half) / half),
    );
    const cos = tensor(angles.map(Math.cos), [B * PAGES * BS + 1, half], o);
    const sin = tensor(angles.map(Math.sin), [B * PAGES * BS + 1, half], o);
    const lens0 = [10, 0, 100, 127];
    const cacheSeqlens = i32(lens0, [B], 'cuda');
    const opts = (where: 'cpu' | 'cuda', seqlens: Tensor, table: Tensor, backend: string): KvCacheOptions => ({
      cacheSeqlens: seqlens,
      kNew: where === 'cuda' ? kNew : kNew.to('cpu'),
      vNew: where === 'cuda' ? vNew : vNew.to('cpu'),
      rotaryCos: where === 'cuda' ? cos : cos.to('cpu'),
      rotarySin: where === 'cuda' ? sin : sin.to('cpu'),
      blockTable: table,
      isCausal: true,
      enableGqa: true,
      backends: [backend],
    });
    synchronize();
    const graph = captureGraph(() =>
      sdpaKvCache(q, kCache, vCache, opts('cuda', cacheSeqlens, blockTable, 'flash-cuda')),
    );
    expect(graph.result.backend).toBe('flash-cuda');

    const steps: Array<[number[], number]> = [
      [lens0, 0],
      [[11, 1, 101, 0], 11],
      [[63, 64, 65, 126], 21],
    ];
    for (const [lens, seed] of steps) {
      if (seed > 0) {
        const fresh = [
          randn([B, 1, HQ, D], { ...o, seed }),
          randn([B, 1, HK, D], { ...o, seed: seed + 1 }),
          randn([B, 1, HK, D], { ...o, seed: seed + 2 }),
        ];
        [q, kNew, vNew].forEach((t, i) => copyInto(t, fresh[i]!));
        const newLens = i32(lens, [B], 'cuda');
        copyInto(cacheSeqlens, newLens);
        for (const t of [...fresh, newLens]) t.dispose();
      }
      // cpu-math on copies of the caches as they are before this replay.
      const kRef = kCache.to('cpu');
      const vRef = vCache.to('cpu');
      const want = sdpaKvCache(
        q.to('cpu'),
        kRef,
        vRef,
        opts('cpu', i32(lens, [B], 'cpu'), i32(table, [B, PAGES], 'cpu'), 'cpu-math'),
      );
      graph.replay();
      expect(relErr(graph.result.out, want.out)).toBeLessThan(3e-2);
      expect(relErr(kCache, kRef)).toBeLessThan(1e-2); // the appended keys, rotated (bf16 rounding of the rotation)
      expect(relErr(vCache, vRef)).toBe(0);
    }
    expect(graph.replayCount).toBe(3);
    graph.dispose();
    graph.result.out.dispose();
    graph.result.logsumexp.dispose();
    for (const t of [q, kNew, vNew, kCache, vCache, blockTable, cos, sin, cacheSeqlens]) t.dispose();
  });
});
