import { describe, expect, it } from 'vitest';
import { readEnvFlag } from './env.js';

describe('readEnvFlag (c10::utils::check_env)', () => {
  it('reads on, off and unset', () => {
    expect(readEnvFlag('X', {})).toEqual({ on: false, error: null });
    expect(readEnvFlag('X', { X: ' TRUE ' })).toEqual({ on: true, error: null });
    expect(readEnvFlag('X', { X: 'Off' })).toEqual({ on: false, error: null });
  });
  it('an unreadable value is off, with what to change', () => {
    const f = readEnvFlag('X', { X: '2' });
    expect(f.on).toBe(false);
    expect(f.error).toMatch(/X="2" is not a switch value.*set it to 1 \(on\) or 0 \(off\)/);
  });
});
