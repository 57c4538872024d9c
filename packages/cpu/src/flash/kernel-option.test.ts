// cpu-flash's kernels are its SIMD levels: the `kernel` call option picks one per call (it replaced an
// environment variable), selection refuses a level this CPU does not run with the reason, and the
// level reaches the addon (the desc it is called with, and the same bits as an instance built for it).
import {
  AttnInputError,
  explain,
  NoBackendError,
  normalizeParams,
  randn,
  registerBackend,
  sdpaForward,
} from '@attn/core';
import { isolateRegistry } from '@attn/core/testing';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { cpuMathBackend } from '../math/backend.js';
import { createCpuFlashBackend } from './backend.js';
import { addon } from './native.js';

const load = addon();
const runnable = load.ok ? load.addon.buildInfo('auto').runnableIsas : [];
const LEVELS = ['portable', 'avx2', 'avx512', 'avx512bf16', 'amx', 'neon', 'sve256'];

let restore: () => void;
beforeEach(() => {
  restore = isolateRegistry();
  registerBackend(cpuMathBackend);
  registerBackend(createCpuFlashBackend({ threads: 2 }));
});
afterEach(() => {
  vi.restoreAllMocks();
  restore();
});

const qkv = (dtype: 'float32' | 'bfloat16' = 'float32') =>
  [1, 2, 3].map((seed) => randn([1, 2, 37, 16], { dtype, seed })) as [
    ReturnType<typeof randn>,
    ReturnType<typeof randn>,
    ReturnType<typeof randn>,
  ];

describe('cpu-flash kernel option', () => {
  it('declares every SIMD level but auto as a kernel', () => {
    expect(createCpuFlashBackend().kernels!.map((k) => k.name)).toEqual(LEVELS);
  });

  it('an unknown level is a typed error listing the valid ones', () => {
    const [q, k, v] = qkv();
    expect(() => sdpaForward(q, k, v, { kernel: 'sse9' })).toThrow(AttnInputError);
    expect(() => sdpaForward(q, k, v, { kernel: 'sse9' })).toThrow(
      /cpu-flash: portable, avx2, avx512, avx512bf16, amx, neon, sve256/,
    );
    expect(() => sdpaForward(q, k, v, { kernel: 'avx2', backends: ['cpu-math'] })).toThrow(
      expect.objectContaining({ code: 'ATTN_UNKNOWN_KERNEL' }),
    );
  });

  it.skipIf(!load.ok)(
    'a level this CPU does not run declines the call with the reason; cpu-math does not take it',
    () => {
      const missing = LEVELS.find((l) => !runnable.includes(l));
      if (!missing) return; // this CPU runs every level
      const [q, k, v] = qkv();
      const call = () => sdpaForward(q, k, v, { kernel: missing });
      expect(call).toThrow(NoBackendError);
      const r = explain(q, k, v, { kernel: missing });
      expect(r.restrictedTo).toEqual(['cpu-flash']);
      expect(r.candidates[0]!.reasons[0]!.message).toMatch(new RegExp(`does not run ${missing} \\(runnable here: `));
    },
  );

  it.skipIf(!load.ok)('the level reaches the addon, and gives the bits of an instance built for that level', () => {
    const [q, k, v] = qkv();
    const spy = vi.spyOn(load.ok ? load.addon : ({} as never), 'forward');
    for (const level of runnable) {
      const r = sdpaForward(q, k, v, { kernel: level });
      expect(r.backend).toBe('cpu-flash');
      expect(spy.mock.calls.at(-1)![0].isa).toBe(level);
      const pinned = createCpuFlashBackend({ isa: level as 'portable', threads: 2 }).forward(normalizeParams(q, k, v));
      expect(Array.from(r.out.toFloat64Array())).toEqual(Array.from(pinned.out.toFloat64Array()));
    }
    sdpaForward(q, k, v);
    expect(spy.mock.calls.at(-1)![0].isa).toBe('auto');
  });
});
