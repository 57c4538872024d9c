// The TS and C++ sides of the argument layout, and the generated instantiation list, cannot drift.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { abiHeaderMismatches } from '@attn/cuda';
import { ALLOC, FORWARD_ABI } from './abi.js';
import { BACKWARD_ABI } from './bwd-abi.js';
import { BWD_SMEM_BYTES } from './rules-backward.js';
import { PACKAGE_ROOT } from './native.js';

describe('abi', () => {
  const header = readFileSync(join(PACKAGE_ROOT, 'native', 'src', 'abi.h'), 'utf8');
  it('lists the slots of native/src/abi.h in its order', () => {
    expect(abiHeaderMismatches(FORWARD_ABI, header, { ptr: 'Ptr', num: 'Num' })).toEqual([]);
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
  it('lists the slots of native/src/bwd_abi.h in its order', () => {
    expect(abiHeaderMismatches(BACKWARD_ABI, header, { ptr: 'BwdPtr', num: 'BwdNum' })).toEqual([]);
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
