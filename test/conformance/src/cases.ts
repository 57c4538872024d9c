// The case list: odd shapes and every feature of SdpaParams, each in every dtype, and float8_e4m3 inputs. Which of them a
// backend runs is not decided here: its own rules decide (see support.ts), so this list names every
// feature core accepts and never what a particular backend claims.
import { FLOAT_DTYPES } from '@attn/core';
import type { Alignment, FloatDType } from '@attn/core';

export interface MaskSpec {
  readonly kind: 'bool' | 'additive';
  /** Broadcastable to [B, Hq, Sq, Sk]. */
  readonly shape: readonly number[];
  /** Mask every key of a few rows (they must come out 0 with logsumexp -inf). */
  readonly fullyMaskedRows?: boolean;
  /** An additive mask's dtype on the side under test; default the case's (float32 on a half query). */
  readonly dtype?: 'float32';
}

/** A value planted in an input (the fuzz suite's NaN, +-Inf, huge and tiny values). */
export interface PoisonSpec {
  readonly tensor: 'q' | 'k' | 'v' | 'mask';
  /** Element in logical row-major order, taken modulo the tensor's size. */
  readonly index: number;
  readonly value: number;
}

export interface CaseSpec {
  readonly name: string;
  readonly dtype: FloatDType;
  readonly batch: number;
  readonly headsQ: number;
  readonly headsKV: number;
  readonly seqQ: number;
  readonly seqK: number;
  readonly headDim: number;
  readonly headDimV: number;
  /** 'bshd': q, k, v are transposed views of [B, S, H, D] storage (strided, last dim contiguous). */
  readonly layout: 'bhsd' | 'bshd';
  /**
   * q, k, v and gradOut of the side under test start off their alignment: 'base' one element into
   * their storage (rows contiguous), 'rows' one element into rows of headDim + 1 (every row off).
   * Kernels that load 16 bytes at a time must take their element-wise path or decline.
   */
  readonly misalign?: 'base' | 'rows';
  readonly enableGqa?: boolean;
  readonly scale?: number;
  readonly mask?: MaskSpec;
  readonly causal?: boolean;
  readonly alignment?: Alignment;
  /** [left, right], -1 = unbounded (as SdpaOptions). */
  readonly window?: readonly [number, number];
  readonly alibi?: 'perHead' | 'perBatchHead';
  readonly softcap?: number;
  readonly dropoutP?: number;
  /** Ask for a bitwise reproducible backward. */
  readonly deterministic?: boolean;
  /** Packed varlen: the length of each sequence (batch = their count; seqQ/seqK = the maxima). */
  readonly varlen?: { readonly seqlensQ: readonly number[]; readonly seqlensK: readonly number[] };
  /**
   * Varlen only: K/V as a shuffled pool of blocks of this many keys addressed through a block table
   * (VarlenOptions.blockTable); the rows no sequence reads hold NaN. Inference only.
   */
  readonly paged?: { readonly blockSize: number };
  /** Keys used per batch row or sequence (SdpaOptions.sequsedK). */
  readonly sequsedK?: readonly number[];
  /** Values planted in q, k, v or an additive mask before rounding to the dtype. */
  readonly poison?: readonly PoisonSpec[];
  /**
   * q, k and v in float8_e4m3, each with a per-tensor descale factor (its largest |value| / 448, as a user
   * quantizes), and a bfloat16 output: `dtype` is then 'bfloat16' (core's params.dtype for such calls).
   * Inference only: core refuses requiresGrad with these inputs.
   */
  readonly float8?: true;
}

export interface CaseOptions {
  /** Leave out cases with a sequence longer than this (default 1000). */
  readonly maxSeq?: number;
  /** Run the large shapes (S = 1000, D = 256) in one dtype only, and S = 1000 with fewer heads. */
  readonly quick?: boolean;
}

type Shape = Omit<CaseSpec, 'name' | 'dtype' | 'layout'> & { readonly layout?: CaseSpec['layout'] };

const base: Shape = { batch: 2, headsQ: 2, headsKV: 2, seqQ: 17, seqK: 23, headDim: 8, headDimV: 8 };
const square: Shape = { ...base, seqQ: 17, seqK: 17 };

/** Shapes without features: the odd sizes kernels get wrong (tails, one row, wide heads, strides). */
const SHAPES: Record<string, Shape> = {
  s1: { ...base, batch: 1, seqQ: 1, seqK: 1 },
  'sq1-sk17': { ...base, seqQ: 1, seqK: 17 },
  'sq17-sk1': { ...base, seqQ: 17, seqK: 1 },
  's17-d72-h3': { ...base, headsQ: 3, headsKV: 3, seqQ: 17, seqK: 17, headDim: 72, headDimV: 72 },
  'sq17-sk33': { ...base, seqQ: 17, seqK: 33 },
  'sq33-sk17-b3': { ...base, batch: 3, seqQ: 33, seqK: 17 },
  'd8-dv24': { ...base, headDimV: 24 },
  'd72-dv8': { ...base, headDim: 72, headDimV: 8 },
  'gqa-4-2': { ...base, headsQ: 4, headsKV: 2, enableGqa: true },
  'mqa-4-1': { ...base, headsQ: 4, headsKV: 1, enableGqa: true },
  'strided-bshd': { ...base, headsQ: 3, headsKV: 3, layout: 'bshd' },
  'strided-bshd-d72-gqa': {
    ...base,
    headsQ: 4,
    headsKV: 2,
    enableGqa: true,
    headDim: 72,
    headDimV: 72,
    layout: 'bshd',
  },
};

const d256: Shape = { ...base, batch: 1, seqQ: 17, seqK: 33, headDim: 256, headDimV: 256 };
const d512: Shape = { ...d256, headDim: 512, headDimV: 512 };
const s1000: Shape = { ...base, batch: 1, seqQ: 1000, seqK: 1000, headDim: 64, headDimV: 64 };
const s1000Causal: Shape = { ...s1000, headsQ: 2, headsKV: 2, causal: true, layout: 'bshd' };

/** Large shapes, each with its quick form: one dtype only, and S = 1000 non-causal with one head. */
const LARGE_SHAPES: Record<string, { readonly full: Shape; readonly quick: Shape }> = {
  d256: { full: d256, quick: d256 },
  d512: { full: d512, quick: d512 },
  's1000-d64': {
    full: { ...s1000, headsQ: 2, headsKV: 1, enableGqa: true },
    quick: { ...s1000, headsQ: 1, headsKV: 1 },
  },
  's1000-d64-causal-bshd': { full: s1000Causal, quick: s1000Causal },
};

const varlenQ = [5, 17, 1];
const varlenK = [7, 17, 3];
const packed: Shape = {
  ...base,
  batch: varlenQ.length,
  seqQ: Math.max(...varlenQ),
  seqK: Math.max(...varlenK),
  varlen: { seqlensQ: varlenQ, seqlensK: varlenK },
};

/**
 * Sizes core accepts that fused kernels decline (nonzeroSeqLens, nonzeroHeadDimV) and a device's
 * fallback must run: no queries, no keys (every row fully masked: out 0, logsumexp -inf), no batch,
 * an empty value head dim, and varlen sequences of length 0.
 */
const EMPTY_SHAPES: Record<string, Shape> = {
  sq0: { ...base, seqQ: 0 },
  sk0: { ...base, seqK: 0 },
  b0: { ...base, batch: 0 },
  dv0: { ...base, headDimV: 0 },
  'varlen-empty-sequences': { ...packed, seqQ: 5, seqK: 6, varlen: { seqlensQ: [0, 5, 3], seqlensK: [4, 0, 6] } },
};

/**
 * A paged case: packed sequences of these lengths (batch and seqQ / seqK follow) with K/V in a pool of
 * blocks of `blockSize` keys; by default GQA 4/2, causal lower-right as decode runs.
 */
function paged(seqlensQ: number[], seqlensK: number[], blockSize: number, rest: Partial<Shape> = {}): Shape {
  const lengths = {
    batch: seqlensQ.length,
    seqQ: Math.max(...seqlensQ),
    seqK: Math.max(...seqlensK),
    varlen: { seqlensQ, seqlensK },
  };
  return {
    ...base,
    headsQ: 4,
    headsKV: 2,
    enableGqa: true,
    causal: true,
    alignment: 'lowerRight',
    ...lengths,
    paged: { blockSize },
    ...rest,
  };
}

/** One feature (or a combination) each, on small shapes with Sq != Sk where it matters. */
const FEATURES: Record<string, Shape> = {
  scale: { ...base, scale: 0.3 },
  'bool-mask-2d': { ...base, mask: { kind: 'bool', shape: [17, 23] } },
  'bool-mask-key-padding': { ...base, mask: { kind: 'bool', shape: [2, 1, 1, 23] } },
  'bool-mask-full-fully-masked-rows': { ...base, mask: { kind: 'bool', shape: [2, 2, 17, 23], fullyMaskedRows: true } },
  'additive-mask-full': { ...base, mask: { kind: 'additive', shape: [2, 2, 17, 23] } },
  'additive-mask-heads-keys': { ...base, mask: { kind: 'additive', shape: [1, 2, 1, 23] } },
  'additive-mask-fully-masked-rows': { ...base, mask: { kind: 'additive', shape: [17, 23], fullyMaskedRows: true } },
  'causal-square': { ...square, causal: true },
  'causal-upper-left-sq<sk': { ...base, causal: true, alignment: 'upperLeft' },
  'causal-upper-left-sq>sk': { ...base, seqQ: 23, seqK: 17, causal: true, alignment: 'upperLeft' },
  'causal-lower-right-sq<sk': { ...base, causal: true, alignment: 'lowerRight' },
  'causal-lower-right-sq>sk': { ...base, seqQ: 23, seqK: 17, causal: true, alignment: 'lowerRight' },
  'window-4-2': { ...base, window: [4, 2] },
  'window-3-0-lower-right': { ...base, window: [3, 0], alignment: 'lowerRight' },
  'window-unbounded-left': { ...base, window: [-1, 2] },
  'window-unbounded-right': { ...base, window: [5, -1], alignment: 'lowerRight' },
  'window-causal': { ...base, window: [6, 6], causal: true },
  'alibi-heads': { ...base, alibi: 'perHead' },
  'alibi-batch-heads-causal-lower-right': { ...base, alibi: 'perBatchHead', causal: true, alignment: 'lowerRight' },
  softcap: { ...base, softcap: 2.5, scale: 0.9 },
  'softcap-causal-alibi': { ...square, softcap: 4, causal: true, alibi: 'perHead' },
  dropout: { ...base, dropoutP: 0.3 },
  'dropout-causal-gqa': { ...base, headsQ: 4, headsKV: 2, enableGqa: true, dropoutP: 0.3, causal: true },
  'dropout-additive-mask': { ...base, dropoutP: 0.3, mask: { kind: 'additive', shape: [2, 1, 17, 23] } },
  'deterministic-gqa': { ...base, headsQ: 4, headsKV: 2, enableGqa: true, deterministic: true },
  varlen: { ...packed },
  'varlen-causal-lower-right-gqa': {
    ...packed,
    headsQ: 4,
    headsKV: 2,
    enableGqa: true,
    causal: true,
    alignment: 'lowerRight',
  },
  'varlen-window-dropout': { ...packed, window: [4, 1], dropoutP: 0.3 },
  'varlen-alibi-softcap': { ...packed, alibi: 'perBatchHead', softcap: 3 },
  // sequsedK: a row with no used key, rows cut mid-sequence, anchored at the used length.
  sequsedK: { ...base, sequsedK: [19, 0] },
  'sequsedK-causal-lower-right': { ...base, sequsedK: [11, 23], causal: true, alignment: 'lowerRight' },
  'sequsedK-window-alibi-dropout': {
    ...base,
    sequsedK: [5, 17],
    window: [4, 1],
    alignment: 'lowerRight',
    alibi: 'perHead',
    dropoutP: 0.3,
  },
  'sequsedK-additive-mask-softcap': {
    ...base,
    sequsedK: [20, 1],
    mask: { kind: 'additive', shape: [2, 2, 17, 23] },
    softcap: 3,
  },
  'varlen-sequsedK-causal-lower-right-gqa': {
    ...packed,
    headsQ: 4,
    headsKV: 2,
    enableGqa: true,
    sequsedK: [3, 9, 0],
    causal: true,
    alignment: 'lowerRight',
  },
  // Features together, as kernels take them: a mask with causal and the window, dropout with every score
  // feature, a deterministic backward with them, and a head dim (13) no tensor-core path takes.
  'bool-mask-causal-window': { ...base, mask: { kind: 'bool', shape: [17, 23] }, causal: true, window: [5, 3] },
  'additive-mask-window-lower-right-sq>sk': {
    ...base,
    seqQ: 23,
    seqK: 17,
    mask: { kind: 'additive', shape: [2, 1, 23, 17] },
    window: [3, 2],
    alignment: 'lowerRight',
  },
  'dropout-mask-window-alibi-softcap-gqa': {
    ...base,
    headsQ: 4,
    headsKV: 2,
    enableGqa: true,
    dropoutP: 0.3,
    mask: { kind: 'bool', shape: [2, 4, 17, 23] },
    window: [6, 2],
    alibi: 'perBatchHead',
    softcap: 4,
  },
  'deterministic-window-softcap-gqa': {
    ...base,
    headsQ: 4,
    headsKV: 2,
    enableGqa: true,
    deterministic: true,
    window: [4, 2],
    softcap: 3,
  },
  'd13-window-alibi-softcap-dropout-causal': {
    ...base,
    headDim: 13,
    headDimV: 13,
    window: [5, 1],
    alibi: 'perHead',
    softcap: 3,
    dropoutP: 0.2,
    causal: true,
    alignment: 'lowerRight',
  },
  'd256-window-alibi-softcap': {
    ...base,
    batch: 1,
    seqQ: 17,
    seqK: 33,
    headDim: 256,
    headDimV: 256,
    window: [7, 3],
    alibi: 'perHead',
    softcap: 3,
  },
  // Windows over many key blocks (block skipping on both sides), with ALiBi, softcap and dropout.
  'window-blocks-s300-alibi-gqa': {
    ...base,
    batch: 1,
    headsQ: 2,
    headsKV: 1,
    enableGqa: true,
    seqQ: 300,
    seqK: 333,
    headDim: 64,
    headDimV: 64,
    window: [70, 20],
    alibi: 'perHead',
  },
  'window-causal-blocks-s300-softcap-dropout': {
    ...base,
    batch: 1,
    seqQ: 300,
    seqK: 300,
    headDim: 64,
    headDimV: 64,
    window: [100, -1],
    causal: true,
    softcap: 5,
    dropoutP: 0.1,
  },
  // Varlen sequences of length 0 under a window (the plain empty sizes are EMPTY_SHAPES).
  'varlen-empty-sequences-window': {
    ...base,
    batch: 4,
    seqQ: 6,
    seqK: 9,
    varlen: { seqlensQ: [0, 6, 3, 5], seqlensK: [4, 0, 7, 9] },
    window: [2, 1],
    alignment: 'lowerRight',
  },
  // Paged K/V: shuffled pools with NaN in every row no sequence reads, lengths that end mid-block,
  // decode (one query per sequence, causal lower-right as decode runs) and prefill chunks.
  'paged-b16-decode-gqa-causal': paged([1, 1, 1], [37, 16, 70], 16),
  'paged-b16-decode-mqa-d72-sequsedK-softcap': paged([1, 1, 1], [50, 1, 33], 16, {
    headsKV: 1,
    headDim: 72,
    headDimV: 72,
    sequsedK: [41, 0, 33],
    softcap: 3,
  }),
  'paged-b64-prefill-chunk-window-alibi': paged([17, 5, 33], [70, 5, 150], 64, {
    window: [40, 0],
    alibi: 'perBatchHead',
  }),
  'paged-b256-prefill-sequsedK-gqa': paged([9, 1, 4], [300, 17, 257], 256, {
    headDim: 64,
    headDimV: 64,
    sequsedK: [290, 17, 256],
  }),
  'paged-b64-upper-left-dropout-softcap': paged([20, 3], [130, 65], 64, {
    headsQ: 2,
    headsKV: 2,
    enableGqa: false,
    alignment: 'upperLeft',
    softcap: 4,
    dropoutP: 0.2,
  }),
  'combo-gqa-mask-softcap-causal-strided': {
    ...square,
    headsQ: 4,
    headsKV: 2,
    enableGqa: true,
    mask: { kind: 'additive', shape: [1, 4, 17, 17] },
    softcap: 3,
    causal: true,
    layout: 'bshd',
  },
};

/**
 * float8_e4m3 inputs with descale (CaseSpec.float8), output bfloat16: the odd sizes, the head dims an fp8
 * kernel takes (multiples of 16 up to 128) and one it may not (72), and the features core accepts with them.
 */
const FLOAT8: Record<string, Shape> = {
  plain: { ...base, headDim: 64, headDimV: 64 },
  s1: { ...base, batch: 1, seqQ: 1, seqK: 1, headDim: 16, headDimV: 16 },
  'sq1-sk17-d128': { ...base, seqQ: 1, seqK: 17, headDim: 128, headDimV: 128 },
  'sq17-sk1': { ...base, seqQ: 17, seqK: 1, headDim: 32, headDimV: 32 },
  'd72-gqa-4-2': { ...base, headsQ: 4, headsKV: 2, enableGqa: true, headDim: 72, headDimV: 72 },
  'gqa-4-1-causal-d128': {
    ...base,
    headsQ: 4,
    headsKV: 1,
    enableGqa: true,
    seqQ: 130,
    seqK: 200,
    causal: true,
    headDim: 128,
    headDimV: 128,
  },
  'causal-lower-right-sq200-sk60': {
    ...base,
    seqQ: 200,
    seqK: 60,
    causal: true,
    alignment: 'lowerRight',
    headDim: 64,
    headDimV: 64,
  },
  'window-right-d96': { ...base, seqQ: 150, seqK: 150, window: [-1, 5], headDim: 96, headDimV: 96 },
  'sequsedk-d64': { ...base, seqQ: 40, seqK: 90, sequsedK: [90, 0], headDim: 64, headDimV: 64 },
  'strided-bshd-d64': { ...base, headsQ: 3, headsKV: 3, layout: 'bshd', headDim: 64, headDimV: 64 },
  'bool-mask-d64': { ...base, mask: { kind: 'bool', shape: [2, 1, 17, 23] }, headDim: 64, headDimV: 64 },
  'dropout-d64': { ...base, seqQ: 40, seqK: 60, dropoutP: 0.2, headDim: 64, headDimV: 64 },
  'nan-in-q-d64': { ...base, headDim: 64, headDimV: 64, poison: [{ tensor: 'q', index: 70, value: NaN }] },
  's1000-causal-d128': {
    ...base,
    batch: 1,
    headsQ: 2,
    headsKV: 2,
    seqQ: 1000,
    seqK: 1000,
    causal: true,
    headDim: 128,
    headDimV: 128,
  },
};

function longestSeq(s: Shape): number {
  return Math.max(s.seqQ, s.seqK);
}

/** Every case, named `<shape or feature>/<dtype>`. */
export function buildCases(options: CaseOptions = {}): CaseSpec[] {
  const maxSeq = options.maxSeq ?? 1000;
  const cases: CaseSpec[] = [];
  const add = (name: string, shape: Shape, dtypes: readonly FloatDType[]) => {
    if (longestSeq(shape) > maxSeq) return;
    for (const dtype of dtypes) cases.push({ layout: 'bhsd', ...shape, name: `${name}/${dtype}`, dtype });
  };
  add('plain', base, FLOAT_DTYPES);
  for (const [name, shape] of Object.entries(SHAPES)) add(name, shape, FLOAT_DTYPES);
  for (const [name, shape] of Object.entries(EMPTY_SHAPES)) add(name, shape, FLOAT_DTYPES);
  for (const [name, shape] of Object.entries(FEATURES)) add(name, shape, FLOAT_DTYPES);
  // Quick mode keeps each large shape, in one dtype, rotating so that together they cover several.
  const rotation: FloatDType[] = ['float32', 'float16', 'bfloat16'];
  Object.entries(LARGE_SHAPES).forEach(([name, { full, quick }], i) =>
    options.quick ? add(name, quick, [rotation[i % rotation.length]!]) : add(name, full, FLOAT_DTYPES),
  );
  for (const [name, shape] of Object.entries(FLOAT8)) {
    if (longestSeq(shape) > maxSeq || (options.quick && longestSeq(shape) >= 1000)) continue;
    cases.push({ layout: 'bhsd', ...shape, name: `float8/${name}/float8_e4m3`, dtype: 'bfloat16', float8: true });
  }
  return cases;
}
