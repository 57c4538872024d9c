import { describe, expect, it } from 'vitest';
import { effectiveBounds } from './bounds.js';

describe('effectiveBounds: causal folded into the window', () => {
  it('no causal, no window: nothing', () => {
    expect(effectiveBounds({ causal: false, window: null })).toBeNull();
    expect(effectiveBounds({ causal: false, window: { left: null, right: null } })).toBeNull();
  });
  it('causal is right = 0, left unbounded', () => {
    expect(effectiveBounds({ causal: true, window: null })).toEqual({ left: null, right: 0 });
  });
  it('causal caps a window on the right', () => {
    expect(effectiveBounds({ causal: true, window: { left: 16, right: 8 } })).toEqual({ left: 16, right: 0 });
    expect(effectiveBounds({ causal: true, window: { left: 16, right: null } })).toEqual({ left: 16, right: 0 });
  });
  it('a window alone is kept', () => {
    expect(effectiveBounds({ causal: false, window: { left: 4, right: null } })).toEqual({ left: 4, right: null });
    expect(effectiveBounds({ causal: false, window: { left: 4, right: 2 } })).toEqual({ left: 4, right: 2 });
  });
});
