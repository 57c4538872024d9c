// The TS and C++ sides of the argument layout, and the generated instantiation list, cannot drift.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ALLOC, NUM_NAMES, PTR_NAMES } from './abi.js';
import { BWD_NUM_NAMES, BWD_PTR_NAMES } from './bwd-abi.js';
import { BWD_SMEM_BYTES } from './rules-backward.js';
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
  it('has the allocation bits of native/src/abi.h', () => {
    const m = /enum Alloc : int \{([^}]*)\}/.exec(header);
    const bits = Object.fromEntries(
      m![1]!.split(',').map((e) => {
        const [name, value] = e.split('=').map((x) => x.trim());
        return [name!.slice(6, 7).toLowerCase() + name!.slice(7), Number(value)];
      }),
    );
    expect(bits).toEqual({ ...ALLOC });
  });
});

describe('backward abi', () => {
  const header = readFileSync(join(PACKAGE_ROOT, 'native', 'src', 'bwd_abi.h'), 'utf8');
  it('lists the same pointer slots as native/src/bwd_abi.h', () => {
    expect(enumNames(header, 'BwdPtr')).toEqual([...BWD_PTR_NAMES]);
  });
  it('lists the same number slots as native/src/bwd_abi.h', () => {
    expect(enumNames(header, 'BwdNum')).toEqual([...BWD_NUM_NAMES]);
  });
});

describe('generated backward instantiations', () => {
  const script = join(PACKAGE_ROOT, 'scripts', 'generate-bwd-instantiations.mjs');
  it('are up to date with scripts/generate-bwd-instantiations.mjs', () => {
    const r = spawnSync(process.execPath, [script, '--check'], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
  it('state the shared memory that the backwardSharedMemory rule assumes', () => {
    const r = spawnSync(process.execPath, [script, '--smem-json'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(BWD_SMEM_BYTES);
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

describe('generated wgmma wrappers', () => {
  it('are up to date with scripts/generate-wgmma.mjs', () => {
    const r = spawnSync(process.execPath, [join(PACKAGE_ROOT, 'scripts', 'generate-wgmma.mjs'), '--check'], {
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});
