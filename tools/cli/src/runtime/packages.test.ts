import { describe, expect, it } from 'vitest';
import { importAll, isMissingPackage, KNOWN_PACKAGES, loadError } from './packages.js';

function notFound(name: string): Error {
  return Object.assign(new Error(`Cannot find package '${name}' imported from /x/y.js`), {
    code: 'ERR_MODULE_NOT_FOUND',
  });
}

describe('backend packages', () => {
  it('tells a missing package from a missing dependency of it', () => {
    expect(isMissingPackage(notFound('@attn/rocm'), '@attn/rocm')).toBe(true);
    expect(isMissingPackage(notFound('node-addon-api'), '@attn/rocm')).toBe(false);
    expect(isMissingPackage(new Error('Failed to load url @attn/rocm (resolved id: @attn/rocm)'), '@attn/rocm')).toBe(
      true,
    );
    expect(isMissingPackage(new Error('boom'), '@attn/rocm')).toBe(false);
  });

  it('says when a linked package has not been built', () => {
    const err = Object.assign(
      new Error("Cannot find module '/w/packages/flash-cuda/dist/index.js' imported from /w/tools/cli/dist/chunk.js"),
      { code: 'ERR_MODULE_NOT_FOUND' },
    );
    expect(isMissingPackage(err, '@attn/flash-cuda')).toBe(false);
    expect(loadError(err, '@attn/flash-cuda')).toBe(
      'not built: /w/packages/flash-cuda/dist/index.js is missing; run `pnpm exec nx run @attn/flash-cuda:build` (or `pnpm build`).',
    );
    expect(loadError(new Error('boom'), '@attn/flash-cuda')).toBe('boom');
  });

  it('reports each package as loaded, not installed or failed, in order', async () => {
    const statuses = await importAll(async (name) => {
      if (name === '@attn/cpu') return { cpuMathBackend: {} };
      if (name === '@attn/cuda') throw new Error('libcudart.so.13: cannot open shared object file');
      throw notFound(name);
    });
    expect(statuses.map((s) => s.name)).toEqual(KNOWN_PACKAGES.map((p) => p.name));
    expect(statuses[0]).toMatchObject({ name: '@attn/cpu', state: 'loaded' });
    expect(statuses[1]).toMatchObject({
      name: '@attn/cuda',
      state: 'failed',
      error: expect.stringContaining('libcudart'),
    });
    expect(statuses.slice(2).every((s) => s.state === 'not installed')).toBe(true);
  });
});
