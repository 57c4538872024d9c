// The loader's order (prebuilt platform package, then a local build) and every way it can fail,
// over package folders made here: a fake addon package with an installed (or missing) prebuilt.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lazyNativeAddon, loadNativeAddon } from './addon-loader.js';

const TAG = 'linux-x64-gnu';
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface Layout {
  /** Publish a prebuilt for TAG (listed in optionalDependencies). */
  readonly listsPrebuilt?: boolean;
  /** Install that prebuilt package, with (true) or without ('empty') its binary. */
  readonly prebuilt?: true | 'empty';
  readonly localBuild?: boolean;
  readonly skipped?: string;
}

/** node_modules/@x/addon (the package) beside node_modules/@x/addon-linux-x64-gnu (its prebuilt). */
function layout(l: Layout): { root: string; prebuiltFile: string; localFile: string } {
  const top = mkdtempSync(join(tmpdir(), 'attn-native-loader-'));
  dirs.push(top);
  const root = join(top, 'node_modules', '@x', 'addon');
  mkdirSync(root, { recursive: true });
  const pkg = {
    name: '@x/addon',
    version: '1.2.3',
    attnNative: { addon: 'thing', toolchain: 'cxx', requires: 'cmake and a C++17 compiler' },
    ...(l.listsPrebuilt ? { optionalDependencies: { [`@x/addon-${TAG}`]: '1.2.3' } } : {}),
  };
  writeFileSync(join(root, 'package.json'), JSON.stringify(pkg));
  const prebuiltDir = join(top, 'node_modules', '@x', `addon-${TAG}`);
  const prebuiltFile = join(prebuiltDir, 'thing.node');
  if (l.prebuilt) {
    mkdirSync(prebuiltDir, { recursive: true });
    writeFileSync(join(prebuiltDir, 'package.json'), JSON.stringify({ name: `@x/addon-${TAG}`, version: '1.2.3' }));
    if (l.prebuilt === true) writeFileSync(prebuiltFile, 'prebuilt');
  }
  const localFile = join(root, 'build', 'Release', 'thing.node');
  if (l.localBuild) {
    mkdirSync(join(root, 'build', 'Release'), { recursive: true });
    writeFileSync(localFile, 'local');
  }
  if (l.skipped) {
    mkdirSync(join(root, 'build'), { recursive: true });
    writeFileSync(join(root, 'build', 'SKIPPED'), `${l.skipped}\n`);
  }
  return { root, prebuiltFile, localFile };
}

/** A require that "loads" a file by what it holds: a module with `hello`, or a load error. */
function fakeRequire(modules: Record<string, unknown>): NodeJS.Require {
  const real = createRequire(import.meta.url);
  return Object.assign(
    (path: string) => {
      if (path in modules) {
        const m = modules[path];
        if (m instanceof Error) throw m;
        return m;
      }
      throw new Error(`unexpected load of ${path}`);
    },
    { resolve: real.resolve },
  ) as unknown as NodeJS.Require;
}

const working = { hello: () => 'hi' };

describe('loadNativeAddon', () => {
  it('takes the prebuilt platform package first', () => {
    const { root, prebuiltFile, localFile } = layout({ listsPrebuilt: true, prebuilt: true, localBuild: true });
    const load = loadNativeAddon({
      packageRoot: root,
      platform: TAG,
      requiredFunctions: ['hello'],
      requireFn: fakeRequire({ [prebuiltFile]: working, [localFile]: working }),
    });
    expect(load).toMatchObject({ ok: true, path: prebuiltFile, origin: 'prebuilt' });
  });

  it('falls back to a local build when no prebuilt is installed, or the installed one fails to load', () => {
    const a = layout({ listsPrebuilt: true, localBuild: true });
    expect(
      loadNativeAddon({ packageRoot: a.root, platform: TAG, requireFn: fakeRequire({ [a.localFile]: working }) }),
    ).toMatchObject({
      ok: true,
      path: a.localFile,
      origin: 'local build',
    });
    const b = layout({ listsPrebuilt: true, prebuilt: true, localBuild: true });
    const broken = new Error("/lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.38' not found\nmore");
    const load = loadNativeAddon({
      packageRoot: b.root,
      platform: TAG,
      requireFn: fakeRequire({ [b.prebuiltFile]: broken, [b.localFile]: working }),
    });
    expect(load).toMatchObject({ ok: true, origin: 'local build' });
  });

  it('says what it looked for and the npm command that installs the prebuilt', () => {
    const { root, localFile } = layout({ listsPrebuilt: true });
    const load = loadNativeAddon({ packageRoot: root, platform: TAG, requireFn: fakeRequire({}) });
    expect(load.ok).toBe(false);
    if (load.ok) return;
    expect(load.looked).toEqual([`@x/addon-${TAG} is not installed`, `${localFile} was not built`]);
    expect(load.reason).toBe(
      `no native addon: @x/addon-${TAG} is not installed; ${localFile} was not built. Fix: install the prebuilt binary with ` +
        `\`npm install @x/addon-${TAG}@1.2.3\`, or build from source with \`npx @attn/native build @x/addon\` (needs cmake and a C++17 compiler)`,
    );
    expect(load.reason).not.toMatch(/pnpm|^unavailable/);
  });

  it('sends a platform without a prebuilt to the source build, with the reason the last build skipped', () => {
    const { root } = layout({ skipped: 'cmake was not found; install cmake >= 3.24' });
    const load = loadNativeAddon({ packageRoot: root, platform: 'linux-arm64-musl', requireFn: fakeRequire({}) });
    expect(load.ok).toBe(false);
    if (load.ok) return;
    expect(load.reason).toContain('was not built (cmake was not found; install cmake >= 3.24)');
    expect(load.reason).toContain(
      'Fix: no prebuilt binary is published for linux-arm64-musl; build from source with `npx @attn/native build @x/addon` (needs cmake and a C++17 compiler)',
    );
  });

  it('reports a prebuilt package installed without its binary, a load error (first line), and a stale build', () => {
    const { root, localFile } = layout({ listsPrebuilt: true, prebuilt: 'empty', localBuild: true });
    const stale = loadNativeAddon({
      packageRoot: root,
      platform: TAG,
      requiredFunctions: ['hello', 'bye'],
      requireFn: fakeRequire({ [localFile]: working }),
    });
    expect(!stale.ok && stale.looked).toEqual([
      `@x/addon-${TAG} is installed without thing.node`,
      `${localFile} is from another version (it lacks bye)`,
    ]);
    const failing = loadNativeAddon({
      packageRoot: root,
      platform: TAG,
      requireFn: fakeRequire({ [localFile]: new Error('invalid ELF header\nstack') }),
    });
    expect(!failing.ok && failing.looked[1]).toBe(`${localFile} failed to load (invalid ELF header)`);
  });

  it("applies the package's own version check, and a check that throws is a reason too", () => {
    const { root, localFile } = layout({ localBuild: true });
    const requireFn = fakeRequire({ [localFile]: working });
    const old = loadNativeAddon({
      packageRoot: root,
      platform: TAG,
      requireFn,
      validate: () => 'built against AOTriton 0.9',
    });
    expect(!old.ok && old.looked[1]).toBe(`${localFile} is unusable: built against AOTriton 0.9`);
    const throwing = loadNativeAddon({
      packageRoot: root,
      platform: TAG,
      requireFn,
      validate: () => {
        throw new Error('boom');
      },
    });
    expect(!throwing.ok && throwing.looked[1]).toBe(`${localFile} is unusable: its version check threw: boom`);
  });

  it('never throws, even for a folder that is no addon package', () => {
    const dir = mkdtempSync(join(tmpdir(), 'attn-native-empty-'));
    dirs.push(dir);
    const load = loadNativeAddon({ packageRoot: dir });
    expect(load.ok).toBe(false);
    expect(!load.ok && load.reason).toMatch(/^cannot read the package's native config: /);
  });

  it('loads a real addon from a real prebuilt package layout', () => {
    // Node's own require over a JS module named .node is refused: a real load error, not a fake one.
    const { root, prebuiltFile } = layout({ listsPrebuilt: true, prebuilt: true });
    const load = loadNativeAddon({ packageRoot: root, platform: TAG });
    expect(!load.ok && load.looked[0]).toMatch(
      new RegExp(`^${prebuiltFile.replaceAll('/', '\\/')} failed to load \\(`),
    );
  });
});

describe('lazyNativeAddon', () => {
  it('loads once and remembers the outcome', () => {
    const { root, localFile } = layout({ localBuild: true });
    let loads = 0;
    const requireFn = fakeRequire({});
    const counting = Object.assign(
      (p: string) => {
        loads++;
        return p === localFile ? working : requireFn(p);
      },
      { resolve: requireFn.resolve },
    ) as unknown as NodeJS.Require;
    const get = lazyNativeAddon({ packageRoot: root, platform: TAG, requireFn: counting });
    expect(get()).toBe(get());
    expect(loads).toBe(1);
  });
});
