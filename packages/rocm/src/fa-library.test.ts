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
  type RocmFaLibraryProbe,
  type VisibleArchs,
} from './fa-library.js';
import { rocmFaLibraryRule } from './fa-library-rule.js';
import { resetWarnOnce } from './warn-once.js';

const CK_ARCHS = ['gfx90a', 'gfx942', 'gfx950'];

function ckProbe(availability: Availability = { ok: true }): RocmFaLibraryProbe {
  return { library: 'ck', availability: () => availability, archs: CK_ARCHS };
}

function deps(opts: { env?: Record<string, string>; ck?: RocmFaLibraryProbe | null; gpus?: VisibleArchs } = {}): FaLibraryDeps {
  const ck = opts.ck === undefined ? ckProbe() : opts.ck;
  return {
    env: opts.env ?? {},
    probe: (lib) => (lib === 'ck' && ck ? ck : undefined),
    visibleArchs: () => opts.gpus ?? { ok: true, archs: ['gfx942'] },
  };
}

const PREFER_CK = { ATTN_ROCM_FA_PREFER_CK: '1' };

beforeEach(() => {
  resetRocmFaPreference();
  resetWarnOnce();
});
afterEach(() => resetRocmFaPreference());

describe('resolveRocmFaLibrary (PyTorch getROCmFAPreferredBackend)', () => {
  it('defaults to AOTriton', () => {
    expect(resolveRocmFaLibrary(deps())).toMatchObject({ requested: 'default', source: 'default', effective: 'aotriton', fallback: null });
  });

  it('prefers CK when ATTN_ROCM_FA_PREFER_CK is truthy and CK can run', () => {
    for (const v of ['1', 'ON', 'yes', 'True', 'y']) {
      expect(resolveRocmFaLibrary(deps({ env: { ATTN_ROCM_FA_PREFER_CK: v } })).effective).toBe('ck');
    }
  });

  it('ignores falsy env values and reports unreadable ones', () => {
    for (const v of ['0', 'off', 'no', 'false', '']) {
      expect(resolveRocmFaLibrary(deps({ env: { ATTN_ROCM_FA_PREFER_CK: v } })).effective).toBe('aotriton');
    }
    const bad = resolveRocmFaLibrary(deps({ env: { ATTN_ROCM_FA_PREFER_CK: 'maybe' } }));
    expect(bad.effective).toBe('aotriton');
    expect(bad.envError).toMatch(/ATTN_ROCM_FA_PREFER_CK="maybe" is not a switch value.*set it to 1/);
  });

  it('falls back to AOTriton when CK is not loaded, not available, or a GPU is outside its list', () => {
    const notLoaded = resolveRocmFaLibrary(deps({ env: PREFER_CK, ck: null }));
    expect(notLoaded).toMatchObject({ requested: 'ck', source: 'env', effective: 'aotriton' });
    expect(notLoaded.fallback).toMatch(/@attn\/rocm-ck is not loaded/);

    const unavailable = resolveRocmFaLibrary(deps({ env: PREFER_CK, ck: ckProbe({ ok: false, reason: 'CK headers missing' }) }));
    expect(unavailable.effective).toBe('aotriton');
    expect(unavailable.fallback).toMatch(/CK is unavailable: CK headers missing/);

    const mixed = resolveRocmFaLibrary(deps({ env: PREFER_CK, gpus: { ok: true, archs: ['gfx942', 'gfx1100'] } }));
    expect(mixed.effective).toBe('aotriton');
    expect(mixed.fallback).toMatch(/visible GPU gfx1100 is not among them/);

    const none = resolveRocmFaLibrary(deps({ env: PREFER_CK, gpus: { ok: true, archs: [] } }));
    expect(none.fallback).toMatch(/no AMD GPU is visible/);
  });

  it('accepts every CK arch', () => {
    expect(resolveRocmFaLibrary(deps({ env: PREFER_CK, gpus: { ok: true, archs: CK_ARCHS } })).effective).toBe('ck');
  });
});

describe('preferredRocmFaLibrary (torch.backends.cuda.preferred_rocm_fa_library)', () => {
  it('the API overrides the environment both ways', () => {
    expect(preferredRocmFaLibrary('ck', deps())).toBe('ck');
    expect(resolveRocmFaLibrary(deps()).source).toBe('api');
    expect(preferredRocmFaLibrary('aotriton', deps({ env: PREFER_CK }))).toBe('aotriton');
    expect(preferredRocmFaLibrary(undefined, deps({ env: PREFER_CK }))).toBe('aotriton');
    expect(preferredRocmFaLibrary('default', deps({ env: PREFER_CK }))).toBe('aotriton');
  });

  it('throws instead of falling back when CK cannot be used, and keeps the old preference', () => {
    preferredRocmFaLibrary('aotriton', deps());
    expect(() => preferredRocmFaLibrary('ck', deps({ gpus: { ok: true, archs: ['gfx1100'] } }))).toThrow(RocmFaLibraryError);
    expect(() => preferredRocmFaLibrary('ck', deps({ ck: null }))).toThrow(/Cannot prefer CK.*@attn\/rocm-ck is not loaded/);
    expect(resolveRocmFaLibrary(deps()).requested).toBe('aotriton');
  });

  it('rejects unknown names with the list to choose from', () => {
    expect(() => preferredRocmFaLibrary('triton' as never, deps())).toThrow(/choose from 'default', 'aotriton', 'ck'/);
  });

  it('the getter warns once on a fallback', () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const d = deps({ env: PREFER_CK, ck: null });
    expect(preferredRocmFaLibrary(undefined, d)).toBe('aotriton');
    expect(preferredRocmFaLibrary(undefined, d)).toBe('aotriton');
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]![0])).toMatch(/CK was preferred.*ATTN_ROCM_FA_PREFER_CK=1.*Using AOTriton instead/);
  });
});

describe('rocmFaLibraryRule: only the library that runs takes calls, and says why', () => {
  const check = (lib: 'aotriton' | 'ck', d: FaLibraryDeps) => rocmFaLibraryRule(lib, () => d).check({} as never, { device: null });

  it('by default AOTriton passes and CK declines, naming the switch', () => {
    expect(check('aotriton', deps())).toBeNull();
    expect(check('ck', deps())).toMatch(/AOTriton is the preferred ROCm attention library \(the default\).*ATTN_ROCM_FA_PREFER_CK=1.*preferredRocmFaLibrary\('ck'\)/);
  });

  it('with CK preferred, CK passes and AOTriton declines', () => {
    expect(check('ck', deps({ env: PREFER_CK }))).toBeNull();
    expect(check('aotriton', deps({ env: PREFER_CK }))).toMatch(/CK is the preferred ROCm attention library \(ATTN_ROCM_FA_PREFER_CK=1\)/);
  });

  it('with a CK fallback, AOTriton passes and CK says why it does not run', () => {
    vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const d = deps({ env: PREFER_CK, ck: ckProbe({ ok: false, reason: 'no libamdhip64' }) });
    expect(check('aotriton', d)).toBeNull();
    expect(check('ck', d)).toMatch(/CK was preferred \(ATTN_ROCM_FA_PREFER_CK=1\) but AOTriton runs instead: CK is unavailable: no libamdhip64/);
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
