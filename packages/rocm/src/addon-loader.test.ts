// The loader the ROCm backend packages use for their own addons (the runtime's addon is loaded by
// @attn/cuda's runtime factory instead).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadAddon } from './addon-loader.js';

describe('loadAddon', () => {
  const root = mkdtempSync(join(tmpdir(), 'attn-rocm-'));
  const spec = { packageName: '@attn/x', packageRoot: root, addonName: 'x' };
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('reports a missing build with the command to run', () => {
    expect(loadAddon(spec)).toMatchObject({ ok: false, reason: expect.stringMatching(/not built .*pnpm --filter @attn\/x build:native/) });
  });
  it('reports the recorded reason of a skipped build', () => {
    mkdirSync(join(root, 'build'), { recursive: true });
    writeFileSync(join(root, 'build', 'SKIPPED'), 'hipcc was not found\n');
    expect(loadAddon(spec)).toMatchObject({ ok: false, reason: expect.stringMatching(/built without its native addon: hipcc was not found/) });
  });
});
