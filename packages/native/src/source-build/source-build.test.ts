// The source build end to end, as a user's `npx @attn/native build <package>` runs it: a minimal
// addon package laid out as an installed one (node_modules beside it, no monorepo), built with
// cmake-js through AttnNodeAddon.cmake, then found by the loader as a local build.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadNativeAddon } from '../addon-loader.js';
import { buildAddon } from './run-build.js';
import { resolvePackage } from './resolve-package.js';
import { findToolchain } from './toolchain.js';

const here = dirname(fileURLToPath(import.meta.url));
const nativeRoot = join(here, '..', '..');
const toolchain = findToolchain('cxx');
const top = mkdtempSync(join(tmpdir(), 'attn-source-build-'));
afterAll(() => rmSync(top, { recursive: true, force: true }));

/** <top>/node_modules/@attn-fixture/hello, with @attn/native and the build tools installed beside it. */
function install(): string {
  const modules = join(top, 'node_modules');
  const root = join(modules, '@attn-fixture', 'hello');
  mkdirSync(dirname(root), { recursive: true });
  cpSync(join(nativeRoot, 'test', 'fixture-addon'), root, { recursive: true });
  mkdirSync(join(modules, '@attn'), { recursive: true });
  symlinkSync(nativeRoot, join(modules, '@attn', 'native'));
  // The build tools as a user's cache would hold them (the monorepo's copies: no network in tests).
  const req = createRequire(join(nativeRoot, '..', 'cpu', 'package.json'));
  for (const tool of ['cmake-js', 'node-addon-api']) {
    mkdirSync(join(root, 'node_modules'), { recursive: true });
    symlinkSync(realpathSync(dirname(req.resolve(`${tool}/package.json`))), join(root, 'node_modules', tool));
  }
  return root;
}

describe.skipIf(!toolchain.ok)('a source build outside the monorepo', () => {
  it('builds with the shared header, reports size and time, and the loader finds it as a local build', () => {
    const root = install();
    expect(realpathSync(resolvePackage('@attn-fixture/hello', top))).toBe(realpathSync(root));
    const lines: string[] = [];
    const result = buildAddon({ packageRoot: root, jobs: 2, log: (l) => lines.push(l) });
    expect(result.status).toBe('built');
    if (result.status !== 'built') return;
    expect(result.copiedTo).toBeNull(); // an installed package has no npm/ folder
    expect(lines.join('\n')).toMatch(/building hello\.node \(release, 2 jobs\)/);
    expect(lines.join('\n')).toMatch(/built .*hello\.node \(\d+\.\d MB\) in \d+ s/);
    const load = loadNativeAddon<{ philox(lo: number, hi: number, c: number): number }>({
      packageRoot: root,
      requiredFunctions: ['philox'],
    });
    expect(load.ok && load.origin).toBe('local build');
    // Random123's known answer for Philox4x32-10 with zero key and counter: first word 0x6627e8d5.
    expect(load.ok && load.addon.philox(0, 0, 0)).toBe(0x6627e8d5);
    // The configuration it was built with is recorded, so a changed one starts afresh.
    expect(JSON.parse(readFileSync(join(root, 'build', 'attn-config.json'), 'utf8')).defines.ATTN_DIR_NATIVE).toBe(
      nativeRoot,
    );
  }, 180_000);

  it('fails with the reason when the compiler is missing, or records it with skipWithoutToolchain', () => {
    const root = join(top, 'node_modules', '@attn-fixture', 'hello');
    const env = { ...process.env, PATH: '/nonexistent' };
    expect(() => buildAddon({ packageRoot: root, env, log: () => {} })).toThrow(
      /cannot build from source: cmake was not found/,
    );
    const skipped = buildAddon({ packageRoot: root, env, log: () => {}, skipWithoutToolchain: true });
    expect(skipped).toEqual({ status: 'skipped', reason: expect.stringMatching(/^cmake was not found/) });
    expect(readFileSync(join(root, 'build', 'SKIPPED'), 'utf8')).toMatch(/cmake was not found/);
  });
});

describe('resolvePackage', () => {
  it('says how to install a package that is not there', () => {
    // (A name no registry has: pnpm's NODE_PATH can make real @attn packages resolvable anywhere.)
    expect(() => resolvePackage('no-such-backend', top)).toThrow(
      /@attn\/no-such-backend is not installed here .*`npm install @attn\/no-such-backend`/,
    );
  });
});
