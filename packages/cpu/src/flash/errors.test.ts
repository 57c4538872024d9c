// Bad input never crashes the process: the backend declines with typed errors, and the addon
// re-checks what the TS side passes and throws (code ATTN_CPU_FLASH_ARGS).
import type { AttnError } from '@attn/core';
import { AttnInputError, randn } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { createCpuFlashBackend } from './backend.js';
import { forwardDesc, forwardOutputs } from './marshal.js';
import { addon } from './native.js';
import type { NativeForwardDesc } from './native.js';
import { params } from './testing.js';
import { defaultThreads, threadsFor } from './threads.js';

const load = addon();
const shape = { B: 1, Hq: 2, Hk: 2, Sq: 9, Sk: 11, D: 8, Dv: 8 };

function goodDesc(): NativeForwardDesc {
  const p = params(shape, 'float32');
  const o = forwardOutputs(p);
  return forwardDesc(p, o.out, o.logsumexp, 'auto', 2);
}

describe('cpu-flash options', () => {
  it('rejects an unknown isa and bad thread counts', () => {
    expect(() => createCpuFlashBackend({ isa: 'sse9' as never })).toThrow(AttnInputError);
    const b = createCpuFlashBackend({ threads: 0 });
    expect(() => b.forward(params(shape, 'float32'))).toThrow(/threads must be an integer/);
    expect(() => defaultThreads({ ATTN_NUM_THREADS: 'many' })).toThrow(AttnInputError);
    expect(defaultThreads({ ATTN_NUM_THREADS: '3' })).toBe(3);
  });

  it('uses one thread for small calls and up to the limit for large ones', () => {
    expect(threadsFor(1e5, 16)).toBe(1);
    expect(threadsFor(1e12, 16)).toBe(16);
  });
});

describe.skipIf(!load.ok)('cpu-flash input errors', () => {
  const native = load.ok ? load.addon : null!;

  it('declines float64 with the rule that fails, as a typed error', () => {
    const p = params(shape, 'float64');
    const err = (() => {
      try {
        createCpuFlashBackend().forward(p);
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(AttnInputError);
    expect((err as AttnError).code).toBe('ATTN_UNSUPPORTED');
    expect((err as Error).message).toMatch(/dtypeIn/);
  });

  it('is declined by its rules for empty sequences and other devices', () => {
    const b = createCpuFlashBackend();
    const names = b.rules.map((r) => r.name);
    expect(names).toContain('nonzeroSeqLens');
    expect(names).toContain('tensorsOn(cpu)');
  });

  const bad: Array<[string, (d: NativeForwardDesc) => unknown]> = [
    ['not an object', () => 42],
    ['strides past the end', (d) => ({ ...d, q: { ...d.q, strides: [0, 0, 1e6, 1] } })],
    ['offset past the end', (d) => ({ ...d, k: { ...d.k, offset: d.k.data.length } })],
    ['negative stride reaching before the start', (d) => ({ ...d, v: { ...d.v, strides: [0, 0, -8, 1] } })],
    ['wrong array type for the dtype', (d) => ({ ...d, q: { ...d.q, data: new Uint16Array(d.q.data.length) } })],
    ['lse too short', (d) => ({ ...d, lse: { data: new Float32Array(3), offset: 0 } })],
    ['Hq not a multiple of Hk', (d) => ({ ...d, Hk: 3 })],
    ['zero sequence', (d) => ({ ...d, Sq: 0 })],
    ['fractional size', (d) => ({ ...d, D: 7.5 })],
    [
      'varlen offsets not starting at 0',
      (d) => ({ ...d, varlen: { cuQ: Int32Array.of(1, 9), cuK: Int32Array.of(0, 11) } }),
    ],
    [
      'varlen sequence longer than Sq',
      (d) => ({ ...d, varlen: { cuQ: Int32Array.of(0, 10), cuK: Int32Array.of(0, 11) } }),
    ],
    [
      'varlen offsets as Float32Array',
      (d) => ({ ...d, varlen: { cuQ: Float32Array.of(0, 9), cuK: Int32Array.of(0, 11) } }),
    ],
    ['unknown isa', (d) => ({ ...d, isa: 'mmx' })],
    ['too many threads', (d) => ({ ...d, threads: 5000 })],
    ['mask kind and dtype disagree', (d) => ({ ...d, mask: { ...d.q, kind: 'bool', dtype: 'float32' } })],
    [
      'dropout keep scale below 1',
      (d) => ({ ...d, dropout: { seedLo: 0, seedHi: 0, offset: 0, threshold: 5, keepScale: 0.5 } }),
    ],
    [
      'alibi slopes out of range',
      (d) => ({ ...d, alibi: { data: new Float32Array(1), offset: 0, strideB: 0, strideH: 1 } }),
    ],
  ];
  for (const [name, make] of bad) {
    it(`the addon throws, not crashes: ${name}`, () => {
      const desc = make(goodDesc()) as NativeForwardDesc;
      expect(() => native.forward(desc)).toThrow(expect.objectContaining({ code: 'ATTN_CPU_FLASH_ARGS' }) as Error);
    });
  }

  it('rejects an async call with a bad descriptor synchronously, and the good one still runs', async () => {
    const d = goodDesc();
    expect(() => native.forwardAsync({ ...d, threads: -1 })).toThrow(/threads/);
    await native.forwardAsync(d);
    expect(Number.isFinite(d.lse.data[0])).toBe(true);
  });

  it('backward rejects out and logsumexp that are not the forward outputs', () => {
    const b = createCpuFlashBackend();
    const p = params(shape, 'float32', { requiresGrad: true });
    const saved = b.forward(p);
    const g = randn([1, 2, 9, 8]);
    expect(() => b.backward!(p, { ...saved, logsumexp: randn([1, 2, 8]) }, g)).toThrow(AttnInputError);
    expect(() => b.backward!(p, saved, randn([1, 2, 9, 7]))).toThrow(AttnInputError);
  });
});
