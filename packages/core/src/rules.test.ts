// Each rule fails when it should and passes otherwise; together with the completeness check at the
// end, breaking any one rule makes a test here fail.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Rule, RuleContext } from './backend.js';
import type { DeviceProperties } from './device.js';
import { registerDeviceRuntime } from './device-registry.js';
import type { FloatDType } from './dtype.js';
import { full, tensor, zeros } from './factory.js';
import { makeFakeDeviceRuntime } from './fake-device.js';
import type { SdpaOptions, SdpaParams, VarlenOptions } from './params.js';
import * as rules from './rules.js';
import type { Tensor } from './tensor.js';
import { isolateRegistry } from './testing.js';
import { normalizeParams } from './validate.js';
import { normalizeKvCacheParams } from './kv-cache.js';
import { normalizeVarlenParams } from './varlen.js';

interface Dims {
  B?: number;
  Hq?: number;
  Hk?: number;
  Sq?: number;
  Sk?: number;
  D?: number;
  Dv?: number;
  dtype?: FloatDType;
  device?: 'cpu' | 'cuda';
}

function P(d: Dims = {}, opts: SdpaOptions = {}): SdpaParams {
  const { B = 2, Hq = 4, Hk = Hq, Sq = 6, Sk = 6, D = 64, Dv = D, dtype = 'float16', device = 'cpu' } = d;
  const q = zeros([B, Hq, Sq, D], { dtype, device });
  const k = zeros([B, Hk, Sk, D], { dtype, device });
  const v = zeros([B, Hk, Sk, Dv], { dtype, device });
  return normalizeParams(q, k, v, { enableGqa: Hk !== Hq, ...opts });
}

function varlen(lensQ: number[], lensK: number[], opts: Partial<VarlenOptions> = {}): SdpaParams {
  const offs = (l: number[]) => l.reduce<number[]>((a, n) => [...a, a[a.length - 1]! + n], [0]);
  const oq = offs(lensQ);
  const ok = offs(lensK);
  const q = zeros([oq[oq.length - 1]!, 4, 64], { dtype: 'float16' });
  const k = zeros([ok[ok.length - 1]!, 4, 64], { dtype: 'float16' });
  return normalizeVarlenParams(q, k, k, {
    cuSeqlensQ: tensor(oq, [oq.length], { dtype: 'int32' }),
    cuSeqlensK: tensor(ok, [ok.length], { dtype: 'int32' }),
    maxSeqlenQ: Math.max(...lensQ),
    maxSeqlenK: Math.max(...lensK),
    ...opts,
  });
}

/** Two sequences of 5 and 3 keys in a pool of 4 blocks of 4 keys, the blocks shuffled. */
function pagedVarlen(): SdpaParams {
  const q = zeros([2, 4, 64], { dtype: 'float16' });
  const k = zeros([4, 4, 4, 64], { dtype: 'float16' });
  return normalizeVarlenParams(q, k, k, {
    cuSeqlensQ: tensor([0, 1, 2], [3], { dtype: 'int32' }),
    cuSeqlensK: tensor([0, 5, 8], [3], { dtype: 'int32' }),
    maxSeqlenQ: 1,
    maxSeqlenK: 5,
    blockTable: tensor([3, 1, 0, -1], [2, 2], { dtype: 'int32' }),
  });
}

/** A kv-cache call: 2 rows appending 1 key each to a cache of 8 positions. */
function kvCacheCall(): SdpaParams {
  return normalizeKvCacheParams(
    zeros([2, 1, 4, 64], { dtype: 'float16' }),
    zeros([2, 8, 4, 64], { dtype: 'float16' }),
    zeros([2, 8, 4, 64], { dtype: 'float16' }),
    {
      cacheSeqlens: tensor([3, 7], [2], { dtype: 'int32' }),
      kNew: zeros([2, 1, 4, 64], { dtype: 'float16' }),
      vNew: zeros([2, 1, 4, 64], { dtype: 'float16' }),
    },
  );
}

/** A params object with some tensors swapped: for states validation never lets through. */
function patched(p: SdpaParams, patch: Partial<Record<'query' | 'key' | 'value', Tensor>>): SdpaParams {
  return { ...p, ...patch };
}

function sm(major: number, minor: number): RuleContext {
  const props: DeviceProperties = {
    type: 'cuda',
    index: 0,
    name: 'test gpu',
    arch: `sm_${major}${minor}`,
    major,
    minor,
    multiProcessorCount: 1,
    totalMemoryBytes: 1,
    sharedMemoryPerBlockOptin: 1,
    l2CacheBytes: 1,
  };
  return { device: props };
}

function rocm(arch: string): RuleContext {
  return { device: { ...sm(0, 0).device!, type: 'rocm', arch } };
}

const CPU_CTX: RuleContext = { device: null };
const H100 = sm(9, 0);

let restore: () => void;
beforeEach(() => {
  restore = isolateRegistry({ keepDeviceRuntimes: false });
  registerDeviceRuntime(makeFakeDeviceRuntime());
});
afterEach(() => restore());

interface Case {
  rule: () => Rule;
  pass: () => [SdpaParams, RuleContext];
  fail: () => [SdpaParams, RuleContext];
  /** Text the failure message must contain (what to change, or the value at fault). */
  says?: RegExp;
}

const CASES: Case[] = [
  {
    rule: () => rules.tensorsOn('cuda'),
    pass: () => [P({ device: 'cuda' }), H100],
    fail: () => [P(), H100],
    says: /\.to\('cuda'\)/,
  },
  { rule: () => rules.denseRank4, pass: () => [P(), CPU_CTX], fail: () => [varlen([3], [3]), CPU_CTX] },
  {
    rule: () => rules.denseRank4,
    pass: () => [P(), CPU_CTX],
    fail: () => [patched(P(), { query: zeros([2, 4, 6, 64, 1]) }), CPU_CTX],
    says: /4 dimensional/,
  },
  {
    rule: () => rules.noAttnMask,
    pass: () => [P({}, { isCausal: true }), CPU_CTX],
    fail: () => [P({}, { attnMask: zeros([6, 6], { dtype: 'bool' }) }), CPU_CTX],
    says: /isCausal/,
  },
  {
    rule: () => rules.noArbitraryMask,
    pass: () => [P(), CPU_CTX],
    fail: () => [P({}, { attnMask: zeros([6, 6]) }), CPU_CTX],
  },
  {
    rule: () => rules.attnMaskShape2dOr4d,
    pass: () => [P({}, { attnMask: zeros([2, 1, 6, 6]) }), CPU_CTX],
    fail: () => [P({}, { attnMask: zeros([4, 6, 6]) }), CPU_CTX],
    says: /4d/,
  },
  {
    rule: () => rules.attnMaskShape2dOr4d,
    pass: () => [P({}, { attnMask: zeros([1, 6]) }), CPU_CTX],
    fail: () => [P({}, { attnMask: zeros([6]) }), CPU_CTX],
  },
  { rule: () => rules.nonzeroSeqLens, pass: () => [P({ Sq: 1, Sk: 1 }), CPU_CTX], fail: () => [P({ Sk: 0 }), CPU_CTX] },
  { rule: () => rules.nonzeroSeqLens, pass: () => [P(), CPU_CTX], fail: () => [P({ Sq: 0 }), CPU_CTX] },
  {
    rule: () => rules.lastDimContiguous(),
    pass: () => [P({}, { attnMask: zeros([6, 1]) }), CPU_CTX],
    fail: () => [patched(P(), { key: zeros([2, 4, 64, 6], { dtype: 'float16' }).transpose(2, 3) }), CPU_CTX],
    says: /contiguous/,
  },
  {
    rule: () => rules.lastDimContiguous({ mask: true }),
    pass: () => [P({}, { attnMask: zeros([6, 6]) }), CPU_CTX],
    fail: () => [P({}, { attnMask: zeros([6, 1]) }), CPU_CTX],
    says: /attnMask/,
  },
  {
    rule: () => rules.lastDimContiguous({ ignoreSingletonDim: true }),
    pass: () => [patched(P({ D: 1 }), { query: zeros([2, 4, 1, 6], { dtype: 'float16' }).transpose(2, 3) }), CPU_CTX],
    fail: () => [patched(P({ D: 2 }), { query: zeros([2, 4, 2, 6], { dtype: 'float16' }).transpose(2, 3) }), CPU_CTX],
  },
  {
    rule: () => rules.batchAndHeads({ gqa: true }),
    pass: () => [P({ Hq: 8, Hk: 2 }), CPU_CTX],
    fail: () => [patched(P(), { key: zeros([3, 4, 6, 64], { dtype: 'float16' }) }), CPU_CTX],
    says: /batch_size/,
  },
  {
    rule: () => rules.batchAndHeads({ gqa: false }),
    pass: () => [P({ Hq: 4, Hk: 4 }, { enableGqa: true }), CPU_CTX],
    fail: () => [P({ Hq: 8, Hk: 2 }), CPU_CTX],
    says: /grouped-query/,
  },
  {
    rule: () => rules.batchAndHeads({ gqa: true, mqa: false }),
    pass: () => [P({ Hq: 8, Hk: 2 }), CPU_CTX],
    fail: () => [P({ Hq: 8, Hk: 1 }), CPU_CTX],
    says: /multi-query/,
  },
  {
    rule: () => rules.batchAndHeads({ gqa: true, sameKvHeads: true }),
    pass: () => [P({ Hq: 8, Hk: 4 }), CPU_CTX],
    fail: () => [patched(P({ Hq: 8, Hk: 4 }), { value: zeros([2, 2, 6, 64], { dtype: 'float16' }) }), CPU_CTX],
  },
  {
    rule: () => rules.batchAndHeads({ gqa: true, sameKvHeads: false }),
    pass: () => [patched(P({ Hq: 8, Hk: 4 }), { value: zeros([2, 2, 6, 64], { dtype: 'float16' }) }), CPU_CTX],
    fail: () => [patched(P({ Hq: 8, Hk: 4 }), { value: zeros([2, 3, 6, 64], { dtype: 'float16' }) }), CPU_CTX],
    says: /divide/,
  },
  {
    rule: () => rules.headDimAtMost(256),
    pass: () => [P({ D: 256 }), CPU_CTX],
    fail: () => [P({ D: 64, Dv: 257 }), CPU_CTX],
    says: /256/,
  },
  {
    rule: () => rules.nonzeroHeadDimV,
    pass: () => [P({ Dv: 1 }), CPU_CTX],
    fail: () => [P({ Dv: 0 }), CPU_CTX],
    says: /empty value head dim/,
  },
  {
    rule: () => rules.float32Scalars,
    pass: () => [P({}, { scale: 3e38, softcap: 3e38 }), CPU_CTX],
    fail: () => [P({}, { scale: 1e39 }), CPU_CTX],
    says: /scale 1e\+39 overflows/,
  },
  {
    rule: () => rules.float32Scalars,
    pass: () => [P({}, { scale: -1e-50 }), CPU_CTX],
    fail: () => [P({}, { softcap: 1e39 }), CPU_CTX],
    says: /softcap 1e\+39/,
  },
  {
    rule: () => rules.headDimsEqual,
    pass: () => [P({ D: 64 }), CPU_CTX],
    fail: () => [P({ D: 64, Dv: 32 }), CPU_CTX],
    says: /32/,
  },
  {
    rule: () => rules.headDimMultipleOf(8),
    pass: () => [P({ D: 72, Dv: 3 }), CPU_CTX],
    fail: () => [P({ D: 13 }), CPU_CTX],
    says: /multiple of 8/,
  },
  {
    rule: () => rules.headDimMultipleOf((d) => (d === 'float32' ? 4 : 8)),
    pass: () => [P({ D: 12, dtype: 'float32' }), CPU_CTX],
    fail: () => [P({ D: 12, dtype: 'float16' }), CPU_CTX],
  },
  {
    rule: () => rules.headDimVMultipleOf(8),
    pass: () => [P({ D: 3, Dv: 16 }), CPU_CTX],
    fail: () => [P({ D: 8, Dv: 12 }), CPU_CTX],
  },
  { rule: () => rules.smRange(80, 121), pass: () => [P(), H100], fail: () => [P(), sm(7, 5)], says: /sm 7\.5/ },
  { rule: () => rules.smRange(80, 90), pass: () => [P(), sm(8, 0)], fail: () => [P(), sm(10, 0)] },
  {
    rule: () => rules.smRange(50, 121),
    pass: () => [P(), sm(5, 0)],
    fail: () => [P(), { device: null, deviceUnknownReason: 'no runtime' }],
    says: /no runtime/,
  },
  {
    rule: () => rules.archIn(['gfx90a', 'gfx942']),
    pass: () => [P(), rocm('gfx942:sramecc+:xnack-')],
    fail: () => [P(), rocm('gfx1100')],
    says: /gfx1100/,
  },
  {
    rule: () => rules.dtypeIn(['float16', 'bfloat16']),
    pass: () => [P({ dtype: 'bfloat16' }), CPU_CTX],
    fail: () => [P({ dtype: 'float32' }), CPU_CTX],
    says: /float32/,
  },
  {
    rule: () =>
      rules.dtypeInByArch([
        { minSm: 80, dtypes: ['float16', 'bfloat16'] },
        { minSm: 0, dtypes: ['float16'] },
      ]),
    pass: () => [P({ dtype: 'bfloat16' }), sm(8, 0)],
    fail: () => [P({ dtype: 'bfloat16' }), sm(7, 5)],
    says: /bfloat16/,
  },
  {
    rule: () => rules.dtypeInByArch([{ minSm: 80, dtypes: ['float16'] }]),
    pass: () => [P(), sm(9, 0)],
    fail: () => [P(), sm(7, 0)],
  },
  {
    rule: () => rules.noDropout,
    pass: () => [P(), CPU_CTX],
    fail: () => [P({}, { dropoutP: 0.1 }), CPU_CTX],
    says: /dropoutP: 0/,
  },
  {
    rule: () => rules.dropoutResolution(16),
    pass: () => [P({}, { dropoutP: 0.125 }), CPU_CTX],
    fail: () => [P({}, { dropoutP: 0.1 }), CPU_CTX],
    says: /1\/16/,
  },
  {
    rule: () => rules.noCausalNonSquare,
    pass: () => [P({ Sq: 4, Sk: 9 }), CPU_CTX],
    fail: () => [P({ Sq: 4, Sk: 9 }, { isCausal: true }), CPU_CTX],
    says: /seqlen_q: 4/,
  },
  {
    rule: () => rules.noCausalNonSquare,
    pass: () => [varlen([3, 5], [3, 5], { isCausal: true }), CPU_CTX],
    fail: () => [varlen([3, 5], [3, 4], { isCausal: true }), CPU_CTX],
  },
  {
    rule: () => rules.alignmentIn(['lowerRight']),
    pass: () => [P({ Sq: 6, Sk: 6 }, { isCausal: true }), CPU_CTX],
    fail: () => [P({ Sq: 4, Sk: 9 }, { isCausal: true }), CPU_CTX],
    says: /upperLeft/,
  },
  {
    rule: () => rules.alignmentIn(['upperLeft']),
    pass: () => [P({ Sq: 4, Sk: 9 }, { window: [2, 0] }), CPU_CTX],
    fail: () => [P({ Sq: 4, Sk: 9 }, { window: [2, 0], alignment: 'lowerRight' }), CPU_CTX],
  },
  {
    rule: () => rules.noCausalWithMask,
    pass: () => [P({}, { attnMask: zeros([6, 6]) }), CPU_CTX],
    fail: () => [P({}, { attnMask: zeros([6, 6]), isCausal: true }), CPU_CTX],
  },
  {
    rule: () => rules.noWindow,
    pass: () => [P({}, { window: [-1, -1] }), CPU_CTX],
    fail: () => [P({}, { window: [4, 0] }), CPU_CTX],
    says: /\[4, 0\]/,
  },
  {
    rule: () => rules.noAlibi,
    pass: () => [P(), CPU_CTX],
    fail: () => [P({}, { alibiSlopes: full([4], 0.5) }), CPU_CTX],
  },
  {
    rule: () => rules.noSoftcap,
    pass: () => [P({}, { softcap: 0 }), CPU_CTX],
    fail: () => [P({}, { softcap: 30 }), CPU_CTX],
    says: /softcap: 0/,
  },
  { rule: () => rules.noVarlen, pass: () => [P(), CPU_CTX], fail: () => [varlen([2], [2]), CPU_CTX] },
  {
    rule: () => rules.noSequsedK,
    pass: () => [P(), CPU_CTX],
    fail: () => [P({ B: 2 }, { sequsedK: tensor([1, 2], [2], { dtype: 'int32' }) }), CPU_CTX],
    says: /sequsedK/,
  },
  {
    rule: () => rules.noPagedKv,
    pass: () => [varlen([2], [2]), CPU_CTX],
    fail: () => [pagedVarlen(), CPU_CTX],
    says: /blockTable/,
  },
  {
    rule: () => rules.indexValuesOnHost,
    pass: () => [varlen([2], [2]), CPU_CTX],
    fail: () => [{ ...varlen([2], [2]), capturing: true, indexValuesOnDevice: true }, CPU_CTX],
    says: /graph capture/,
  },
  {
    rule: () => rules.indexValuesOnHost,
    pass: () => [varlen([2], [2]), CPU_CTX],
    fail: () => [{ ...varlen([2], [2]), indexValuesOnDevice: true }, CPU_CTX],
    says: /indexValuesOnDevice/,
  },
  {
    rule: () => rules.noKvCache,
    pass: () => [pagedVarlen(), CPU_CTX],
    fail: () => [kvCacheCall(), CPU_CTX],
    says: /sdpaKvCache/,
  },
  {
    rule: () => rules.noOutTensor,
    pass: () => [P(), CPU_CTX],
    fail: () => [P({}, { out: zeros([2, 4, 6, 64], { dtype: 'float16' }) }), CPU_CTX],
    says: /leave out unset/,
  },
  {
    rule: () => rules.noBackward,
    pass: () => [P(), CPU_CTX],
    fail: () => [P({}, { requiresGrad: true }), CPU_CTX],
    says: /requiresGrad: false/,
  },
  {
    rule: () => rules.noDeterministic,
    pass: () => [P(), CPU_CTX],
    fail: () => [P({}, { deterministic: true }), CPU_CTX],
  },
  {
    rule: () => rules.noBoolMask,
    pass: () => [P({}, { attnMask: zeros([6, 6]) }), CPU_CTX],
    fail: () => [P({}, { attnMask: zeros([6, 6], { dtype: 'bool' }) }), CPU_CTX],
  },
  {
    rule: () => rules.noAdditiveMask,
    pass: () => [P({}, { attnMask: zeros([6, 6], { dtype: 'bool' }) }), CPU_CTX],
    fail: () => [P({}, { attnMask: zeros([6, 6]) }), CPU_CTX],
  },
  {
    rule: () => rules.maskDtypeIn(['bool', 'query']),
    pass: () => [P({ dtype: 'float16' }, { attnMask: zeros([6, 6], { dtype: 'float16' }) }), CPU_CTX],
    fail: () => [P({ dtype: 'float16' }, { attnMask: zeros([6, 6], { dtype: 'float32' }) }), CPU_CTX],
    says: /float32/,
  },
  {
    rule: () => rules.maxBatchAndHeads(65535),
    pass: () => [P({ B: 2 }), CPU_CTX],
    fail: () => [P({ B: 65536, Sq: 1, Sk: 1, D: 8 }), CPU_CTX],
    says: /65535/,
  },
  {
    rule: () => rules.storageAligned(16),
    pass: () => [P({ D: 64 }), CPU_CTX],
    fail: () => [
      patched(P({ D: 64 }), { query: zeros([2, 4, 6, 65], { dtype: 'float16' }).narrow(3, 1, 64) }),
      CPU_CTX,
    ],
    says: /query/,
  },
  {
    rule: () => rules.storageAligned((d) => (d === 'float16' ? 16 : 4)),
    pass: () => [P({ device: 'cuda' }), H100],
    fail: () => [
      patched(P({ device: 'cuda' }), {
        key: zeros([2, 4, 6, 67], { dtype: 'float16', device: 'cuda' }).narrow(3, 3, 64),
      }),
      H100,
    ],
    says: /key/,
  },
  {
    rule: () => rules.backwardHeadDimOnSm86_89,
    pass: () => [P({ D: 256 }, { requiresGrad: true }), sm(8, 6)], // > 224 without dropout is fine
    fail: () => [P({ D: 200 }, { requiresGrad: true }), sm(8, 9)],
    says: /head_dim 200/,
  },
  {
    rule: () => rules.backwardHeadDimOnSm86_89,
    pass: () => [P({ D: 200 }, { requiresGrad: true }), sm(9, 0)],
    fail: () => [P({ D: 240 }, { requiresGrad: true, dropoutP: 0.1 }), sm(12, 0)],
  },
  {
    rule: () => rules.backwardHeadDimOnSm86_89,
    pass: () => [P({ D: 200 }), sm(8, 6)],
    fail: () => [P({ D: 224 }, { requiresGrad: true }), sm(8, 6)],
  },
];

describe('rule library', () => {
  it.each(CASES.map((c, i) => [c.rule().name, i] as const))(
    '%s fails when it should and passes otherwise (#%d)',
    (_name, i) => {
      const c = CASES[i]!;
      const rule = c.rule();
      const [okParams, okCtx] = c.pass();
      const [badParams, badCtx] = c.fail();
      expect(rule.check(okParams, okCtx)).toBeNull();
      const message = rule.check(badParams, badCtx);
      expect(typeof message).toBe('string');
      expect(message!.length).toBeGreaterThan(20);
      if (c.says) expect(message).toMatch(c.says);
    },
  );

  it('has a case for every rule it exports', () => {
    const covered = new Set(CASES.map((c) => c.rule().name.split('(')[0]));
    const exported = Object.entries(rules)
      .filter(
        ([name, v]) =>
          name !== 'rule' && (typeof v === 'function' || (typeof v === 'object' && v !== null && 'check' in v)),
      )
      .map(([name, v]) => (typeof v === 'function' ? name : (v as Rule).name));
    expect(exported.filter((n) => !covered.has(n))).toEqual([]);
    expect(exported.length).toBeGreaterThanOrEqual(30);
  });

  it('rules are frozen objects with stable names', () => {
    expect(Object.isFrozen(rules.noDropout)).toBe(true);
    expect(rules.headDimAtMost(128).name).toBe('headDimAtMost(128)');
    expect(rules.batchAndHeads({ gqa: true }).name).toBe('batchAndHeads(gqa=true, sameKvHeads=true, mqa=true)');
  });
});
