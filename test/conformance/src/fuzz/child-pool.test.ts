// The fuzz child pool turns a crash or a hang in a case into that case's failure, and starts a
// fresh child for the next case.
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { CaseSpec } from '../cases.js';
import { FuzzChildPool } from './child-pool.js';

const faulty = fileURLToPath(new URL('./faulty-backends.ts', import.meta.url));
const spec: CaseSpec = {
  name: 'tiny',
  dtype: 'float32',
  batch: 1,
  headsQ: 1,
  headsKV: 1,
  seqQ: 2,
  seqK: 3,
  headDim: 4,
  headDimV: 4,
  layout: 'bhsd',
};
const pool = new FuzzChildPool([faulty], 5_000);
afterAll(() => pool.close());

describe('FuzzChildPool', { timeout: 60_000 }, () => {
  it('reports a case whose process dies as a crash, then runs the next case in a fresh child', async () => {
    const crashed = await pool.run('runValid', 'crashes', spec, 1n, 'cpu');
    expect(crashed.status, crashed.message).toBe('crash');
    expect(crashed.message).toMatch(/SIGSEGV/);
    // A backend the child does not know: a harness failure, answered by a new child.
    const next = await pool.run('runValid', 'not-registered', spec, 1n, 'cpu');
    expect(next.status).toBe('fail');
    expect(next.message).toMatch(/not registered/);
  });

  it('reports a case that never answers as a hang', async () => {
    const hung = await pool.run('runValid', 'hangs', spec, 1n, 'cpu');
    expect(hung.status).toBe('hang');
  });
});
