import { describe, expect, it } from 'vitest';
import {
  checkParamsVersions,
  efficientUsesAlignmentRule,
  expectedParamsVersions,
  hasDeterministicOption,
  hasWindowRightBug,
  maxHeadDim,
} from './version.js';

const v = (minor: number, patch = 0) => ({ major: 0, minor, patch });

describe('params-struct versions (the ABI guard)', () => {
  it('knows each release line', () => {
    expect(expectedParamsVersions(v(9, 2))).toBeNull();
    expect(expectedParamsVersions(v(10))).toEqual({ fwd: 1, bwd: 1 });
    expect(expectedParamsVersions(v(11, 2))).toEqual({ fwd: 1, bwd: 3 });
    expect(expectedParamsVersions(v(12, 1))).toEqual({ fwd: 3, bwd: 6 });
    expect(expectedParamsVersions(v(14))).toEqual({ fwd: 3, bwd: 6 });
  });
  it('accepts matching headers and refuses old or mismatched ones with what to do', () => {
    expect(checkParamsVersions(v(11, 2), { fwd: 1, bwd: 3 })).toBeNull();
    expect(checkParamsVersions(v(13), { fwd: 3, bwd: 6 })).toBeNull();
    expect(checkParamsVersions(v(10), { fwd: 1, bwd: 1 })).toBeNull();
    expect(checkParamsVersions(v(10), { fwd: 1, bwd: 3 })).toMatch(/but this binding knows fwd 1, bwd 1/);
    expect(checkParamsVersions(v(9, 2), { fwd: 1, bwd: 1 })).toMatch(/0\.9\.2 is too old: this binding needs 0\.10\.0/);
    expect(checkParamsVersions(v(12), { fwd: 1, bwd: 3 })).toMatch(
      /declare attn_fwd_params v1 and attn_bwd_params v3, but this binding knows fwd 3, bwd 6/,
    );
  });
});

describe('version facts', () => {
  it('the window_right bug is in 0.10b, 0.11b and 0.11.1b only', () => {
    expect(hasWindowRightBug(v(9, 2))).toBe(false);
    expect(hasWindowRightBug(v(10))).toBe(true);
    expect(hasWindowRightBug(v(11))).toBe(true);
    expect(hasWindowRightBug(v(11, 1))).toBe(true);
    expect(hasWindowRightBug(v(11, 2))).toBe(false);
    expect(hasWindowRightBug(v(12))).toBe(false);
  });
  it('head dim caps at 512, 256 on gfx11 with 0.11', () => {
    expect(maxHeadDim(v(11, 2), 'gfx1100')).toBe(256);
    expect(maxHeadDim(v(11, 2), 'gfx942')).toBe(512);
    expect(maxHeadDim(v(12), 'gfx1100')).toBe(512);
  });
  it('deterministic option and the efficient alignment rule came with 0.12', () => {
    expect(hasDeterministicOption(v(11, 2))).toBe(false);
    expect(hasDeterministicOption(v(12))).toBe(true);
    expect(efficientUsesAlignmentRule(v(11, 2))).toBe(false);
    expect(efficientUsesAlignmentRule(v(12))).toBe(true);
  });
});
