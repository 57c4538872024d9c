import { describe, expect, it } from 'vitest';
import { buildCases } from './cases.js';
import type { CaseSpec } from './cases.js';

describe('the case list', () => {
  const all = buildCases();
  const has = (what: string, pred: (c: CaseSpec) => boolean) => expect(all.some(pred), what).toBe(true);

  it('covers the odd shapes', () => {
    for (const s of [1, 17, 1000]) has(`S = ${s}`, (c) => c.seqQ === s || c.seqK === s);
    for (const d of [8, 72, 256, 512]) has(`D = ${d}`, (c) => c.headDim === d);
    has('Hq != Hk', (c) => c.headsQ !== c.headsKV);
    has('MQA', (c) => c.headsKV === 1 && c.headsQ > 1);
    has('Sq < Sk', (c) => c.seqQ < c.seqK);
    has('Sq > Sk', (c) => c.seqQ > c.seqK);
    has('batch > 1', (c) => c.batch > 1);
    has('strided inputs', (c) => c.layout === 'bshd');
    has('Dv != D', (c) => c.headDimV !== c.headDim);
    for (const dtype of ['float64', 'float32', 'float16', 'bfloat16'] as const) {
      has(`Sq = 0 in ${dtype}`, (c) => c.dtype === dtype && c.seqQ === 0);
      has(`Sk = 0 in ${dtype}`, (c) => c.dtype === dtype && c.seqK === 0);
      has(`B = 0 in ${dtype}`, (c) => c.dtype === dtype && c.batch === 0);
      has(`Dv = 0 in ${dtype}`, (c) => c.dtype === dtype && c.headDimV === 0);
      has(
        `an empty varlen sequence in ${dtype}`,
        (c) => c.dtype === dtype && (c.varlen?.seqlensQ.includes(0) ?? false),
      );
    }
  });

  it('covers every feature of SdpaParams, in every dtype', () => {
    const features: [string, (c: CaseSpec) => boolean][] = [
      ['bool mask', (c) => c.mask?.kind === 'bool'],
      ['additive mask', (c) => c.mask?.kind === 'additive'],
      ['broadcast mask', (c) => (c.mask?.shape.length ?? 4) < 4 || (c.mask?.shape.includes(1) ?? false)],
      ['fully masked rows', (c) => c.mask?.fullyMaskedRows === true],
      ['causal upper-left', (c) => c.causal === true && (c.alignment ?? 'upperLeft') === 'upperLeft'],
      ['causal lower-right', (c) => c.causal === true && c.alignment === 'lowerRight'],
      ['window', (c) => c.window !== undefined],
      ['alibi [Hq]', (c) => c.alibi === 'perHead'],
      ['alibi [B, Hq]', (c) => c.alibi === 'perBatchHead'],
      ['softcap', (c) => (c.softcap ?? 0) > 0],
      ['dropout', (c) => (c.dropoutP ?? 0) > 0],
      ['scale', (c) => c.scale !== undefined],
      ['varlen', (c) => c.varlen !== undefined],
      ['deterministic', (c) => c.deterministic === true],
    ];
    for (const dtype of ['float64', 'float32', 'float16', 'bfloat16'] as const) {
      for (const [name, pred] of features) has(`${name} in ${dtype}`, (c) => c.dtype === dtype && pred(c));
    }
  });

  it('covers the features together and empty sequences', () => {
    const combos: [string, (c: CaseSpec) => boolean][] = [
      ['a mask with causal and a window', (c) => c.mask !== undefined && c.causal === true && c.window !== undefined],
      [
        'a mask with a lower-right window',
        (c) => c.mask !== undefined && c.window !== undefined && c.alignment === 'lowerRight',
      ],
      [
        'dropout with a mask, window, ALiBi and softcap',
        (c) => (c.dropoutP ?? 0) > 0 && !!c.mask && !!c.window && !!c.alibi && (c.softcap ?? 0) > 0,
      ],
      [
        'a deterministic backward with a window and softcap',
        (c) => c.deterministic === true && !!c.window && (c.softcap ?? 0) > 0,
      ],
      [
        'features at a head dim no tensor core takes',
        (c) => c.headDim % 4 !== 0 && !!c.window && !!c.alibi && (c.softcap ?? 0) > 0,
      ],
      ['features at D = 256', (c) => c.headDim === 256 && !!c.window && (c.softcap ?? 0) > 0],
      ['a window over many key blocks', (c) => !!c.window && c.seqK >= 300 && c.window[0] >= 0 && c.window[0] < 100],
      ['no key', (c) => c.seqK === 0],
      ['no query', (c) => c.seqQ === 0],
      [
        'varlen sequences of length 0',
        (c) => !!c.varlen && c.varlen.seqlensQ.includes(0) && c.varlen.seqlensK.includes(0),
      ],
    ];
    for (const dtype of ['float64', 'float32', 'float16', 'bfloat16'] as const) {
      for (const [name, pred] of combos) has(`${name} in ${dtype}`, (c) => c.dtype === dtype && pred(c));
    }
  });

  it('covers paged K/V: block sizes 16, 64 and 256, mid-block ends, decode and prefill, with the features decode uses', () => {
    const paged = all.filter((c) => c.paged);
    for (const bs of [16, 64, 256]) has(`paged block size ${bs}`, (c) => c.paged?.blockSize === bs);
    expect(
      paged.every((c) => c.varlen && c.varlen.seqlensK.some((n) => n % c.paged!.blockSize !== 0)),
      'a length that ends mid-block',
    ).toBe(true);
    const paged_: [string, (c: CaseSpec) => boolean][] = [
      ['decode', (c) => c.varlen!.seqlensQ.every((n) => n === 1)],
      ['prefill chunk', (c) => c.varlen!.seqlensQ.some((n) => n > 1)],
      ['sequsedK', (c) => c.sequsedK !== undefined],
      ['GQA', (c) => c.headsQ !== c.headsKV],
      ['causal lower-right', (c) => c.causal === true && c.alignment === 'lowerRight'],
      ['causal upper-left', (c) => c.causal === true && c.alignment === 'upperLeft'],
      ['window', (c) => c.window !== undefined],
      ['softcap', (c) => (c.softcap ?? 0) > 0],
      ['ALiBi', (c) => c.alibi !== undefined],
      ['dropout', (c) => (c.dropoutP ?? 0) > 0],
    ];
    for (const dtype of ['float64', 'float32', 'float16', 'bfloat16'] as const) {
      for (const [name, pred] of paged_)
        has(`paged ${name} in ${dtype}`, (c) => c.dtype === dtype && !!c.paged && pred(c));
    }
  });

  it('has float8_e4m3 cases: bfloat16 out, forward only, head dims an fp8 kernel takes and one it may not, features', () => {
    const f8 = all.filter((c) => c.float8);
    expect(f8.length).toBeGreaterThan(10);
    expect(f8.every((c) => c.dtype === 'bfloat16' && !c.varlen && !c.paged && c.mask?.kind !== 'additive')).toBe(true);
    expect(f8.some((c) => c.headDim % 16 !== 0)).toBe(true);
    for (const d of [16, 64, 128]) expect(f8.some((c) => c.headDim === d)).toBe(true);
    for (const pred of [
      (c: (typeof f8)[number]) => c.seqQ === 1,
      (c: (typeof f8)[number]) => !!c.causal && c.alignment === 'lowerRight',
      (c: (typeof f8)[number]) => c.headsQ !== c.headsKV,
      (c: (typeof f8)[number]) => !!c.sequsedK,
      (c: (typeof f8)[number]) => (c.poison ?? []).some((p) => Number.isNaN(p.value)),
    ])
      expect(f8.some(pred)).toBe(true);
  });

  it('has unique names', () => {
    expect(new Set(all.map((c) => c.name)).size).toBe(all.length);
  });

  it('maxSeq and quick shrink it', () => {
    expect(buildCases({ maxSeq: 100 }).every((c) => c.seqQ <= 100 && c.seqK <= 100)).toBe(true);
    const quick = buildCases({ quick: true });
    expect(quick.length).toBeLessThan(all.length);
    expect(quick.filter((c) => c.seqQ === 1000).length).toBeGreaterThan(0);
  });
});
