import { describe, expect, it } from 'vitest';
import { envNumThreads, MAX_NUM_THREADS, RUNTIME_ENV_FLAGS } from './env-flags.js';
import { AttnInputError } from './errors.js';

describe('runtime environment flags', () => {
  it('ATTN_NUM_THREADS: unset or blank is null, an integer in range is itself, anything else a typed error', () => {
    expect(envNumThreads({})).toBeNull();
    expect(envNumThreads({ ATTN_NUM_THREADS: ' ' })).toBeNull();
    expect(envNumThreads({ ATTN_NUM_THREADS: '3' })).toBe(3);
    expect(envNumThreads({ ATTN_NUM_THREADS: String(MAX_NUM_THREADS) })).toBe(MAX_NUM_THREADS);
    for (const bad of ['0', '-1', '2.5', 'many', String(MAX_NUM_THREADS + 1)]) {
      expect(() => envNumThreads({ ATTN_NUM_THREADS: bad })).toThrow(AttnInputError);
    }
  });

  it('declares the thread count as the only run-time variable', () => {
    expect(Object.keys(RUNTIME_ENV_FLAGS)).toEqual(['ATTN_NUM_THREADS']);
  });
});
