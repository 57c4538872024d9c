import { explain, explainVarlen, type VarlenOptions } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { callOptions } from '../call.js';
import { makeInputs } from '../inputs.js';
import { featureCombinations, gridCase, gridCases, GRID_SHAPES } from './feature-grid.js';

const CPU = { type: 'cpu', index: 0 } as const;

describe('the feature grid', () => {
  const combos = featureCombinations();

  it('is every combination of its axes, once', () => {
    expect(combos).toHaveLength(7 * 15 * 2 ** 4);
    expect(new Set(combos.map((f) => JSON.stringify(f))).size).toBe(combos.length);
    expect(combos.filter((f) => f.layout === 'varlen' && f.mask !== null)).toEqual([]);
  });

  it('has zero lengths, Dv = 0, D = 512 and every dtype', () => {
    const all = gridCases();
    expect(all).toHaveLength(Object.keys(GRID_SHAPES).length * 4 * combos.length);
    const has = (pred: (c: (typeof all)[number]) => boolean) => all.some(pred);
    expect(has((c) => c.seqQ === 0) && has((c) => c.seqK === 0) && has((c) => c.batch === 0)).toBe(true);
    expect(has((c) => c.headDimV === 0) && has((c) => c.headDim === 512)).toBe(true);
    for (const dtype of ['float64', 'float32', 'float16', 'bfloat16'] as const)
      expect(has((c) => c.dtype === dtype)).toBe(true);
  });

  it('names each point of a (shape, dtype) uniquely', () => {
    const names = combos.map((f) => gridCase('base', 'float32', f).name);
    expect(new Set(names).size).toBe(names.length);
  });

  it('is made of valid calls: core accepts every point (nothing registered, so nothing runs)', () => {
    for (const shape of Object.keys(GRID_SHAPES)) {
      for (const f of combos) {
        const spec = gridCase(shape, 'float32', f);
        const inputs = makeInputs(spec, 1n, CPU);
        const opts = callOptions(spec, inputs.test, inputs, null, true);
        const t = inputs.test;
        const report = spec.varlen ? explainVarlen(t.q, t.k, t.v, opts as VarlenOptions) : explain(t.q, t.k, t.v, opts);
        expect(report.selected, spec.name).toBeNull();
      }
    }
  });
});
