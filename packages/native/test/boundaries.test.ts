// No addon build reaches outside its own package by a relative path: a CMakeLists.txt reaches other
// packages only through ATTN_DIR_<NAME> (the folders of its declared dependencies, which
// `attn-native build` passes), so the same build works from an installed package.
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { dependencyDirs } from '../src/source-build/dependencies.js';

const packagesDir = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const addonPackages = readdirSync(packagesDir).filter((p) => existsSync(join(packagesDir, p, 'CMakeLists.txt')));

function cmakeFiles(pkg: string): string[] {
  const root = join(packagesDir, pkg);
  const cmakeDir = join(root, 'cmake');
  const own = existsSync(cmakeDir)
    ? readdirSync(cmakeDir)
        .filter((f) => f.endsWith('.cmake'))
        .map((f) => join(cmakeDir, f))
    : [];
  return [join(root, 'CMakeLists.txt'), ...own];
}

describe('addon builds stay inside their package and its declared dependencies', () => {
  it('finds the addon packages', () => {
    expect(addonPackages).toEqual(expect.arrayContaining(['cpu', 'cuda', 'flash-cuda', 'cutlass-memeff', 'rocm']));
  });

  for (const pkg of addonPackages) {
    it(`${pkg}: no relative path leaves the package, and every ATTN_DIR_ it uses is a dependency's`, () => {
      const declared = Object.keys(dependencyDirs(join(packagesDir, pkg)));
      for (const file of cmakeFiles(pkg)) {
        const text = readFileSync(file, 'utf8')
          .split('\n')
          .filter((l) => !l.trimStart().startsWith('#'))
          .join('\n');
        // A cmake/ module may step up once, to its own package root; nothing steps up further.
        const allowed = file.includes(`${pkg}/cmake/`) ? /\$\{CMAKE_CURRENT_LIST_DIR\}\/\.\.\/(?!\.\.)/g : /$^/g;
        const escapes = text.replace(allowed, '').match(/\.\.\//g) ?? [];
        expect(escapes, `${file} has a relative path out of its folder`).toEqual([]);
        for (const used of new Set(text.match(/ATTN_DIR_[A-Z_]+/g) ?? [])) {
          expect(declared, `${file} uses ${used}`).toContain(used);
        }
      }
    });
  }
});
