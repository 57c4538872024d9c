// enableExperimentalAotritonArchs: the switch the aotritonArch rule reads through its deps.
import { AttnInputError } from '@attn/core';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultRuleDeps } from './backend.js';
import { enableExperimentalAotritonArchs } from './experimental.js';

afterEach(() => enableExperimentalAotritonArchs(false));

describe('enableExperimentalAotritonArchs', () => {
  it('is off by default; sets, returns and reads the setting', () => {
    expect(enableExperimentalAotritonArchs()).toBe(false);
    expect(enableExperimentalAotritonArchs(true)).toBe(true);
    expect(enableExperimentalAotritonArchs()).toBe(true);
    expect(enableExperimentalAotritonArchs(false)).toBe(false);
    expect(enableExperimentalAotritonArchs()).toBe(false);
  });

  it('the default rule deps read it on every call', () => {
    expect(defaultRuleDeps.experimental()).toBe(false);
    enableExperimentalAotritonArchs(true);
    expect(defaultRuleDeps.experimental()).toBe(true);
  });

  it('keeps its state on globalThis, so two copies of the package agree', () => {
    enableExperimentalAotritonArchs(true);
    const g = globalThis as unknown as Record<symbol, { on: boolean } | undefined>;
    expect(g[Symbol.for('@attn/rocm-aotriton/experimental-archs')]?.on).toBe(true);
  });

  it('rejects a value that is not a boolean, leaving the setting unchanged', () => {
    expect(() => enableExperimentalAotritonArchs('1' as never)).toThrow(AttnInputError);
    expect(() => enableExperimentalAotritonArchs(1 as never)).toThrow(/takes true or false.*got number/);
    expect(enableExperimentalAotritonArchs()).toBe(false);
  });
});
