import type { Availability } from '@attn/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  preferredRocmFaLibrary,
  registerRocmFaLibrary,
  resetRocmFaPreference,
  resolveRocmFaLibrary,
  RocmFaLibraryError,
  unregisterRocmFaLibrary,
  type FaLibraryDeps,
  type RocmFaLibrary,
  type RocmFaLibraryProbe,
  type VisibleArchs,
} from './fa-library.js';
import { rocmFaLibraryRule } from './fa-library-rule.js';
import { resetWarnOnce } from './warn-once.js';

const CK_ARCHS = ['gfx90a', 'gfx942', 'gfx950'];

function ckProbe(availability: Availability = { ok: true }): RocmFaLibraryProbe {
  return { library: 'ck', availability: () => availability, archs: CK_ARCHS };
}

function deps(opts: { ck?: RocmFaLibraryProbe | null; gpus?: VisibleArchs } = {}): FaLibraryDeps {
  const ck = opts.ck === undefined ? ckProbe() : opts.ck;
  return {
    probe: (lib) => (lib === 'ck' && ck ? ck : undefined),
    visibleArchs: () => opts.gpus ?? { ok: true, archs: ['gfx942'] },
  };
}

/** Prefers CK through the API where CK can run; returns the library that runs. */
function preferCk(): RocmFaLibrary {
  return preferredRocmFaLibrary('ck', deps());
}

beforeEach(() => {
  resetRocmFaPreference();
  resetWarnOnce();
});
afterEach(() => resetRocmFaPreference());

describe('resolveRocmFaLibrary (PyTorch getROCmFAPreferredBackend)', () => {
  it('defaults to AOTriton', () => {
    expect(resolveRocmFaLibrary(deps())).toMatchObject({
      requested: 'default',
      source: 'default',
      effective: 'aotriton',
      fallback: null,
    });
  });

  it('runs CK once preferredRocmFaLibrary prefers it and CK can run', () => {
    expect(preferCk()).toBe('ck');
    expect(resolveRocmFaLibrary(deps())).toMatchObject({
      requested: 'ck',
      source: 'api',
      effective: 'ck',
      fallback: null,
    });
  });

  it('falls back to AOTriton when CK is no longer loaded, not available, or a GPU is outside its list', () => {
    preferCk();
    const notLoaded = resolveRocmFaLibrary(deps({ ck: null }));
    expect(notLoaded).toMatchObject({ requested: 'ck', source: 'api', effective: 'aotriton' });
    expect(notLoaded.fallback).toMatch(/@attn\/rocm-ck is not loaded/);

    const unavailable = resolveRocmFaLibrary(deps({ ck: ckProbe({ ok: false, reason: 'CK headers missing' }) }));
    expect(unavailable.effective).toBe('aotriton');
    expect(unavailable.fallback).toMatch(/CK is unavailable: CK headers missing/);

    const mixed = resolveRocmFaLibrary(deps({ gpus: { ok: true, archs: ['gfx942', 'gfx1100'] } }));
    expect(mixed.effective).toBe('aotriton');
    expect(mixed.fallback).toMatch(/visible GPU gfx1100 is not among them/);

    const none = resolveRocmFaLibrary(deps({ gpus: { ok: true, archs: [] } }));
    expect(none.fallback).toMatch(/no AMD GPU is visible/);

    const unlisted = resolveRocmFaLibrary(deps({ gpus: { ok: false, reason: 'hipInit failed' } }));
    expect(unlisted.fallback).toMatch(/cannot list the visible GPUs: hipInit failed/);
  });

  it('accepts every CK arch', () => {
    expect(preferredRocmFaLibrary('ck', deps({ gpus: { ok: true, archs: CK_ARCHS } }))).toBe('ck');
    expect(resolveRocmFaLibrary(deps({ gpus: { ok: true, archs: CK_ARCHS } })).effective).toBe('ck');
  });
});

describe('preferredRocmFaLibrary (torch.backends.cuda.preferred_rocm_fa_library)', () => {
  it('sets the preference both ways; without an argument returns the library that runs', () => {
    expect(preferredRocmFaLibrary(undefined, deps())).toBe('aotriton');
    expect(preferredRocmFaLibrary('ck', deps())).toBe('ck');
    expect(resolveRocmFaLibrary(deps()).source).toBe('api');
    expect(preferredRocmFaLibrary(undefined, deps())).toBe('ck');
    expect(preferredRocmFaLibrary('aotriton', deps())).toBe('aotriton');
    expect(preferredRocmFaLibrary(undefined, deps())).toBe('aotriton');
    preferCk();
    expect(preferredRocmFaLibrary('default', deps())).toBe('aotriton');
    expect(resolveRocmFaLibrary(deps())).toMatchObject({ requested: 'default', source: 'api' });
  });

  it('throws instead of falling back when CK cannot be used, and keeps the old preference', () => {
    preferredRocmFaLibrary('aotriton', deps());
    expect(() => preferredRocmFaLibrary('ck', deps({ gpus: { ok: true, archs: ['gfx1100'] } }))).toThrow(
      RocmFaLibraryError,
    );
    expect(() => preferredRocmFaLibrary('ck', deps({ ck: null }))).toThrow(
      /Cannot prefer CK.*@attn\/rocm-ck is not loaded/,
    );
    expect(resolveRocmFaLibrary(deps()).requested).toBe('aotriton');
  });

  it('rejects unknown names with the list to choose from', () => {
    expect(() => preferredRocmFaLibrary('triton' as never, deps())).toThrow(/choose from 'default', 'aotriton', 'ck'/);
  });

  it('the getter warns once on a fallback', () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    preferCk();
    const d = deps({ ck: null });
    expect(preferredRocmFaLibrary(undefined, d)).toBe('aotriton');
    expect(preferredRocmFaLibrary(undefined, d)).toBe('aotriton');
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]![0])).toMatch(
      /CK was preferred.*preferredRocmFaLibrary\('ck'\).*Using AOTriton instead/,
    );
  });
});

describe('rocmFaLibraryRule: only the library that runs takes calls, and says why', () => {
  const check = (lib: 'aotriton' | 'ck', d: FaLibraryDeps) =>
    rocmFaLibraryRule(lib, () => d).check({} as never, { device: null });

  it('by default AOTriton passes and CK declines, naming the call that prefers it', () => {
    expect(check('aotriton', deps())).toBeNull();
    expect(check('ck', deps())).toMatch(
      /AOTriton is the preferred ROCm attention library \(the default\); to run CK call preferredRocmFaLibrary\('ck'\)/,
    );
  });

  it('with CK preferred, CK passes and AOTriton declines', () => {
    preferCk();
    expect(check('ck', deps())).toBeNull();
    expect(check('aotriton', deps())).toMatch(
      /CK is the preferred ROCm attention library \(preferredRocmFaLibrary\('ck'\)\); to run AOTriton call preferredRocmFaLibrary\('aotriton'\)/,
    );
  });

  it('with a CK fallback, AOTriton passes and CK says why it does not run', () => {
    vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    preferCk();
    const d = deps({ ck: ckProbe({ ok: false, reason: 'no libamdhip64' }) });
    expect(check('aotriton', d)).toBeNull();
    expect(check('ck', d)).toMatch(
      /CK was preferred \(preferredRocmFaLibrary\('ck'\)\) but AOTriton runs instead: CK is unavailable: no libamdhip64/,
    );
  });
});

describe('registry of library probes', () => {
  it('the default deps see a registered CK probe', async () => {
    const { defaultFaLibraryDeps, isCkSdpaAvailable } = await import('./fa-library.js');
    expect(isCkSdpaAvailable()).toBe(false);
    registerRocmFaLibrary(ckProbe());
    try {
      expect(defaultFaLibraryDeps().probe('ck')?.archs).toEqual(CK_ARCHS);
      expect(isCkSdpaAvailable()).toBe(true);
    } finally {
      unregisterRocmFaLibrary('ck');
    }
  });
});
