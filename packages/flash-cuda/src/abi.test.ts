// The TS and C++ sides of the argument layout, and the generated instantiation list, cannot drift.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NUM_NAMES, PTR_NAMES } from './abi.js';
import { PACKAGE_ROOT } from './native.js';

/** Enum members of `enum <name> : int { kA, kB, ..., kCount }` in abi.h, as 'a', 'b', ... */
function enumNames(header: string, name: string): string[] {
  const m = new RegExp(`enum ${name} : int \\{([^}]*)\\}`).exec(header);
  if (!m) throw new Error(`enum ${name} not found in abi.h`);
  return m[1]!
    .split(',')
    .map((s) => s.replace(/\/\/.*$/gm, '').trim())
    .filter((s) => s.length > 0 && s !== `k${name}Count`)
    .map((s) => s.slice(1, 2).toLowerCase() + s.slice(2));
}

describe('abi', () => {
  const header = readFileSync(join(PACKAGE_ROOT, 'native', 'src', 'abi.h'), 'utf8');
  it('lists the same pointer slots as native/src/abi.h', () => {
    expect(enumNames(header, 'Ptr')).toEqual([...PTR_NAMES]);
  });
  it('lists the same number slots as native/src/abi.h', () => {
    expect(enumNames(header, 'Num')).toEqual([...NUM_NAMES]);
  });
});

describe('generated instantiations', () => {
  it('are up to date with scripts/generate-instantiations.mjs', () => {
    const r = spawnSync(process.execPath, [join(PACKAGE_ROOT, 'scripts', 'generate-instantiations.mjs'), '--check'], {
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});
