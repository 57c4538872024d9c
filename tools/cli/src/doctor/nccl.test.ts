import { describe, expect, it } from 'vitest';
import { ncclSection } from './nccl.js';

describe('doctor NCCL section', () => {
  it('reports what @attn/context-parallel finds (this machine: found or none, never a throw)', async () => {
    const s = await ncclSection();
    expect(['found', 'none']).toContain(s.state);
    expect(s.summary).toMatch(/runtime/);
  });

  it('without the package, says how to get it', async () => {
    const missing = Object.assign(new Error("Cannot find package '@attn/context-parallel'"), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
    const s = await ncclSection(() => Promise.reject(missing));
    expect(s).toEqual({ state: 'not installed', summary: 'install @attn/context-parallel to look for NCCL' });
  });
});
