// The kernel option: validation (unknown names are typed errors listing the valid ones), the backend
// it implies, the kernel's own check as a reason in the report (no silent fallback), the call cache's
// key, and what explain says.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { KernelChoice } from './backend.js';
import { callCacheSize, clearCallCache } from './call-cache.js';
import { AttnInputError } from './errors.js';
import { zeros } from './factory.js';
import { registerBackend } from './registry.js';
import { formatReport, NoBackendError } from './report.js';
import { explain, sdpaForward } from './sdpa.js';
import { isolateRegistry, makeFakeBackend } from './testing.js';

const q = (D = 8) => zeros([1, 2, 3, D]);

const wide: KernelChoice = {
  name: 'wide',
  description: 'runs D <= 8 only',
  check: (p) => (p.headDim <= 8 ? null : `head dim ${p.headDim} > 8`),
};
const narrow: KernelChoice = { name: 'narrow', description: 'runs everything' };

let restore: () => void;
beforeEach(() => {
  restore = isolateRegistry({ keepDeviceRuntimes: false });
  clearCallCache();
});
afterEach(() => restore());

function setup() {
  const fast = makeFakeBackend('fast', { priority: 10, kernels: [wide, narrow] });
  const slow = makeFakeBackend('slow', { priority: 1 });
  const other = makeFakeBackend('other', {
    priority: 5,
    kernels: [{ name: 'wide', description: 'the same name elsewhere' }],
  });
  registerBackend(fast);
  registerBackend(slow);
  return { fast, slow, other };
}

describe('kernel option', () => {
  it('rejects an unknown name with a typed error that lists every backend kernel', () => {
    setup();
    const call = () => sdpaForward(q(), q(), q(), { kernel: 'sm42' });
    expect(call).toThrow(AttnInputError);
    try {
      call();
    } catch (e) {
      expect((e as AttnInputError).code).toBe('ATTN_UNKNOWN_KERNEL');
      expect((e as Error).message).toContain('fast: wide, narrow');
    }
    expect(() => sdpaForward(q(), q(), q(), { kernel: '' })).toThrow(/kernel must be a kernel name/);
    expect(() => sdpaForward(q(), q(), q(), { kernel: 3 as unknown as string })).toThrow(AttnInputError);
  });

  it('implies the backend that declares it, ahead of higher priorities elsewhere', () => {
    const { fast, slow } = setup();
    expect(sdpaForward(q(), q(), q()).backend).toBe('fast');
    expect(sdpaForward(q(), q(), q(), { kernel: 'narrow' }).backend).toBe('fast');
    expect(fast.calls.at(-1)!.kernel).toBe('narrow');
    expect(fast.calls[0]!.kernel).toBeNull();
    expect(slow.calls).toHaveLength(0);
  });

  it('must agree with backends: a name none of them declares is refused', () => {
    setup();
    expect(() => sdpaForward(q(), q(), q(), { kernel: 'narrow', backends: ['slow'] })).toThrow(
      /No kernel named "narrow" among backends slow/,
    );
    expect(sdpaForward(q(), q(), q(), { kernel: 'narrow', backends: ['slow', 'fast'] }).backend).toBe('fast');
  });

  it('a kernel that cannot run the call declines it with its reason; nothing else runs it', () => {
    const { slow } = setup();
    const call = () => sdpaForward(q(16), q(16), q(16), { kernel: 'wide' });
    expect(call).toThrow(NoBackendError);
    try {
      call();
    } catch (e) {
      const r = (e as NoBackendError).report;
      expect(r.kernel).toBe('wide');
      expect(r.restrictedTo).toEqual(['fast']);
      expect(r.candidates[0]!.reasons).toEqual([
        { rule: 'kernel', message: expect.stringContaining('head dim 16 > 8') },
      ]);
      expect(r.candidates[0]!.reasons[0]!.message).toContain('its kernels: wide, narrow');
    }
    expect(slow.calls).toHaveLength(0);
  });

  it('two backends declaring one name: both are candidates, in priority order', () => {
    const { other } = setup();
    registerBackend(other);
    const r = explain(q(16), q(16), q(16), { kernel: 'wide' });
    expect(r.restrictedTo).toEqual(['fast', 'other']);
    expect(r.selected).toBe('other');
  });

  it('explain says which kernel was asked for', () => {
    setup();
    const r = explain(q(), q(), q(), { kernel: 'narrow' });
    expect(r).toMatchObject({ kernel: 'narrow', selected: 'fast', restrictedTo: ['fast'] });
    expect(r.call).toContain('kernel narrow');
    expect(formatReport(r)).toContain('restricted to (kernel option "narrow"): fast');
    expect(explain(q(), q(), q()).kernel).toBeNull();
  });

  it('the call cache keeps one entry per kernel: a cached call never runs another kernel', () => {
    const { fast } = setup();
    sdpaForward(q(), q(), q(), { kernel: 'wide' });
    sdpaForward(q(), q(), q(), { kernel: 'wide' });
    expect(callCacheSize()).toBe(1);
    sdpaForward(q(), q(), q(), { kernel: 'narrow' });
    sdpaForward(q(), q(), q());
    expect(callCacheSize()).toBe(3);
    expect(fast.calls.map((p) => p.kernel)).toEqual(['wide', 'wide', 'narrow', null]);
    // The cached signature of 'wide' still re-checks nothing it need not, and still says 'wide'.
    sdpaForward(q(), q(), q(), { kernel: 'wide' });
    expect(fast.calls.at(-1)!.kernel).toBe('wide');
  });

  it('registration refuses malformed or repeated kernel names', () => {
    expect(() => registerBackend(makeFakeBackend('bad', { kernels: [{ name: 'Sm90', description: '' }] }))).toThrow(
      /every kernel needs a name/,
    );
    expect(() => registerBackend(makeFakeBackend('twice', { kernels: [narrow, narrow] }))).toThrow(/declared twice/);
  });
});
