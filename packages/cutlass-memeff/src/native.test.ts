// memeff's addon comes through @attn/native's loader (whose own tests cover every way an addon can be
// missing); here: that this package's config is what the loader needs, without loading native code
// unless it is there. Where the addon is built (no GPU needed), its argument boundary: a missing or
// mistyped field of the argument object is ATTN_MEMEFF_ARGS naming the field, before any CUDA call.
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

describe('the addon boundary', () => {
  const load = addonState();
  const forward = load.ok ? (load.addon as unknown as { forward(a: unknown): unknown }).forward : null;
  const failure = (a: unknown): { code?: string; message?: string } => {
    try {
      forward!(a);
    } catch (e) {
      return e as { code?: string; message?: string };
    }
    return {};
  };
  const tensor = { ptr: 0n, strides: [0, 0, 0] };

  it.skipIf(!load.ok).each([
    ['no fields', {}, /missing argument 'q'/],
    ['a pointer as a number', { q: { ptr: 1, strides: [0, 0, 0] } }, /'ptr' must be a bigint/],
    ['two strides', { q: { ptr: 0n, strides: [0, 0] } }, /'strides' must be an array of 3 integers/],
    ['a fractional stride', { q: { ptr: 0n, strides: [0, 0.5, 0] } }, /'strides' must be an array of 3 integers/],
    [
      'batch as a string',
      { q: tensor, k: tensor, v: tensor, out: tensor, lse: 0n, batch: '1' },
      /'batch' must be a number/,
    ],
    [
      'a fractional batch',
      { q: tensor, k: tensor, v: tensor, out: tensor, lse: 0n, batch: 1.5 },
      /'batch' must be an integer/,
    ],
  ])('refuses %s', (_name, args, message) => {
    const e = failure(args);
    expect(e.code).toBe('ATTN_MEMEFF_ARGS');
    expect(e.message).toMatch(/^memeff-cuda: /);
    expect(e.message).toMatch(message);
  });
});
