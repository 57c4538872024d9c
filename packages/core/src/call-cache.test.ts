// Validation and selection cached per call signature (call-cache.ts): hits skip the signature's
// checks and rules, misses on any change of layout or option, invalidation when the registry or a
// backend's availability changes, and the checks that depend on values still run on every call.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Rule } from './backend.js';
import { callCacheSize, clearCallCache } from './call-cache.js';
import { empty, tensor, zeros } from './factory.js';
import type { SdpaParams } from './params.js';
import { registerBackend, setBackendPriority, unregisterBackend } from './registry.js';
import { sdpaKernel } from './scope.js';
import { sdpaForward } from './sdpa.js';
import { Tensor } from './tensor.js';
import { isolateRegistry, makeFakeBackend } from './testing.js';
import { sdpaVarlen } from './varlen.js';

/** A rule that passes and counts how often it ran. */
function counting(
  name: string,
  opts: { readsValues?: boolean; pass?: (p: SdpaParams) => boolean } = {},
): Rule & { runs: number } {
  const r = {
    runs: 0,
    name,
    readsValues: opts.readsValues,
    check(p: SdpaParams): string | null {
      r.runs++;
      return (opts.pass?.(p) ?? true) ? null : `${name} declines`;
    },
  };
  return r;
}

const qkv = (S = 5): [Tensor, Tensor, Tensor] => [zeros([1, 2, S, 8]), zeros([1, 2, S, 8]), zeros([1, 2, S, 8])];

describe('call cache', () => {
  let restore: () => void;
  beforeEach(() => {
    restore = isolateRegistry();
    clearCallCache();
  });
  afterEach(() => restore());

  it('a second call of one signature runs no rule and no signature check, with its own tensors', () => {
    const r = counting('counted');
    const b = makeFakeBackend('a', { rules: [r] });
    registerBackend(b);
    const first = qkv();
    sdpaForward(...first, { isCausal: true });
    expect(r.runs).toBe(1);
    expect(callCacheSize()).toBe(1);
    const second = qkv();
    const res = sdpaForward(...second, { isCausal: true });
    expect(r.runs).toBe(1);
    expect(res.backend).toBe('a');
    expect(b.calls[1]!.query).toBe(second[0]);
    expect(b.calls[1]!.causal).toBe(true);
    expect(Object.isFrozen(b.calls[1])).toBe(true);
    expect(callCacheSize()).toBe(1);
  });

  it('misses on any change of shape, stride, dtype or option value', () => {
    const r = counting('counted');
    registerBackend(makeFakeBackend('a', { rules: [r] }));
    const [q, k, v] = qkv();
    sdpaForward(q, k, v);
    const runs = (): number => r.runs;
    const changes: Array<() => unknown> = [
      () => sdpaForward(...qkv(6)),
      () => sdpaForward(zeros([1, 5, 2, 8]).transpose(1, 2), k, v),
      () =>
        sdpaForward(
          zeros([1, 2, 5, 8], { dtype: 'float64' }),
          zeros([1, 2, 5, 8], { dtype: 'float64' }),
          zeros([1, 2, 5, 8], { dtype: 'float64' }),
        ),
      () => sdpaForward(q, k, v, { isCausal: true }),
      () => sdpaForward(q, k, v, { scale: 0.5 }),
      () => sdpaForward(q, k, v, { window: [2, 0] }),
      () => sdpaForward(q, k, v, { window: [3, 0] }),
      () => sdpaForward(q, k, v, { attnMask: zeros([5, 5], { dtype: 'bool' }) }),
      () => sdpaForward(q, k, v, { attnMask: zeros([1, 5], { dtype: 'bool' }) }),
    ];
    for (const change of changes) {
      const before = runs();
      change();
      expect(runs()).toBe(before + 1);
    }
  });

  it('an option array edited after the call is a new signature, normalized again', () => {
    const b = makeFakeBackend('a');
    registerBackend(b);
    const [q, k, v] = qkv();
    const window: [number, number] = [1, 0];
    sdpaForward(q, k, v, { window });
    window[0] = 3;
    sdpaForward(q, k, v, { window });
    expect(b.calls.map((p) => p.window?.left)).toEqual([1, 3]);
  });

  it('registering, removing or reprioritizing a backend invalidates the cached selection', () => {
    registerBackend(makeFakeBackend('low', { priority: 1 }));
    const [q, k, v] = qkv();
    expect(sdpaForward(q, k, v).backend).toBe('low');
    registerBackend(makeFakeBackend('high', { priority: 2 }));
    expect(sdpaForward(q, k, v).backend).toBe('high');
    setBackendPriority('low', 3);
    expect(sdpaForward(q, k, v).backend).toBe('low');
    unregisterBackend('low');
    expect(sdpaForward(q, k, v).backend).toBe('high');
  });

  it('asks availability again on every call', () => {
    let available: true | string = true;
    const flaky = makeFakeBackend('flaky', { priority: 2 });
    registerBackend({
      ...flaky,
      availability: () => (available === true ? { ok: true } : { ok: false, reason: available }),
    });
    registerBackend(makeFakeBackend('steady', { priority: 1 }));
    const [q, k, v] = qkv();
    expect(sdpaForward(q, k, v).backend).toBe('flaky');
    available = 'gone';
    expect(sdpaForward(q, k, v).backend).toBe('steady');
    available = true;
    expect(sdpaForward(q, k, v).backend).toBe('flaky');
  });

  it('runs rules with readsValues on every call, and follows their answer', () => {
    let pass = true;
    const valueRule = counting('addresses', { readsValues: true, pass: () => pass });
    const fixed = counting('fixed');
    registerBackend(makeFakeBackend('picky', { priority: 2, rules: [fixed, valueRule] }));
    registerBackend(makeFakeBackend('other', { priority: 1 }));
    const [q, k, v] = qkv();
    expect(sdpaForward(q, k, v).backend).toBe('picky');
    expect(sdpaForward(q, k, v).backend).toBe('picky');
    expect(fixed.runs).toBe(1);
    expect(valueRule.runs).toBe(2);
    pass = false;
    expect(sdpaForward(q, k, v).backend).toBe('other');
  });

  it('keeps one selection per restriction (per-call backends, sdpaKernel scopes)', () => {
    registerBackend(makeFakeBackend('a', { priority: 2 }));
    registerBackend(makeFakeBackend('b', { priority: 1 }));
    const [q, k, v] = qkv();
    expect(sdpaForward(q, k, v).backend).toBe('a');
    expect(sdpaKernel(['b'], () => sdpaForward(q, k, v).backend)).toBe('b');
    expect(sdpaForward(q, k, v).backend).toBe('a');
    expect(sdpaForward(q, k, v, { backends: ['b'] }).backend).toBe('b');
  });

  it('still refuses disposed, forged and detached tensors on a hit, with their codes', () => {
    registerBackend(makeFakeBackend('a'));
    const [q, k, v] = qkv();
    const mask = zeros([5, 5], { dtype: 'bool' });
    sdpaForward(q, k, v, { attnMask: mask });
    const q2 = zeros([1, 2, 5, 8]);
    q2.dispose();
    expect(() => sdpaForward(q2, k, v, { attnMask: mask })).toThrow(expect.objectContaining({ code: 'ATTN_DISPOSED' }));
    const m2 = zeros([5, 5], { dtype: 'bool' });
    m2.dispose();
    expect(() => sdpaForward(q, k, v, { attnMask: m2 })).toThrow(expect.objectContaining({ code: 'ATTN_DISPOSED' }));
    const forged = Object.create(Tensor.prototype) as Tensor;
    expect(() => sdpaForward(forged, k, v, { attnMask: mask })).toThrow(expect.objectContaining({ code: 'ATTN_TYPE' }));
    expect(() => sdpaForward(q, k, v, { attnMask: { ...mask } as Tensor })).toThrow(
      expect.objectContaining({ code: 'ATTN_TYPE' }),
    );
    const q3 = zeros([1, 2, 5, 8]);
    const buffer = q3.hostData().buffer as ArrayBuffer;
    structuredClone(buffer, { transfer: [buffer] });
    expect(() => sdpaForward(q3, k, v, { attnMask: mask })).toThrow(expect.objectContaining({ code: 'ATTN_STORAGE' }));
  });

  it('checks dropout seeds and offsets on every call (values, not signature)', () => {
    const b = makeFakeBackend('a');
    registerBackend(b);
    const [q, k, v] = qkv();
    sdpaForward(q, k, v, { dropoutP: 0.5, dropoutSeed: 1 });
    expect(sdpaForward(q, k, v, { dropoutP: 0.5, dropoutSeed: 2 }).rng.seed).toBe(2n);
    expect(b.calls[1]!.dropout!.seed).toBe(2n);
    expect(() => sdpaForward(q, k, v, { dropoutP: 0.5, dropoutOffset: -1 })).toThrow(
      expect.objectContaining({ code: 'ATTN_DROPOUT' }),
    );
    const fresh = [sdpaForward(q, k, v, { dropoutP: 0.5 }).rng.seed, sdpaForward(q, k, v, { dropoutP: 0.5 }).rng.seed];
    expect(fresh[0]).not.toBe(fresh[1]);
  });

  it('never caches calls whose index values are read on the host: their values are checked every time', () => {
    registerBackend(makeFakeBackend('a'));
    const q = zeros([3, 2, 8]);
    const k = zeros([5, 2, 8]);
    const i32 = (values: number[]) => tensor(values, [values.length], { dtype: 'int32' });
    const opts = { cuSeqlensQ: i32([0, 1, 3]), cuSeqlensK: i32([0, 2, 5]), maxSeqlenQ: 2, maxSeqlenK: 3 };
    sdpaVarlen(q, k, k, opts);
    sdpaVarlen(q, k, k, opts);
    expect(callCacheSize()).toBe(0);
    expect(() => sdpaVarlen(q, k, k, { ...opts, cuSeqlensK: i32([0, 4, 5]) })).toThrow(
      expect.objectContaining({ code: 'ATTN_VARLEN' }),
    );
    const [dq, dk, dv] = [zeros([2, 1, 1, 8]), zeros([2, 1, 4, 8]), zeros([2, 1, 4, 8])];
    sdpaForward(dq, dk, dv, { sequsedK: i32([4, 2]) });
    expect(callCacheSize()).toBe(0);
    expect(() => sdpaForward(dq, dk, dv, { sequsedK: i32([4, 9]) })).toThrow(
      expect.objectContaining({ code: 'ATTN_SEQUSED_K' }),
    );
  });

  it('reports the same error on a cached signature as on a fresh one (junk in an option)', () => {
    registerBackend(makeFakeBackend('a'));
    const [q, k, v] = qkv();
    const out = empty([1, 2, 5, 8]);
    registerBackend(
      makeFakeBackend('writer', { priority: 5, forward: (p) => ({ out: p.out!, logsumexp: zeros([1, 2, 5]) }) }),
    );
    sdpaForward(q, k, v, { out });
    expect(() => sdpaForward(q, k, v, { out: 'x' as never })).toThrow(expect.objectContaining({ code: 'ATTN_TYPE' }));
    expect(() => sdpaForward(q, k, v, { isCausal: 1 as never, out })).toThrow(
      expect.objectContaining({ code: 'ATTN_OPTION' }),
    );
  });
});
