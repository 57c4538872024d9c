// memeff's addon comes through @attn/native's loader (whose own tests cover every way an addon can be
// missing); here: that this package's config is what the loader needs, without loading native code
// unless it is there.
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT, addonState } from './native.js';

describe('the addon', () => {
  it('is looked for from the package root', () => {
    expect(PACKAGE_ROOT).toMatch(/cutlass-memeff$/);
  });

  it('loads, or its reason names what was looked for and the npm command that fixes it', () => {
    const load = addonState();
    if (load.ok) {
      expect(load.path).toMatch(/cutlass_memeff\.node$/);
      return;
    }
    expect(load.reason).toMatch(/cutlass-memeff-linux-x64-gnu|cutlass_memeff\.node/);
    expect(load.reason).toMatch(/npm install|npx @attn\/native build @attn\/cutlass-memeff/);
    expect(load.reason).not.toMatch(/pnpm|^unavailable/);
  });
});
