// An output too large for the host is an ATTN_SIZE error that names the tensor, its shape and
// size, and which dims of the call to shrink. Inputs are stride-0 expansions: no memory is used.
import { zeros } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { cpuMathBackend } from './backend.js';
import { normalizeParams } from '@attn/core';

describe('cpu-math allocation errors', () => {
  it('name the output, its shape and what to shrink', () => {
    const q = zeros([1, 1, 1, 64]).expand([1, 1, 2 ** 31 - 1, 64]);
    const k = zeros([1, 1, 1, 64]);
    const p = normalizeParams(q, k, k);
    let error: (Error & { code?: string }) | undefined;
    try {
      cpuMathBackend.forward(p);
    } catch (e) {
      error = e as Error & { code?: string };
    }
    expect(error?.code).toBe('ATTN_SIZE');
    expect(error?.message).toMatch(/the attention output \(out\), float32 \[1, 1, 2147483647, 64\] \(512\.0 GiB\)/);
    expect(error?.message).toMatch(/chunks of queries \(Sq\), heads or batch/);
  });
});
