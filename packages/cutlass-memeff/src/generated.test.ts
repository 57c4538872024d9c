// The generated kernel list is what the script makes today, and its buckets are the ones the
// traits headers (and so dispatch.cu) choose from.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from './native.js';

const script = join(PACKAGE_ROOT, 'scripts', 'generate-kernels.mjs');

function bucketsIn(header: string, name: string): number[] {
  const text = readFileSync(join(PACKAGE_ROOT, 'native', 'src', header), 'utf8');
  const m = new RegExp(`${name}\\[\\] = \\{([^}]*)\\}`).exec(text);
  if (!m) throw new Error(`${name} not found in ${header}`);
  return m[1]!.split(',').map((s) => Number(s.trim()));
}

describe('generated kernels', () => {
  it('are up to date with scripts/generate-kernels.mjs', () => {
    const r = spawnSync(process.execPath, [script, '--check'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
  });

  it('cover the buckets the traits headers choose from', async () => {
    const gen = (await import(script)) as { instances(): Array<{ stem: string; bucket: number; dt: string }> };
    const list = gen.instances();
    const buckets = (stem: string) =>
      [...new Set(list.filter((i) => i.stem === stem).map((i) => i.bucket))].sort((a, b) => a - b);
    expect(buckets('fwd_simt')).toEqual(bucketsIn('fwd/simt_traits.h', 'kSimtBuckets'));
    expect(buckets('bwd_simt')).toEqual(bucketsIn('fwd/simt_traits.h', 'kSimtBuckets'));
    const mmaFwd = [
      ...bucketsIn('fwd/mma_traits.h', 'kMmaBuckets'),
      ...bucketsIn('fwd/mma_traits.h', 'kMmaExactHeadDims'),
    ];
    expect(buckets('fwd_mma')).toEqual(mmaFwd.sort((a, b) => a - b));
    expect(buckets('bwd_mma')).toEqual(bucketsIn('bwd/mma_bwd_traits.h', 'kMmaBwdBuckets'));
    expect(buckets('fwd_tf32')).toEqual(bucketsIn('fwd/tf32_traits.h', 'kTf32Buckets'));
    expect(buckets('bwd_tf32')).toEqual(bucketsIn('bwd/tf32_bwd_traits.h', 'kTf32BwdBuckets'));
    for (const stem of ['fwd_simt', 'bwd_simt', 'bwd_aux']) {
      expect(new Set(list.filter((i) => i.stem === stem).map((i) => i.dt)), stem).toEqual(
        new Set(['fp32', 'fp16', 'bf16']),
      );
    }
  });
});
