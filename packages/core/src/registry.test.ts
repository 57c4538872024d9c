import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Backend } from './backend.js';
import { getDeviceRuntime, listDeviceRuntimes, registerDeviceRuntime } from './device-registry.js';
import { AttnInputError } from './errors.js';
import { makeFakeDeviceRuntime } from './fake-device.js';
import { getBackend, listBackends, registerBackend, setBackendPriority, unregisterBackend } from './registry.js';
import { REGISTRY_SYMBOL, type RegistryState } from './registry-state.js';
import { isolateRegistry, makeFakeBackend, withIsolatedRegistry } from './testing.js';

let restore: () => void;
beforeEach(() => {
  restore = isolateRegistry({ keepDeviceRuntimes: false });
});
afterEach(() => restore());

describe('backend registry', () => {
  it('lists by priority (desc), ties by registration order, per device type', () => {
    registerBackend(makeFakeBackend('low', { priority: 1 }));
    registerBackend(makeFakeBackend('high', { priority: 10 }));
    registerBackend(makeFakeBackend('tie', { priority: 1 }));
    registerBackend(makeFakeBackend('gpu', { priority: 100, deviceType: 'cuda' }));
    expect(listBackends('cpu').map((e) => e.name)).toEqual(['high', 'low', 'tie']);
    expect(listBackends().map((e) => e.name)).toEqual(['gpu', 'high', 'low', 'tie']);
    expect(listBackends('cuda')[0]).toMatchObject({ name: 'gpu', deviceType: 'cuda', priority: 100 });
    expect(() => listBackends('tpu' as never)).toThrow(AttnInputError);
  });

  it('takes a priority at registration and from setBackendPriority', () => {
    registerBackend(makeFakeBackend('a', { priority: 1 }), { priority: 5 });
    registerBackend(makeFakeBackend('b', { priority: 3 }));
    expect(listBackends().map((e) => e.name)).toEqual(['a', 'b']);
    setBackendPriority('b', 9);
    expect(listBackends().map((e) => [e.name, e.priority])).toEqual([
      ['b', 9],
      ['a', 5],
    ]);
    expect(() => setBackendPriority('nope', 1)).toThrow(expect.objectContaining({ code: 'ATTN_UNKNOWN_BACKEND' }));
    expect(() => setBackendPriority('a', NaN)).toThrow(expect.objectContaining({ code: 'ATTN_PRIORITY' }));
  });

  it('ignores registering the same object twice', () => {
    const warn = vi.spyOn(process, 'emitWarning');
    const b = makeFakeBackend('same');
    registerBackend(b);
    registerBackend(b);
    expect(listBackends()).toHaveLength(1);
    expect(warn).not.toHaveBeenCalled();
  });

  it('replaces another object of the same name with a warning, keeping a user-set priority', () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const first = makeFakeBackend('dup', { priority: 1 });
    const second = makeFakeBackend('dup', { priority: 2 });
    registerBackend(first);
    setBackendPriority('dup', 50);
    registerBackend(second);
    expect(getBackend('dup')).toBe(second);
    expect(listBackends()[0]!.priority).toBe(50);
    expect(warn).toHaveBeenCalledWith(
      expect.stringContaining("'dup'"),
      expect.objectContaining({ code: 'ATTN_BACKEND_REPLACED' }),
    );
  });

  it('unregisters', () => {
    registerBackend(makeFakeBackend('gone'));
    expect(unregisterBackend('gone')).toBe(true);
    expect(unregisterBackend('gone')).toBe(false);
    expect(getBackend('gone')).toBeUndefined();
  });

  it('rejects malformed backends', () => {
    const good = makeFakeBackend('ok');
    const bad = (patch: Partial<Record<keyof Backend, unknown>>): Backend => ({ ...good, ...patch }) as Backend;
    for (const b of [
      bad({ name: 'Bad Name' }),
      bad({ deviceType: 'tpu' }),
      bad({ defaultPriority: Infinity }),
      bad({ forward: undefined }),
      bad({ availability: 1 }),
      bad({ rules: [{ name: 'x' }] }),
      null as unknown as Backend,
    ]) {
      expect(() => registerBackend(b)).toThrow(expect.objectContaining({ code: 'ATTN_BACKEND' }));
    }
  });

  it('is shared across copies of core through the global symbol', () => {
    registerBackend(makeFakeBackend('shared', { priority: 3 }));
    // What a second copy of core sees: the same object under Symbol.for, not a module variable.
    const state = (globalThis as unknown as Record<symbol, RegistryState<Backend>>)[Symbol.for('@attn/core/registry')]!;
    expect(REGISTRY_SYMBOL).toBe(Symbol.for('@attn/core/registry'));
    expect(state.backends.get('shared')?.backend.name).toBe('shared');
    // A registration made by "the other copy" (directly on the shared state) is visible here.
    const other = makeFakeBackend('from-other-copy', { priority: 7 });
    state.backends.set(other.name, { backend: other, priority: 7, userPriority: false, seq: state.seq++ });
    expect(listBackends().map((e) => e.name)).toEqual(['from-other-copy', 'shared']);
  });

  it('refuses a registry left by an incompatible copy', () => {
    const g = globalThis as unknown as Record<symbol, unknown>;
    const saved = g[REGISTRY_SYMBOL];
    g[REGISTRY_SYMBOL] = { version: 999 };
    try {
      expect(() => listBackends()).toThrow(expect.objectContaining({ code: 'ATTN_CORE_VERSION' }));
    } finally {
      g[REGISTRY_SYMBOL] = saved;
    }
  });

  it('isolation restores the registry also when fn throws', () => {
    registerBackend(makeFakeBackend('outer'));
    expect(() =>
      withIsolatedRegistry(() => {
        expect(listBackends()).toHaveLength(0);
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(getBackend('outer')).toBeDefined();
  });
});

describe('device runtime registry', () => {
  it('registers, replaces with a warning, and lists', () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const a = makeFakeDeviceRuntime();
    const b = makeFakeDeviceRuntime();
    registerDeviceRuntime(a);
    registerDeviceRuntime(a);
    expect(warn).not.toHaveBeenCalled();
    registerDeviceRuntime(b);
    expect(getDeviceRuntime('cuda')).toBe(b);
    expect(warn).toHaveBeenCalledWith(expect.any(String), expect.objectContaining({ code: 'ATTN_RUNTIME_REPLACED' }));
    expect(listDeviceRuntimes()).toEqual([b]);
    expect(getDeviceRuntime('cpu')).toBeUndefined();
  });

  it('rejects malformed runtimes', () => {
    const r = makeFakeDeviceRuntime();
    expect(() => registerDeviceRuntime({ ...r, type: 'cpu' } as never)).toThrow(
      expect.objectContaining({ code: 'ATTN_RUNTIME' }),
    );
    expect(() => registerDeviceRuntime({ ...r, allocate: undefined } as never)).toThrow(/allocate/);
  });
});
