// sdpaKvCache cases: a backend's call (append kNew / vNew into the cache, rotary, attention over the
// cache) against the reference computed independently: the append and the rotary in float64 here,
// the cache gathered into packed keys, and cpu-math's varlen attention on them (lower-right, as
// decode); the naive low-precision implementation on the same gathered keys gives the accuracy
// bound. Every cache position the call must not touch holds NaN before it and must hold the same
// bits after it; every position it must not read holds NaN, so a wrong read shows in the output.
import { explainKvCache, NoBackendError, sdpaKvCache, sdpaVarlen, tensor } from '@attn/core';
import type { Device, FloatDType, KvCacheOptions, Tensor } from '@attn/core';
import { judge, slackOf } from './accuracy.js';
import type { Verdict } from './accuracy.js';
import type { CaseSpec } from './cases.js';
import { naiveAttention } from './naive.js';
import { pagedLayout } from './paged.js';
import type { PagedLayout } from './paged.js';
import { rounder } from './rounding.js';
import { REFERENCE } from './run-case.js';

export interface KvCacheCaseSpec {
  readonly name: string;
  readonly dtype: FloatDType;
  readonly batch: number;
  readonly headsQ: number;
  readonly headsKV: number;
  readonly seqQ: number;
  readonly headDim: number;
  readonly headDimV: number;
  /** Keys already in each row (cacheSeqlens; absent: every row full, no append). */
  readonly seqlens: readonly number[];
  /** Keys appended per row (kNew / vNew); 0 = none. */
  readonly newLen: number;
  /** Contiguous: the cache's rows and length; paged: the block size. */
  readonly cache:
    | { readonly kind: 'contiguous'; readonly rows: number; readonly length: number }
    | { readonly kind: 'paged'; readonly blockSize: number };
  /** Contiguous caches: cacheBatchIdx (else row b uses cache row b). */
  readonly cacheBatchIdx?: readonly number[];
  readonly leftpadK?: readonly number[];
  readonly rotary?: { readonly dim: number; readonly interleaved: boolean };
  readonly causal?: boolean;
  readonly window?: readonly [number, number];
  readonly alibi?: boolean;
  readonly softcap?: number;
  readonly scale?: number;
  /** Pass cacheSeqlens (default true); false: the rows are full (seqlens must equal the capacity). */
  readonly passSeqlens?: boolean;
}

type Shape = Omit<KvCacheCaseSpec, 'name' | 'dtype'>;

const decode: Shape = {
  batch: 3,
  headsQ: 4,
  headsKV: 2,
  seqQ: 1,
  headDim: 64,
  headDimV: 64,
  seqlens: [10, 0, 70],
  newLen: 1,
  cache: { kind: 'contiguous', rows: 3, length: 80 },
  causal: true,
};

const KV_CACHE_SHAPES: Record<string, Shape> = {
  'kvcache-decode-append-rotary-gqa': { ...decode, rotary: { dim: 32, interleaved: false } },
  'kvcache-decode-rotary-interleaved-cachebatchidx': {
    ...decode,
    headDim: 16,
    headDimV: 16,
    headsKV: 1,
    cache: { kind: 'contiguous', rows: 5, length: 40 },
    seqlens: [5, 39, 17],
    cacheBatchIdx: [4, 0, 2],
    rotary: { dim: 16, interleaved: true },
  },
  'kvcache-leftpad-window-alibi': {
    ...decode,
    headDim: 8,
    headDimV: 8,
    seqQ: 2,
    newLen: 2,
    seqlens: [20, 7, 5],
    leftpadK: [3, 0, 5],
    cache: { kind: 'contiguous', rows: 3, length: 30 },
    window: [8, 0],
    alibi: true,
  },
  'kvcache-paged-b16-append-rotary-softcap': {
    ...decode,
    headDim: 40,
    headDimV: 24,
    seqQ: 3,
    newLen: 3,
    seqlens: [33, 15, 0],
    cache: { kind: 'paged', blockSize: 16 },
    rotary: { dim: 40, interleaved: false },
    softcap: 4,
  },
  'kvcache-paged-b64-no-append-noncausal-rotary-q': {
    ...decode,
    headDim: 8,
    headDimV: 8,
    seqQ: 4,
    newLen: 0,
    seqlens: [65, 1, 130],
    cache: { kind: 'paged', blockSize: 64 },
    causal: false,
    rotary: { dim: 4, interleaved: true },
  },
  'kvcache-paged-b256-prefill-chunk-leftpad': {
    ...decode,
    batch: 2,
    headDim: 72,
    headDimV: 72,
    seqQ: 20,
    newLen: 20,
    seqlens: [100, 300],
    leftpadK: [7, 0],
    cache: { kind: 'paged', blockSize: 256 },
    rotary: { dim: 24, interleaved: false },
  },
  'kvcache-full-cache-dv-differs-mqa': {
    ...decode,
    headsKV: 1,
    headDim: 16,
    headDimV: 8,
    seqQ: 2,
    newLen: 0,
    seqlens: [12, 12, 12],
    cache: { kind: 'contiguous', rows: 3, length: 12 },
    causal: false,
    passSeqlens: false,
    scale: 0.4,
  },
};

/** Every kv-cache case in every dtype, named `<shape>/<dtype>`. */
export function buildKvCacheCases(): KvCacheCaseSpec[] {
  const dtypes: FloatDType[] = ['float64', 'float32', 'float16', 'bfloat16'];
  return Object.entries(KV_CACHE_SHAPES).flatMap(([name, s]) =>
    dtypes.map((dtype) => ({ ...s, name: `${name}/${dtype}`, dtype })),
  );
}

/** Deterministic N(0, 1)-ish values (Box-Muller on an LCG), so that a case is reproducible from its seed. */
function normals(n: number, seed: bigint): Float64Array {
  let s = seed & 0xffffffffffffffffn;
  const next = () => {
    s = (s * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
    return (Number(s >> 11n) + 0.5) / 2 ** 53;
  };
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.sqrt(-2 * Math.log(next())) * Math.cos(2 * Math.PI * next());
  return out;
}

/** x[0, dim) of a row rotated at position pos (FlashAttention's apply_rotary_emb), in float64. */
function rotate(
  x: Float64Array,
  dim: number,
  interleaved: boolean,
  cos: Float64Array,
  sin: Float64Array,
  pos: number,
): void {
  const half = dim / 2;
  for (let i = 0; i < half; i++) {
    const [a, b] = interleaved ? [2 * i, 2 * i + 1] : [i, i + half];
    const c = cos[pos * half + i]!;
    const s = sin[pos * half + i]!;
    const x1 = x[a]!;
    const x2 = x[b]!;
    x[a] = x1 * c - x2 * s;
    x[b] = x1 * s + x2 * c;
  }
}

interface Built {
  readonly test: { q: Tensor; kCache: Tensor; vCache: Tensor; opts: KvCacheOptions; disposables: Tensor[] };
  /** Cache contents before the call and what the call must leave there (logical float64, the tensors' shapes). */
  readonly kBefore: Float64Array;
  readonly vBefore: Float64Array;
  readonly kAfter: Float64Array;
  readonly vAfter: Float64Array;
  /** The reference's inputs: q rotated (float64 and rounded to the dtype), the attended keys packed. */
  readonly qRot: Float64Array;
  readonly qRotRounded: Float64Array;
  readonly kPacked: Float64Array;
  readonly vPacked: Float64Array;
  readonly keyCount: number[];
  readonly slopes: Float64Array | null;
}

/** Where key position pos of row b lives in the cache storage [N, S, H, C] (contiguous row or pool block). */
function cacheIndex(
  spec: KvCacheCaseSpec,
  rows: readonly number[],
  layout: PagedLayout | null,
  b: number,
  pos: number,
  h: number,
  cols: number,
): number {
  if (layout) {
    const block = layout.table[b * layout.maxBlocksPerSeq + Math.floor(pos / layout.blockSize)]!;
    return ((block * layout.blockSize + (pos % layout.blockSize)) * spec.headsKV + h) * cols;
  }
  const len = (spec.cache as { length: number }).length;
  return ((rows[b]! * len + pos) * spec.headsKV + h) * cols;
}

function build(spec: KvCacheCaseSpec, seed: bigint, device: Device): Built {
  const { batch: B, headsQ: Hq, headsKV: Hk, seqQ: Sq, headDim: D, headDimV: Dv, newLen: Sn, dtype } = spec;
  const r = rounder(dtype);
  const lengths = spec.seqlens.map((n) => n + Sn);
  const layout = spec.cache.kind === 'paged' ? pagedLayout(lengths, spec.cache.blockSize, seed) : null;
  const rows = spec.cacheBatchIdx ?? Array.from({ length: B }, (_, b) => b);
  const [N, S] = layout
    ? [layout.numBlocks, layout.blockSize]
    : [(spec.cache as { rows: number }).rows, (spec.cache as { length: number }).length];
  const capacity = layout ? layout.maxBlocksPerSeq * layout.blockSize : S;
  const leftpad = spec.leftpadK ?? Array<number>(B).fill(0);
  // Before: the keys already in each row (positions [leftpad, seqlens), rounded); NaN everywhere else.
  const kBefore = new Float64Array(N * S * Hk * D).fill(NaN);
  const vBefore = new Float64Array(N * S * Hk * Dv).fill(NaN);
  const kVals = normals(kBefore.length, seed + 1n).map(r);
  const vVals = normals(vBefore.length, seed + 2n).map(r);
  for (let b = 0; b < B; b++)
    for (let pos = leftpad[b]!; pos < spec.seqlens[b]!; pos++)
      for (let h = 0; h < Hk; h++) {
        const ik = cacheIndex(spec, rows, layout, b, pos, h, D);
        const iv = cacheIndex(spec, rows, layout, b, pos, h, Dv);
        kBefore.set(kVals.subarray(ik, ik + D), ik);
        vBefore.set(vVals.subarray(iv, iv + Dv), iv);
      }
  const q = normals(B * Sq * Hq * D, seed + 3n).map(r);
  const kNew = normals(B * Sn * Hk * D, seed + 4n).map(r);
  const vNew = normals(B * Sn * Hk * Dv, seed + 5n).map(r);
  const rot = spec.rotary ?? null;
  const half = rot ? rot.dim / 2 : 0;
  const R = capacity + Sq;
  const cos = new Float64Array(R * half);
  const sin = new Float64Array(R * half);
  for (let pos = 0; pos < R; pos++)
    for (let i = 0; i < half; i++) {
      const theta = pos * 10000 ** (-i / half);
      cos[pos * half + i] = r(Math.cos(theta));
      sin[pos * half + i] = r(Math.sin(theta));
    }

  // After: kNew rotated (float64) and rounded once, vNew as is, at positions seqlens[b] + i.
  const kAfter = kBefore.slice();
  const vAfter = vBefore.slice();
  const row = new Float64Array(Math.max(D, Dv));
  for (let b = 0; b < B; b++)
    for (let i = 0; i < Sn; i++)
      for (let h = 0; h < Hk; h++) {
        const pos = spec.seqlens[b]! + i;
        row.set(kNew.subarray(((b * Sn + i) * Hk + h) * D, ((b * Sn + i) * Hk + h + 1) * D));
        if (rot) rotate(row, rot.dim, rot.interleaved, cos, sin, pos);
        const ik = cacheIndex(spec, rows, layout, b, pos, h, D);
        for (let c = 0; c < D; c++) kAfter[ik + c] = r(row[c]!);
        const iv = cacheIndex(spec, rows, layout, b, pos, h, Dv);
        vAfter.set(vNew.subarray(((b * Sn + i) * Hk + h) * Dv, ((b * Sn + i) * Hk + h + 1) * Dv), iv);
      }
  // q rotated at seqlens[b] + i with causal or a window, else at seqlens[b] (as FlashAttention).
  const perRow = Boolean(spec.causal || spec.window);
  const qRot = q.slice();
  if (rot) {
    for (let b = 0; b < B; b++)
      for (let i = 0; i < Sq; i++)
        for (let h = 0; h < Hq; h++) {
          const at = ((b * Sq + i) * Hq + h) * D;
          const x = qRot.subarray(at, at + D);
          const tmp = Float64Array.from(x);
          rotate(tmp, rot.dim, rot.interleaved, cos, sin, spec.seqlens[b]! + (perRow ? i : 0));
          x.set(tmp);
        }
  }
  // The attended keys, gathered: positions [leftpad, seqlens + Sn) of each row, packed [total, Hk, C].
  const keyCount = lengths.map((n, b) => n - leftpad[b]!);
  const total = keyCount.reduce((a, n) => a + n, 0);
  const kPacked = new Float64Array(total * Hk * D);
  const vPacked = new Float64Array(total * Hk * Dv);
  let t = 0;
  for (let b = 0; b < B; b++)
    for (let pos = leftpad[b]!; pos < lengths[b]!; pos++, t++)
      for (let h = 0; h < Hk; h++) {
        const ik = cacheIndex(spec, rows, layout, b, pos, h, D);
        const iv = cacheIndex(spec, rows, layout, b, pos, h, Dv);
        kPacked.set(kAfter.subarray(ik, ik + D), (t * Hk + h) * D);
        vPacked.set(vAfter.subarray(iv, iv + Dv), (t * Hk + h) * Dv);
      }
  const slopes = spec.alibi
    ? Float64Array.from({ length: B * Hq }, (_, n) =>
        Math.fround(2 ** (-(1 + (n % Hq)) / 2) * (1 + 0.25 * Math.floor(n / Hq))),
      )
    : null;

  const on = (v: ArrayLike<number>, shape: number[], dt: FloatDType | 'int32' = dtype) =>
    tensor(v, shape, { dtype: dt, device });
  const disposables: Tensor[] = [];
  const keep = <T extends Tensor | null>(x: T): T => {
    if (x) disposables.push(x);
    return x;
  };
  const test = {
    q: keep(on(q, [B, Sq, Hq, D])),
    kCache: keep(on(kBefore, [N, S, Hk, D])),
    vCache: keep(on(vBefore, [N, S, Hk, Dv])),
    opts: {
      cacheSeqlens: spec.passSeqlens === false ? undefined : keep(on(spec.seqlens, [B], 'int32')),
      kNew: Sn > 0 ? keep(on(kNew, [B, Sn, Hk, D])) : undefined,
      vNew: Sn > 0 ? keep(on(vNew, [B, Sn, Hk, Dv])) : undefined,
      rotaryCos: rot ? keep(on(cos, [R, half])) : undefined,
      rotarySin: rot ? keep(on(sin, [R, half])) : undefined,
      rotaryInterleaved: rot?.interleaved,
      cacheBatchIdx: spec.cacheBatchIdx ? keep(on(spec.cacheBatchIdx, [B], 'int32')) : undefined,
      leftpadK: spec.leftpadK ? keep(on(spec.leftpadK, [B], 'int32')) : undefined,
      blockTable: layout ? keep(on(layout.table, [B, layout.maxBlocksPerSeq], 'int32')) : undefined,
      isCausal: spec.causal ?? false,
      window: spec.window ?? null,
      alibiSlopes: slopes ? keep(tensor(slopes, [B, Hq], { dtype: 'float32', device })) : undefined,
      softcap: spec.softcap ?? 0,
      scale: spec.scale,
      enableGqa: Hq !== Hk,
    } satisfies KvCacheOptions,
    disposables,
  };
  return { test, kBefore, vBefore, kAfter, vAfter, qRot, qRotRounded: qRot.map(r), kPacked, vPacked, keyCount, slopes };
}

export type KvCacheOutcome =
  | { readonly ran: true; readonly verdicts: readonly Verdict[] }
  | { readonly ran: false; readonly reasons: readonly string[] };

/** Elements of the cache that differ from what the call must leave (bit for bit where nothing is written). */
function cacheVerdict(
  what: string,
  dtype: FloatDType,
  got: Float64Array,
  want: Float64Array,
  before: Float64Array,
): Verdict {
  const ulp = { float64: 2 ** -52, float32: 2 ** -23, float16: 2 ** -10, bfloat16: 2 ** -7 }[dtype];
  for (let n = 0; n < want.length; n++) {
    const w = want[n]!;
    const g = got[n]!;
    const untouched = Object.is(w, before[n]!);
    // Untouched positions keep their bits (NaN stays NaN); written ones are the float64 rotation
    // rounded once, within an ulp of the dtype (a kernel may rotate in float32).
    const ok = untouched
      ? Object.is(g, w) || (Number.isNaN(g) && Number.isNaN(w))
      : Math.abs(g - w) <= ulp * Math.max(1, Math.abs(w));
    if (!ok)
      return {
        ok: false,
        message: `${what}: element ${n} is ${g}, want ${w}${untouched ? ' (a position the call must not write)' : ''}`,
      };
  }
  return { ok: true, message: `${what}: as appended` };
}

/** Runs one kv-cache case on `backend`, or returns its proper decline. */
export function runKvCacheCase(backend: string, spec: KvCacheCaseSpec, seed: bigint, device: Device): KvCacheOutcome {
  const built = build(spec, seed, device);
  const { q, kCache, vCache, opts, disposables } = built.test;
  try {
    const report = explainKvCache(q, kCache, vCache, { ...opts, backends: [backend] });
    const c = report.candidates.find((x) => x.backend === backend);
    if (!c) throw new Error(`'${backend}' is not a candidate on ${report.device}`);
    const reasons = c.available
      ? c.reasons.map((x) => `${x.rule}: ${x.message}`)
      : [`unavailable: ${c.unavailableReason ?? ''}`];
    if (reasons.length > 0) {
      try {
        sdpaKvCache(q, kCache, vCache, { ...opts, backends: [backend] });
      } catch (e) {
        if (e instanceof NoBackendError || (e as { code?: string }).code === 'ATTN_NO_BACKEND') {
          const untouched = cacheVerdict(
            'kCache after a declined call',
            spec.dtype,
            kCache.toFloat64Array(),
            built.kBefore,
            built.kBefore,
          );
          if (!untouched.ok) throw new Error(untouched.message);
          return { ran: false, reasons };
        }
        throw e;
      }
      throw new Error(`explain says '${backend}' declines (${reasons.join('; ')}), yet the call ran`);
    }
    const got = sdpaKvCache(q, kCache, vCache, { ...opts, backends: [backend] });
    if (got.backend !== backend) throw new Error(`asked for '${backend}', core ran '${got.backend}'`);
    const { batch: B, seqQ: Sq, headsQ: Hq, headsKV: Hk, headDim: D, headDimV: Dv } = spec;
    // The reference: cpu-math's varlen attention in float64 over the gathered keys.
    const int32 = (xs: number[]) => tensor(xs, [xs.length], { dtype: 'int32' });
    const cu = (ls: number[]) => ls.reduce<number[]>((a, n) => [...a, a[a.length - 1]! + n], [0]);
    const total = built.keyCount.reduce((a, n) => a + n, 0);
    const ref = sdpaVarlen(
      tensor(built.qRot, [B * Sq, Hq, D], { dtype: 'float64' }),
      tensor(built.kPacked, [total, Hk, D], { dtype: 'float64' }),
      tensor(built.vPacked, [total, Hk, Dv], { dtype: 'float64' }),
      {
        cuSeqlensQ: int32(cu(Array<number>(B).fill(Sq))),
        cuSeqlensK: int32(cu(built.keyCount)),
        maxSeqlenQ: Sq,
        maxSeqlenK: Math.max(0, ...built.keyCount),
        isCausal: spec.causal ?? false,
        alignment: 'lowerRight',
        window: spec.window ?? null,
        alibiSlopes: built.slopes ? tensor(built.slopes, [B, Hq], { dtype: 'float32' }) : null,
        softcap: spec.softcap ?? 0,
        scale: spec.scale,
        enableGqa: Hq !== Hk,
        backends: [REFERENCE],
      },
    );
    const asCase: CaseSpec = {
      name: spec.name,
      dtype: spec.dtype,
      batch: B,
      headsQ: Hq,
      headsKV: Hk,
      seqQ: Sq,
      seqK: Math.max(0, ...built.keyCount),
      headDim: D,
      headDimV: Dv,
      layout: 'bhsd',
      enableGqa: Hq !== Hk,
      scale: spec.scale,
      causal: spec.causal,
      alignment: 'lowerRight',
      window: spec.window,
      alibi: spec.alibi ? 'perBatchHead' : undefined,
      softcap: spec.softcap,
      varlen: { seqlensQ: Array<number>(B).fill(Sq), seqlensK: built.keyCount },
    };
    const naive = naiveAttention(
      asCase,
      {
        q: built.qRotRounded,
        k: built.kPacked,
        v: built.vPacked,
        gradOut: new Float64Array(0),
        mask: null,
        slopes: built.slopes,
        paged: null,
      },
      null,
      false,
    );
    // out [B, Sq, Hq, Dv] is packed [B * Sq, Hq, Dv]; logsumexp [B, Hq, Sq] against the reference's [Hq, B * Sq].
    const lse = got.logsumexp.toFloat64Array();
    const lsePacked = new Float64Array(lse.length);
    for (let b = 0; b < B; b++)
      for (let h = 0; h < Hq; h++)
        for (let i = 0; i < Sq; i++) lsePacked[h * B * Sq + b * Sq + i] = lse[(b * Hq + h) * Sq + i]!;
    const verdicts = [
      judge('out', spec.dtype, got.out.contiguous().toFloat64Array(), ref.out.toFloat64Array(), naive.out, {
        slack: slackOf(backend, spec.dtype),
      }),
      judge('logsumexp', spec.dtype, lsePacked, ref.logsumexp.toFloat64Array(), naive.lse, {
        slack: slackOf(backend, spec.dtype),
      }),
      cacheVerdict('kCache', spec.dtype, kCache.toFloat64Array(), built.kAfter, built.kBefore),
      cacheVerdict('vCache', spec.dtype, vCache.toFloat64Array(), built.vAfter, built.vBefore),
    ];
    got.out.dispose();
    got.logsumexp.dispose();
    return { ran: true, verdicts };
  } finally {
    for (const t of disposables) t.dispose();
  }
}
