// cpu-math against golden vectors from PyTorch's scaled_dot_product_attention (float64, math
// backend), made by packages/cpu/scripts/make_golden.py on a machine with torch. A missing fixture
// fails this suite: the semantics must be pinned to PyTorch, not skipped.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tensor } from '@attn/core';
import type { Alignment, Tensor } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { expectClose, runMath } from '../../test/math/helpers.js';

const FIXTURE = fileURLToPath(new URL('../../test/fixtures/golden.json', import.meta.url));

interface Stored {
  readonly shape: number[];
  /** Row-major; non-finite values are the strings "Infinity", "-Infinity", "NaN". */
  readonly data: (number | string)[];
}

interface GoldenCase {
  readonly name: string;
  readonly opts: { scale: number | null; isCausal: boolean; alignment: Alignment; enableGqa: boolean };
  readonly q: Stored;
  readonly k: Stored;
  readonly v: Stored;
  readonly gradOut: Stored;
  readonly mask: (Stored & { kind: 'bool' | 'additive' }) | null;
  readonly out: Stored;
  readonly lse: Stored;
  readonly dq: Stored;
  readonly dk: Stored;
  readonly dv: Stored;
  readonly dbias: Stored | null;
}

function load(): { cases: GoldenCase[]; torch: string } | { error: string } {
  if (!existsSync(FIXTURE)) {
    return {
      error:
        `${FIXTURE} is missing. Make it on a machine with python3 and torch >= 2.5 ` +
        '(`python3 packages/cpu/scripts/make_golden.py`, or the `golden` step of tools/gpu/run-suite.sh) and commit it.',
    };
  }
  try {
    const parsed = JSON.parse(readFileSync(FIXTURE, 'utf8')) as { cases?: GoldenCase[]; torch?: string };
    if (!Array.isArray(parsed.cases)) return { error: `${FIXTURE} has no "cases" array` };
    return { cases: parsed.cases, torch: parsed.torch ?? 'unknown' };
  } catch (e) {
    return { error: `${FIXTURE} is not valid JSON: ${(e as Error).message}` };
  }
}

function decode(s: Stored): Float64Array {
  return Float64Array.from(s.data, (x) => (typeof x === 'number' ? x : Number(x)));
}

function f64(s: Stored): Tensor {
  return tensor(decode(s), s.shape, { dtype: 'float64' });
}

const fixture = load();

describe('golden vectors from PyTorch', () => {
  it('the fixture is present and covers the features', () => {
    if ('error' in fixture) throw new Error(fixture.error);
    const names = fixture.cases.map((c) => c.name);
    for (const feature of [
      'plain',
      'bool_mask',
      'additive_mask',
      'causal_upper_left',
      'causal_lower_right',
      'gqa',
      'dv_ne_d',
      'fully_masked',
      's1',
    ]) {
      expect(
        names.some((n) => n.startsWith(feature)),
        `a case for ${feature} (torch ${fixture.torch})`,
      ).toBe(true);
    }
  });

  for (const c of 'cases' in fixture ? fixture.cases : []) {
    it(c.name, () => {
      const mask = c.mask
        ? tensor(decode(c.mask), c.mask.shape, { dtype: c.mask.kind === 'bool' ? 'bool' : 'float64' })
        : null;
      const run = runMath(
        f64(c.q),
        f64(c.k),
        f64(c.v),
        {
          ...(c.opts.scale === null ? {} : { scale: c.opts.scale }),
          isCausal: c.opts.isCausal,
          alignment: c.opts.alignment,
          enableGqa: c.opts.enableGqa,
          attnMask: mask,
        },
        f64(c.gradOut),
      );
      expectClose(run.fwd.out, decode(c.out), 'out', 1e-10);
      // logsumexp is float32 by contract: rounding it costs up to 2^-24 relative.
      expectClose(run.fwd.logsumexp, decode(c.lse), 'logsumexp', 1.2e-7);
      expectClose(run.grads.dq, decode(c.dq), 'dq', 1e-10);
      expectClose(run.grads.dk, decode(c.dk), 'dk', 1e-10);
      expectClose(run.grads.dv, decode(c.dv), 'dv', 1e-10);
      if (c.dbias) expectClose(run.grads.dbias!, decode(c.dbias), 'dbias', 1e-10);
      else expect(run.grads.dbias).toBeUndefined();
    });
  }
});
