import { describe, expect, it } from 'vitest';
import { kernelWindow } from './window.js';

describe('kernelWindow', () => {
  it('hands a side that reaches every key over as unbounded, and keeps the others', () => {
    expect(kernelWindow({ seqQ: 13, seqK: 39, window: { left: 0, right: 2 ** 40 } })).toEqual({ left: 0, right: -1 });
    expect(kernelWindow({ seqQ: 13, seqK: 39, window: { left: 51, right: 52 } })).toEqual({ left: 51, right: -1 });
    expect(kernelWindow({ seqQ: 13, seqK: 39, window: null })).toEqual({ left: -1, right: -1 });
  });
});
