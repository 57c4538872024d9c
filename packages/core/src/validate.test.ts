import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { registerDeviceRuntime } from './device-registry.js';
import type { QkvDType } from './dtype.js';
import { VALIDATION_CODES } from './error-codes.js';
import { AttnError, AttnInputError } from './errors.js';
import { full, tensor, zeros } from './factory.js';
import { makeFakeDeviceRuntime } from './fake-device.js';
import type { SdpaOptions, SdpaParams, VarlenOptions } from './params.js';
import { dropoutThreshold } from './philox.js';
import { registerBackend } from './registry.js';
import { type ForwardResult, sdpaBackward, sdpaForward } from './sdpa.js';
import { sdpaBackwardFrom } from './backward-from.js';
import { Tensor } from './tensor.js';
import { isolateRegistry, makeFakeBackend } from './testing.js';
import { sequencePairs } from './rule.js';
import { describeCall } from './select.js';
import { normalizeKvCacheParams } from './kv-cache.js';
import { normalizeParams } from './validate.js';
import { normalizeVarlenParams } from './varlen.js';

interface Dims {
  B?: number;
  Hq?: number;
  Hk?: number;
  Sq?: number;
  Sk?: number;
  D?: number;
  Dv?: number;
  dtype?: QkvDType;
}

function qkv(d: Dims = {}): [Tensor, Tensor, Tensor] {
  const { B = 2, Hq = 4, Hk = Hq, Sq = 5, Sk = 7, D = 8, Dv = D, dtype = 'float32' } = d;
  return [zeros([B, Hq, Sq, D], { dtype }), zeros([B, Hk, Sk, D], { dtype }), zeros([B, Hk, Sk, Dv], { dtype })];
}

function norm(d: Dims, opts?: SdpaOptions) {
  const [q, k, v] = qkv(d);
  return normalizeParams(q, k, v, opts);
}

function packed(
  opts: Partial<VarlenOptions> = {},
  lens: { q: number[]; k: number[] } = { q: [3, 0, 4], k: [2, 5, 1] },
) {
  const offs = (l: number[]) => l.reduce<number[]>((acc, n) => [...acc, acc[acc.length - 1]! + n], [0]);
  const oq = offs(lens.q);
  const ok = offs(lens.k);
  const q = zeros([oq[oq.length - 1]!, 4, 8]);
  const k = zeros([ok[ok.length - 1]!, 2, 8]);
  const v = zeros([ok[ok.length - 1]!, 2, 6]);
  const base: VarlenOptions = {
    cuSeqlensQ: tensor(oq, [oq.length], { dtype: 'int32' }),
    cuSeqlensK: tensor(ok, [ok.length], { dtype: 'int32' }),
    maxSeqlenQ: Math.max(...lens.q),
    maxSeqlenK: Math.max(...lens.k),
    enableGqa: true,
  };
  return () => normalizeVarlenParams(q, k, v, { ...base, ...opts });
}

/** Paged K/V: sequences of 2, 5 and 1 keys (as packed() has) in a pool of blocks of 2 keys. */
// Sequence 0 reads one block, 1 three, 2 one: the entries after each row's last block are never read.
function paged(
  opts: Partial<VarlenOptions> = {},
  pool: { k?: number[]; v?: number[] } = {},
  table = [4, -7, 99, 0, 2, 1, 3, -1, 99],
) {
  const q = zeros([7, 4, 8]);
  const k = zeros(pool.k ?? [6, 2, 2, 8]);
  const v = zeros(pool.v ?? [6, 2, 2, 6]);
  const base: VarlenOptions = {
    cuSeqlensQ: tensor([0, 3, 3, 7], [4], { dtype: 'int32' }),
    cuSeqlensK: tensor([0, 2, 7, 8], [4], { dtype: 'int32' }),
    maxSeqlenQ: 4,
    maxSeqlenK: 5,
    enableGqa: true,
    blockTable: tensor(table, [3, table.length / 3], { dtype: 'int32' }),
  };
  return () => normalizeVarlenParams(q, k, v, { ...base, ...opts });
}

/** A varlen call on float8_e4m3 tensors: two sequences of 2 tokens. */
function fp8Packed(): Parameters<typeof normalizeVarlenParams> {
  const t = zeros([4, 2, 8], { dtype: 'float8_e4m3' });
  const offs = tensor([0, 2, 4], [3], { dtype: 'int32' });
  return [t, t, t, { cuSeqlensQ: offs, cuSeqlensK: offs, maxSeqlenQ: 2, maxSeqlenK: 2 }];
}

let restore: () => void;
beforeEach(() => {
  restore = isolateRegistry({ keepDeviceRuntimes: false });
  registerDeviceRuntime(makeFakeDeviceRuntime());
  registerBackend(makeFakeBackend('fwd-only'));
});
afterEach(() => restore());

/** [code, what, call that must fail with it]. Every code in VALIDATION_CODES appears at least once. */
const CASES: Array<[string, string, () => unknown]> = [
  [
    'ATTN_TYPE',
    'query not a tensor',
    () => normalizeParams({ shape: [1], dtype: 'float32' } as never, ...(qkv().slice(1) as [Tensor, Tensor])),
  ],
  ['ATTN_TYPE', 'options not an object', () => norm({}, 5 as never)],
  [
    'ATTN_TYPE',
    'Object.create(Tensor.prototype) as query (instanceof passes, no fields)',
    () => {
      const [, k, v] = qkv();
      return normalizeParams(Object.create(Tensor.prototype) as Tensor, k, v);
    },
  ],
  [
    'ATTN_TYPE',
    'Object.create(Tensor.prototype) as a mask',
    () => norm({}, { attnMask: Object.create(Tensor.prototype) as Tensor }),
  ],
  [
    'ATTN_STORAGE',
    'query over an ArrayBuffer detached after the tensor was made',
    () => {
      const [q, k, v] = qkv();
      const buffer = q.hostData().buffer as ArrayBuffer;
      structuredClone(buffer, { transfer: [buffer] });
      return normalizeParams(q, k, v);
    },
  ],
  ['ATTN_OUT', 'out of the wrong shape', () => norm({}, { out: zeros([2, 4, 5, 9]) })],
  ['ATTN_DESCALE', 'float8_e4m3 inputs without descale', () => norm({ dtype: 'float8_e4m3' })],
  ['ATTN_DESCALE', 'descale with float32 inputs', () => norm({}, { descale: { q: 1, k: 1, v: 1 } })],
  ['ATTN_DESCALE', 'a descale factor of 0', () => norm({ dtype: 'float8_e4m3' }, { descale: { q: 1, k: 0, v: 1 } })],
  [
    'ATTN_FLOAT8',
    'float8_e4m3 inputs with requiresGrad',
    () => norm({ dtype: 'float8_e4m3' }, { descale: { q: 1, k: 1, v: 1 }, requiresGrad: true }),
  ],
  ['ATTN_FLOAT8', 'float8_e4m3 inputs to sdpaVarlen', () => normalizeVarlenParams(...fp8Packed())],
  ['ATTN_OPTION', 'unknown option (a typo)', () => norm({}, { is_causal: true } as never)],
  ['ATTN_OPTION', 'isCausal not boolean', () => norm({}, { isCausal: 1 as never })],
  ['ATTN_OPTION', 'unknown alignment', () => norm({}, { alignment: 'center' as never })],
  [
    'ATTN_DISPOSED',
    'disposed key',
    () => {
      const [q, k, v] = qkv();
      k.dispose();
      return normalizeParams(q, k, v);
    },
  ],
  [
    'ATTN_DISPOSED',
    'disposed mask',
    () => {
      const m = zeros([5, 7]);
      m.dispose();
      return norm({}, { attnMask: m });
    },
  ],
  [
    'ATTN_DTYPE',
    'bool query',
    () => {
      const b = zeros([1, 1, 2, 2], { dtype: 'bool' });
      return normalizeParams(b, b, b);
    },
  ],
  [
    'ATTN_DTYPE_MISMATCH',
    'key float16',
    () => {
      const [q, , v] = qkv();
      return normalizeParams(q, zeros([2, 4, 7, 8], { dtype: 'float16' }), v);
    },
  ],
  [
    'ATTN_DEVICE_MISMATCH',
    'value on cuda',
    () => {
      const [q, k, v] = qkv();
      return normalizeParams(q, k, v.to('cuda'));
    },
  ],
  ['ATTN_DEVICE_MISMATCH', 'mask on cuda', () => norm({}, { attnMask: zeros([5, 7], { device: 'cuda' }) })],
  [
    'ATTN_RANK',
    '3-D dense inputs',
    () => {
      const t = zeros([4, 5, 8]);
      return normalizeParams(t, t, t);
    },
  ],
  [
    'ATTN_BATCH',
    'batch differs',
    () => {
      const [q] = qkv();
      const [, k, v] = qkv({ B: 3 });
      return normalizeParams(q, k, v);
    },
  ],
  [
    'ATTN_HEADS',
    'key and value heads differ',
    () => {
      const [q, k] = qkv({ Hq: 4, Hk: 2 });
      return normalizeParams(q, k, zeros([2, 1, 7, 8]), { enableGqa: true });
    },
  ],
  ['ATTN_HEADS', 'Hk does not divide Hq', () => norm({ Hq: 4, Hk: 3 }, { enableGqa: true })],
  ['ATTN_GQA', 'Hk != Hq without enableGqa', () => norm({ Hq: 4, Hk: 2 })],
  [
    'ATTN_HEAD_DIM',
    'query/key head dims differ',
    () => {
      const [q, , v] = qkv();
      return normalizeParams(q, zeros([2, 4, 7, 16]), v);
    },
  ],
  ['ATTN_HEAD_DIM', 'zero head dim', () => norm({ D: 0 })],
  [
    'ATTN_SEQ_LEN',
    'key/value lengths differ',
    () => {
      const [q, k] = qkv();
      return normalizeParams(q, k, zeros([2, 4, 6, 8]));
    },
  ],
  ['ATTN_MASK_DTYPE', 'int32 mask', () => norm({}, { attnMask: zeros([5, 7], { dtype: 'int32' }) })],
  [
    'ATTN_MASK_DTYPE',
    'float64 mask with float32 query',
    () => norm({}, { attnMask: zeros([5, 7], { dtype: 'float64' }) }),
  ],
  ['ATTN_MASK_SHAPE', 'mask not broadcastable', () => norm({}, { attnMask: zeros([5, 6]) })],
  [
    'ATTN_MASK_SHAPE',
    'mask heads = Hk instead of Hq',
    () => norm({ Hq: 4, Hk: 2 }, { enableGqa: true, attnMask: zeros([2, 2, 5, 7]) }),
  ],
  ['ATTN_MASK_SHAPE', 'mask rank 5', () => norm({}, { attnMask: zeros([1, 2, 4, 5, 7]) })],
  ['ATTN_DROPOUT', 'dropoutP = 1', () => norm({}, { dropoutP: 1 })],
  ['ATTN_DROPOUT', 'dropoutP NaN', () => norm({}, { dropoutP: NaN })],
  ['ATTN_DROPOUT', 'negative dropout seed', () => norm({}, { dropoutP: 0.1, dropoutSeed: -1 })],
  ['ATTN_DROPOUT', 'dropout offset beyond uint32', () => norm({}, { dropoutOffset: 2 ** 32 })],
  ['ATTN_SCALE', 'zero scale', () => norm({}, { scale: 0 })],
  ['ATTN_SCALE', 'NaN scale', () => norm({}, { scale: NaN })],
  ['ATTN_SCALE', 'infinite scale', () => norm({}, { scale: Infinity })],
  ['ATTN_WINDOW', 'negative window other than -1', () => norm({}, { window: [-2, 0] })],
  ['ATTN_WINDOW', 'window not a pair', () => norm({}, { window: [3] as never })],
  ['ATTN_WINDOW', 'fractional window', () => norm({}, { window: [1.5, 0] })],
  ['ATTN_SOFTCAP', 'negative softcap', () => norm({}, { softcap: -1 })],
  ['ATTN_SOFTCAP', 'infinite softcap', () => norm({}, { softcap: Infinity })],
  ['ATTN_ALIBI', 'float16 slopes', () => norm({}, { alibiSlopes: zeros([4], { dtype: 'float16' }) })],
  [
    'ATTN_ALIBI',
    'slopes for Hk instead of Hq',
    () => norm({ Hq: 4, Hk: 2 }, { enableGqa: true, alibiSlopes: zeros([2]) }),
  ],
  ['ATTN_ALIBI', 'slopes [Hq, B]', () => norm({ B: 2, Hq: 4 }, { alibiSlopes: zeros([4, 2]) })],
  ['ATTN_DEVICE_MISMATCH', 'slopes on cuda', () => norm({}, { alibiSlopes: zeros([4], { device: 'cuda' }) })],
  [
    'ATTN_SIZE',
    'B * Hq beyond the dropout counter',
    () => {
      const q = zeros([1, 1, 1, 8]).expand([70000, 70000, 1, 8]);
      return normalizeParams(q, q, q);
    },
  ],
  [
    'ATTN_SIZE',
    'more than 2^53 scores',
    () => {
      const q = zeros([1, 1, 1, 1]).expand([2 ** 14, 2 ** 14, 2 ** 14, 1]);
      return normalizeParams(q, q, q);
    },
  ],
  ['ATTN_UNKNOWN_BACKEND', 'backends names an unregistered backend', () => norm({}, { backends: ['nope'] })],
  ['ATTN_UNKNOWN_KERNEL', 'kernel names no registered backend kernel', () => norm({}, { kernel: 'sm90' })],
  ['ATTN_VARLEN', 'offsets not int32', packed({ cuSeqlensQ: tensor([0, 3, 3, 7], [4]) })],
  ['ATTN_VARLEN', 'offsets not starting at 0', packed({ cuSeqlensQ: tensor([1, 3, 3, 7], [4], { dtype: 'int32' }) })],
  ['ATTN_VARLEN', 'offsets decreasing', packed({ cuSeqlensQ: tensor([0, 4, 3, 7], [4], { dtype: 'int32' }) })],
  [
    'ATTN_VARLEN',
    'offsets not ending at the total',
    packed({ cuSeqlensK: tensor([0, 2, 7, 7], [4], { dtype: 'int32' }) }),
  ],
  ['ATTN_VARLEN', 'offsets of different lengths', packed({ cuSeqlensK: tensor([0, 8], [2], { dtype: 'int32' }) })],
  ['ATTN_VARLEN', 'maxSeqlenQ below the longest sequence', packed({ maxSeqlenQ: 3 })],
  ['ATTN_VARLEN', 'maxSeqlenK missing', packed({ maxSeqlenK: undefined })],
  [
    'ATTN_VARLEN',
    'strided offsets',
    packed({
      cuSeqlensQ: tensor([0, 9, 3, 9, 3, 9, 7, 9], [8], { dtype: 'int32' })
        .reshape([4, 2])
        .narrow(1, 0, 1)
        .reshape([4]),
    }),
  ],
  ['ATTN_SEQUSED_K', 'sequsedK float32', () => norm({ B: 2 }, { sequsedK: tensor([3, 4], [2]) })],
  [
    'ATTN_SEQUSED_K',
    'sequsedK of shape [B + 1]',
    () => norm({ B: 2 }, { sequsedK: tensor([3, 4, 5], [3], { dtype: 'int32' }) }),
  ],
  [
    'ATTN_SEQUSED_K',
    'sequsedK above Sk',
    () => norm({ B: 2, Sk: 7 }, { sequsedK: tensor([3, 8], [2], { dtype: 'int32' }) }),
  ],
  ['ATTN_SEQUSED_K', 'negative sequsedK', () => norm({ B: 2 }, { sequsedK: tensor([-1, 2], [2], { dtype: 'int32' }) })],
  [
    'ATTN_SEQUSED_K',
    'strided sequsedK',
    () => norm({ B: 2 }, { sequsedK: tensor([1, 9, 2, 9], [2, 2], { dtype: 'int32' }).narrow(1, 0, 1).reshape([2]) }),
  ],
  [
    'ATTN_SEQUSED_K',
    'varlen sequsedK above its sequence',
    packed({ sequsedK: tensor([2, 6, 1], [3], { dtype: 'int32' }) }),
  ],
  [
    'ATTN_DEVICE_MISMATCH',
    'sequsedK on cuda',
    () => norm({ B: 2 }, { sequsedK: zeros([2], { dtype: 'int32', device: 'cuda' }) }),
  ],
  ['ATTN_TYPE', 'sequsedK an array', () => norm({ B: 2 }, { sequsedK: [1, 2] as never })],
  ['ATTN_BLOCK_TABLE', 'blockTable float32', paged({ blockTable: tensor([0, 1, 2], [3, 1]) })],
  ['ATTN_BLOCK_TABLE', 'blockTable of rank 1', paged({ blockTable: tensor([0, 1, 2], [3], { dtype: 'int32' }) })],
  [
    'ATTN_BLOCK_TABLE',
    'blockTable with a row per token',
    paged({ blockTable: tensor([0, 1, 2, 3], [4, 1], { dtype: 'int32' }) }),
  ],
  ['ATTN_BLOCK_TABLE', 'blockTable too narrow for 5 keys in blocks of 2', paged({}, {}, [4, 0, 3, 2, 1, 5])],
  ['ATTN_BLOCK_TABLE', 'a read entry past the pool', paged({}, {}, [4, 0, 0, 0, 2, 6, 3, 0, 0])],
  ['ATTN_BLOCK_TABLE', 'a read entry below 0', paged({}, {}, [-1, 0, 0, 0, 2, 1, 3, 0, 0])],
  [
    'ATTN_BLOCK_TABLE',
    'strided blockTable',
    paged({ blockTable: tensor([4, 0, 3, 0, 2, 0, 1, 0, 0, 0, 0, 0], [3, 4], { dtype: 'int32' }).narrow(1, 0, 3) }),
  ],
  ['ATTN_BLOCK_TABLE', 'key and value pools of different block sizes', paged({}, { v: [12, 1, 2, 6] })],
  ['ATTN_BLOCK_TABLE', 'blockTable with requiresGrad', paged({ requiresGrad: true })],
  ['ATTN_RANK', 'packed key with blockTable', paged({}, { k: [12, 2, 8], v: [12, 2, 6] })],
  [
    'ATTN_DEVICE_MISMATCH',
    'blockTable on cuda',
    () => paged({ blockTable: zeros([3, 3], { dtype: 'int32', device: 'cuda' }) })(),
  ],
  [
    'ATTN_KV_CACHE',
    'sdpaKvCache appending past the cache (kv-cache.test.ts has the rest)',
    () =>
      normalizeKvCacheParams(zeros([1, 1, 2, 8]), zeros([1, 4, 2, 8]), zeros([1, 4, 2, 8]), {
        cacheSeqlens: tensor([4], [1], { dtype: 'int32' }),
        kNew: zeros([1, 1, 2, 8]),
        vNew: zeros([1, 1, 2, 8]),
      }),
  ],
  [
    'ATTN_OPTION',
    'blockTable on a dense call',
    () => norm({}, { blockTable: tensor([0], [1, 1], { dtype: 'int32' }) } as never),
  ],
  [
    'ATTN_RANK',
    'varlen with 4-D inputs',
    () => {
      const t = zeros([1, 7, 4, 8]);
      return normalizeVarlenParams(t, t, t, {
        cuSeqlensQ: tensor([0, 7], [2], { dtype: 'int32' }),
        cuSeqlensK: tensor([0, 7], [2], { dtype: 'int32' }),
        maxSeqlenQ: 7,
        maxSeqlenK: 7,
      });
    },
  ],
  ['ATTN_OPTION', 'varlen with attnMask', packed({ attnMask: zeros([1]) } as never)],
  [
    'ATTN_GRAD_OUT',
    'gradOut of the wrong shape',
    () => {
      const [q, k, v] = qkv();
      const fwd = sdpaForward(q, k, v);
      return sdpaBackward(zeros([2, 4, 5, 9]), fwd);
    },
  ],
  [
    'ATTN_FORWARD_RESULT',
    'a copy of a forward result with params.seqK replaced',
    () => {
      const [q, k, v] = qkv();
      const fwd = sdpaForward(q, k, v) as ForwardResult & { params?: SdpaParams };
      return sdpaBackward(zeros([2, 4, 5, 8]), { ...fwd, params: { ...normalizeParams(q, k, v), seqK: 3 } } as never);
    },
  ],
  [
    'ATTN_FORWARD_RESULT',
    'a hand-built forward result with fields missing',
    () => {
      const [q, k, v] = qkv();
      const fwd = sdpaForward(q, k, v);
      return sdpaBackward(zeros([2, 4, 5, 8]), { out: fwd.out, backend: fwd.backend } as never);
    },
  ],
  ['ATTN_FORWARD_RESULT', 'null as the forward result', () => sdpaBackward(zeros([2, 4, 5, 8]), null as never)],
  [
    'ATTN_SAVED',
    'sdpaBackwardFrom with out of the wrong head dim',
    () => {
      const [q, k, v] = qkv();
      const saved = { out: zeros([2, 4, 5, 9]), logsumexp: zeros([2, 4, 5]) };
      return sdpaBackwardFrom(q, k, v, saved, zeros([2, 4, 5, 8]));
    },
  ],
  [
    'ATTN_SAVED',
    'sdpaBackwardFrom with a float64 logsumexp',
    () => {
      const [q, k, v] = qkv();
      const saved = { out: zeros([2, 4, 5, 8]), logsumexp: zeros([2, 4, 5], { dtype: 'float64' }) };
      return sdpaBackwardFrom(q, k, v, saved, zeros([2, 4, 5, 8]));
    },
  ],
  [
    'ATTN_GRAD_OUT',
    'sdpaBackwardFrom with gradOut of another dtype',
    () => {
      const [q, k, v] = qkv();
      const saved = { out: zeros([2, 4, 5, 8]), logsumexp: zeros([2, 4, 5]) };
      return sdpaBackwardFrom(q, k, v, saved, zeros([2, 4, 5, 8], { dtype: 'float64' }));
    },
  ],
  [
    'ATTN_TYPE',
    'Object.create(Tensor.prototype) as gradOut',
    () => {
      const [q, k, v] = qkv();
      return sdpaBackward(Object.create(Tensor.prototype) as Tensor, sdpaForward(q, k, v));
    },
  ],
  [
    'ATTN_NO_BACKWARD',
    'backend without backward',
    () => {
      const [q, k, v] = qkv();
      const fwd = sdpaForward(q, k, v);
      return sdpaBackward(zeros([2, 4, 5, 8]), fwd);
    },
  ],
];

describe('validation codes', () => {
  it.each(CASES)('%s: %s', (code, _what, call) => {
    let error: unknown;
    try {
      call();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(AttnError);
    expect((error as AttnError).code).toBe(code);
    if (code !== 'ATTN_DISPOSED') expect(error).toBeInstanceOf(AttnInputError);
    expect((error as Error).message.length).toBeGreaterThan(20);
  });

  it('covers every documented code', () => {
    expect(new Set(CASES.map((c) => c[0]))).toEqual(new Set(VALIDATION_CODES));
  });
});

describe('normalized params', () => {
  it('fills defaults', () => {
    const p = norm({ D: 16, Dv: 4 });
    expect(p).toMatchObject({ batch: 2, headsQ: 4, headsKV: 4, seqQ: 5, seqK: 7, headDim: 16, headDimV: 4 });
    expect(p.scale).toBe(0.25);
    expect(p).toMatchObject({
      causal: false,
      alignment: 'upperLeft',
      window: null,
      mask: null,
      softcap: 0,
      dropout: null,
      varlen: null,
      sequsedK: null,
    });
    expect(Object.isFrozen(p)).toBe(true);
  });

  it('keeps an explicit (even negative) scale', () => {
    expect(norm({}, { scale: -0.5 }).scale).toBe(-0.5);
  });

  it('normalizes windows: -1 is unbounded, [-1, -1] is none', () => {
    expect(norm({}, { window: [-1, -1] }).window).toBeNull();
    expect(norm({}, { window: [3, -1] }).window).toEqual({ left: 3, right: null });
    expect(norm({}, { window: [0, 0] }).window).toEqual({ left: 0, right: 0 });
  });

  it('builds dropout params from the seed, offset and p', () => {
    const p = norm({}, { dropoutP: 0.25, dropoutSeed: 99n, dropoutOffset: 3 });
    expect(p.dropout).toEqual({
      p: 0.25,
      seed: 99n,
      offset: 3,
      threshold: dropoutThreshold(0.25),
      keepScale: 1 / 0.75,
    });
    const a = norm({}, { dropoutP: 0.1 }).dropout!.seed;
    const b = norm({}, { dropoutP: 0.1 }).dropout!.seed;
    expect(a).not.toBe(b); // a fresh random seed per call
    expect(norm({}, { dropoutSeed: 5 }).dropout).toBeNull();
  });

  it('expands mask strides to [B, Hq, Sq, Sk] with zeros on broadcast dims', () => {
    const p = norm({}, { attnMask: zeros([5, 7], { dtype: 'bool' }) });
    expect(p.mask).toMatchObject({ kind: 'bool', expandedStrides: [0, 0, 7, 1] });
    const m = norm({ dtype: 'float16' }, { attnMask: zeros([2, 1, 5, 1]) }).mask!;
    expect(m.kind).toBe('additive');
    expect(m.expandedStrides).toEqual([5, 0, 1, 0]);
    expect(norm({}, { attnMask: zeros([]) }).mask!.expandedStrides).toEqual([0, 0, 0, 0]);
  });

  it('allows what PyTorch allows and what this design decided to allow', () => {
    expect(norm({}, { isCausal: true, attnMask: zeros([5, 7]) }).causal).toBe(true); // combined
    expect(norm({ Sk: 0 }).seqK).toBe(0);
    expect(norm({ Sq: 0, B: 0 }).batch).toBe(0);
    expect(norm({ Dv: 0 }).headDimV).toBe(0);
    expect(norm({ Hq: 4, Hk: 1 }, { enableGqa: true }).headsKV).toBe(1);
    expect(norm({}, { alibiSlopes: full([2, 4], 0.5) }).alibiSlopes).not.toBeNull();
    expect(norm({ dtype: 'bfloat16' }, { attnMask: zeros([5, 7], { dtype: 'bfloat16' }) }).mask!.kind).toBe('additive');
    // A non-contiguous last dim is a backend rule, not an input error.
    const [q, k, v] = qkv({ D: 8 });
    const qt = zeros([2, 4, 8, 5]).transpose(2, 3);
    expect(normalizeParams(qt, k, v).query).toBe(qt);
    expect(normalizeParams(q, k, v, { backends: ['fwd-only', 'fwd-only'] })).toBeDefined();
  });

  it('normalizes varlen calls', () => {
    const p = packed()();
    expect(p).toMatchObject({ batch: 3, headsQ: 4, headsKV: 2, seqQ: 4, seqK: 5, headDim: 8, headDimV: 6 });
    expect([...p.varlen!.seqlensQ!]).toEqual([0, 3, 3, 7]);
    expect([...p.varlen!.seqlensK!]).toEqual([0, 2, 7, 8]);
    expect(packed({ maxSeqlenQ: 100 })().seqQ).toBe(100);
  });

  it("keeps sequsedK with a host copy; rules see each row's used key count as its Sk", () => {
    const p = norm({ B: 2, Sk: 7 }, { sequsedK: tensor([0, 7], [2], { dtype: 'int32' }) });
    expect([...p.sequsedK!.lengths!]).toEqual([0, 7]);
    expect(sequencePairs(p)).toEqual([
      [5, 0],
      [5, 7],
    ]);
    const v = packed({ sequsedK: tensor([2, 0, 1], [3], { dtype: 'int32' }) })();
    expect([...v.sequsedK!.lengths!]).toEqual([2, 0, 1]);
    expect(sequencePairs(v)).toEqual([
      [3, 2],
      [0, 0],
      [4, 1],
    ]);
    expect(norm({}).sequsedK).toBeNull();
  });

  it('takes paged K/V: pool geometry, a host copy of the table, heads from dim 2, lengths from cuSeqlensK', () => {
    const p = paged({ sequsedK: tensor([1, 4, 0], [3], { dtype: 'int32' }) })();
    expect(p).toMatchObject({ batch: 3, headsQ: 4, headsKV: 2, seqQ: 4, seqK: 5, headDim: 8, headDimV: 6 });
    expect(p.paged).toMatchObject({ blockSize: 2, numBlocks: 6, maxBlocksPerSeq: 3 });
    expect([...p.paged!.table!]).toEqual([4, -7, 99, 0, 2, 1, 3, -1, 99]);
    expect(sequencePairs(p)).toEqual([
      [3, 1],
      [0, 4],
      [4, 0],
    ]);
    expect(describeCall(p)).toContain('paged K/V (6 blocks of 2)');
    expect(packed()().paged).toBeNull();
    expect(norm({}).paged).toBeNull();
  });
});
