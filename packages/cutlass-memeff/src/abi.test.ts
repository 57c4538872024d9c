// The TS and C++ sides of the addon's argument layout cannot drift: the shared drift check against
// native/src/abi.h, and the codes of two of its slots against the enums they carry.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { abiHeaderMismatches } from '@attn/cuda';
import { describe, expect, it } from 'vitest';
import { BACKWARD_ABI, FORWARD_ABI, MASK_KIND, PATH_CODE } from './abi.js';
import { PACKAGE_ROOT } from './native.js';

const source = (file: string) => readFileSync(join(PACKAGE_ROOT, 'native', 'src', file), 'utf8');

/** `enum class <name> ... { kA, kB = 2, ... }` as { a: 0, b: 2 }. */
function enumValues(text: string, name: string): Record<string, number> {
  const m = new RegExp(`enum class ${name}[^{]*\\{([^}]*)\\}`).exec(text);
  if (!m) throw new Error(`enum class ${name} not found`);
  let next = 0;
  const out: Record<string, number> = {};
  for (const member of m[1]!
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [id, value] = member.split('=').map((s) => s.trim());
    next = value === undefined ? next : Number(value);
    out[id!.slice(1, 2).toLowerCase() + id!.slice(2)] = next++;
  }
  return out;
}

describe('abi', () => {
  it('lists the slots of native/src/abi.h in its order', () => {
    expect(abiHeaderMismatches(FORWARD_ABI, source('abi.h'), { ptr: 'Ptr', num: 'Num' })).toEqual([]);
  });
  it("lists the backward's slots of native/src/abi.h in its order", () => {
    expect(abiHeaderMismatches(BACKWARD_ABI, source('abi.h'), { ptr: 'BwdPtr', num: 'BwdNum' })).toEqual([]);
  });
  it("passes the path as dispatch.h's PathRequest and the mask kind as params.h's MaskKind", () => {
    expect(enumValues(source('dispatch.h'), 'PathRequest')).toEqual({ ...PATH_CODE });
    expect(enumValues(source('common/params.h'), 'MaskKind')).toEqual({ ...MASK_KIND });
  });
});
