import type { Backend } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { backendBuilds, pathFacts, pathLines } from './paths.js';

type Info = Record<string, string | number>;
const backend = (name: string, buildInfo?: (kernel?: string) => Info, kernels: string[] = []): Backend =>
  ({ name, buildInfo, kernels: kernels.map((k) => ({ name: k, description: k })) }) as unknown as Backend;

/** A cpu-flash stand-in whose paths follow the kernel asked for, as the addon's buildInfo(isa). */
const flash = backend(
  'cpu-flash',
  (kernel = 'auto') => {
    const isa = kernel === 'auto' ? 'avx512' : kernel;
    return {
      kernel,
      isa,
      'forward.float32': `${isa}/fp32`,
      'backward.float32': `${isa}/fp32`,
      'forward.bfloat16': `${isa}/bf16`,
      threads: 2,
    };
  },
  ['avx2', 'avx512'],
);

describe('bench kernel paths', () => {
  it("names each backend's ISA and the forward and backward paths of the bench's dtype", () => {
    const builds = backendBuilds([
      backend('cpu-flash', () => ({
        isa: 'avx2',
        'forward.float32': 'avx2/fp32',
        'backward.float32': 'avx2/fp32',
        'forward.bfloat16': 'avx2/bf16',
      })),
      backend('cpu-math'),
      backend('broken', () => {
        throw new Error('no addon');
      }),
    ]);
    expect(builds).toEqual({
      'cpu-flash': {
        isa: 'avx2',
        'forward.float32': 'avx2/fp32',
        'backward.float32': 'avx2/fp32',
        'forward.bfloat16': 'avx2/bf16',
      },
      broken: { error: 'no addon' },
    });
    expect(pathLines(builds, 'float32')).toEqual(['cpu-flash: isa avx2, forward avx2/fp32, backward avx2/fp32']);
    expect(pathLines(builds, 'bfloat16')).toEqual(['cpu-flash: isa avx2, forward avx2/bf16']);
  });

  it('states the kernel asked for and the thread budget, for the header and the JSON', () => {
    const builds = backendBuilds([flash]);
    expect(pathFacts(builds, 'float32')).toEqual({
      'cpu-flash': { kernel: 'auto', isa: 'avx512', forward: 'avx512/fp32', backward: 'avx512/fp32', threads: 2 },
    });
    expect(pathLines(builds, 'float32')).toEqual([
      'cpu-flash: kernel auto, isa avx512, forward avx512/fp32, backward avx512/fp32, threads 2',
    ]);
  });

  it('with --kernel, asks the backends that declare it for the paths that kernel runs', () => {
    const other = backend('other', (kernel?: string) => ({ isa: kernel === undefined ? 'own' : `asked ${kernel}` }));
    const builds = backendBuilds([flash, other], 'avx2');
    expect(pathFacts(builds, 'float32')).toEqual({
      'cpu-flash': { kernel: 'avx2', isa: 'avx2', forward: 'avx2/fp32', backward: 'avx2/fp32', threads: 2 },
      other: { isa: 'own' }, // declares no avx2: its own facts, not asked for a kernel it lacks
    });
  });

  it('leaves out backends whose build states no path, and errors', () => {
    expect(pathFacts({ 'cpu-math': { language: 'TypeScript' }, broken: { error: 'no addon' } }, 'float32')).toEqual({});
  });
});
