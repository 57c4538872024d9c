import { describe, expect, it } from 'vitest';
import { describeValue } from './describe-value.js';
import { zeros } from './factory.js';
import { normalizeParams } from './validate.js';

describe('describeValue', () => {
  it('shows the type where String() would hide it, and never throws', () => {
    expect(describeValue('0.1')).toBe('the string "0.1"');
    expect(describeValue(0.1)).toBe('0.1');
    expect(describeValue(3n)).toBe('3n (a bigint)');
    expect(describeValue([1n, '2'])).toBe('[1n (a bigint), the string "2"]');
    expect(describeValue(Object.create(null))).toBe('an object');
    expect(describeValue(null)).toBe('null');
    expect(describeValue(Symbol('s'))).toBe('a symbol');
  });
});

describe('option messages say what type they got', () => {
  const q = zeros([1, 1, 2, 4]);
  const fails = (opts: object) => {
    try {
      normalizeParams(q, q, q, opts);
    } catch (e) {
      return e as Error & { code?: string };
    }
    throw new Error('expected a failure');
  };

  it("dropoutP: '0.1' is a string, not a number out of range", () => {
    const e = fails({ dropoutP: '0.1' });
    expect(e.code).toBe('ATTN_DROPOUT');
    expect(e.message).toMatch(/got the string "0.1"/);
  });

  it('a bigint or a primitive-less object in an option is a coded error, not a TypeError', () => {
    expect(fails({ window: [1n, 0] }).code).toBe('ATTN_WINDOW');
    expect(fails({ scale: Object.create(null) }).code).toBe('ATTN_SCALE');
    expect(fails({ softcap: Object.create(null) }).code).toBe('ATTN_SOFTCAP');
    expect(fails({ isCausal: Object.create(null) }).code).toBe('ATTN_OPTION');
    expect(fails({ dropoutP: 0.1, dropoutSeed: Object.create(null) }).code).toBe('ATTN_DROPOUT');
  });
});
