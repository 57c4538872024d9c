import type { Backend } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { backendBuilds, pathLines } from './paths.js';

const backend = (name: string, buildInfo?: () => Record<string, string>): Backend =>
  ({ name, buildInfo }) as unknown as Backend;

describe('bench kernel paths', () => {
  it("names each backend's ISA and the forward and backward paths of the bench's dtype", () => {
    const builds = backendBuilds([
      backend('cpu-flash', () => ({ isa: 'avx2', 'forward.float32': 'avx2/fp32', 'backward.float32': 'avx2/fp32', 'forward.bfloat16': 'avx2/bf16' })),
      backend('cpu-math'),
      backend('broken', () => {
        throw new Error('no addon');
      }),
    ]);
    expect(builds).toEqual({
      'cpu-flash': { isa: 'avx2', 'forward.float32': 'avx2/fp32', 'backward.float32': 'avx2/fp32', 'forward.bfloat16': 'avx2/bf16' },
      broken: { error: 'no addon' },
    });
    expect(pathLines(builds, 'float32')).toEqual(['cpu-flash: isa avx2, forward avx2/fp32, backward avx2/fp32']);
    expect(pathLines(builds, 'bfloat16')).toEqual(['cpu-flash: isa avx2, forward avx2/bf16']);
  });
});
