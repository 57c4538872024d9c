import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { cpuThreads, withCpuThreads } from './threads.js';

describe('CPU threads', () => {
  it('prefers the flag, then ATTN_NUM_THREADS, then every core', () => {
    expect(cpuThreads(3, { ATTN_NUM_THREADS: '5' })).toBe(3);
    expect(cpuThreads(undefined, { ATTN_NUM_THREADS: '5' })).toBe(5);
    expect(cpuThreads(undefined, {})).toBe(os.availableParallelism());
    expect(() => cpuThreads(undefined, { ATTN_NUM_THREADS: 'lots' })).toThrow(
      /ATTN_NUM_THREADS must be an integer in \[1, 1024\]/,
    );
  });

  it('sets ATTN_NUM_THREADS for the duration of a command only', async () => {
    const before = process.env.ATTN_NUM_THREADS;
    const seen = await withCpuThreads(7, async () => process.env.ATTN_NUM_THREADS);
    expect(seen).toBe('7');
    expect(process.env.ATTN_NUM_THREADS).toBe(before);
    expect(await withCpuThreads(undefined, async () => process.env.ATTN_NUM_THREADS)).toBe(before);
  });
});
