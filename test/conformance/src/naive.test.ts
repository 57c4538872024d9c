import { describe, expect, it } from 'vitest';
import { buildCases } from './cases.js';
import type { CaseSpec } from './cases.js';
import { makeInputs } from './inputs.js';
import { naiveAttention } from './naive.js';

const CPU = { type: 'cpu', index: 0 } as const;
const spec = (name: string): CaseSpec => buildCases().find((c) => c.name === name)!;

describe('naive implementation', () => {
  it("one key: out is that key's value row and logsumexp its score", () => {
    const s = spec('s1/float64');
    const x = makeInputs(s, 1n, CPU).values;
    const r = naiveAttention(s, x, null, true);
    expect([...r.out]).toEqual([...x.v]);
    const D = s.headDim;
    for (let h = 0; h < s.headsQ; h++) {
      let dot = 0;
      for (let d = 0; d < D; d++) dot += x.q[h * D + d]! * x.k[h * D + d]!;
      expect(r.lse[h]).toBe(Math.fround(dot / Math.sqrt(D)));
    }
    expect([...r.dq].every((g) => g === 0)).toBe(true); // softmax over one key has no gradient
    expect([...r.dv]).toEqual([...x.gradOut]);
  });

  it('in low precision it differs from float64 by rounding, not more', () => {
    const s16 = spec('causal-lower-right-sq<sk/float16');
    const x = makeInputs(s16, 2n, CPU).values; // float16 values, so both runs see the same inputs
    const lo = naiveAttention(s16, x, null, true);
    const hi = naiveAttention({ ...s16, dtype: 'float64' }, x, null, true);
    const err = (a: Float64Array, b: Float64Array) => a.reduce((m, v, n) => Math.max(m, Math.abs(v - b[n]!)), 0);
    for (const k of ['out', 'dq', 'dk', 'dv'] as const) {
      expect(err(lo[k], hi[k]), k).toBeGreaterThan(0);
      expect(err(lo[k], hi[k]), k).toBeLessThan(2e-2);
    }
  });
});
