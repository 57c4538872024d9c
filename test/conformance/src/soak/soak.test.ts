// The soak run's checks can fail: a backend that keeps memory per call trips the resident bound.
import { registerBackend, zeros } from '@attn/core';
import type { Gradients, SdpaParams } from '@attn/core';
import { isolateRegistry, makeFakeBackend, nanOutputs } from '@attn/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_RSS_GROWTH_MIB } from './describe-soak.js';
import { runSoak } from './soak.js';

const grads = (p: SdpaParams): Gradients => ({
  dq: zeros(p.query.shape),
  dk: zeros(p.key.shape),
  dv: zeros(p.value.shape),
});

let restore: () => void;
beforeEach(() => {
  restore = isolateRegistry();
});
afterEach(() => restore());

describe('runSoak', () => {
  it('passes a backend that keeps nothing', async () => {
    registerBackend(makeFakeBackend('tidy', { backward: grads }));
    const r = await runSoak({ backend: 'tidy', device: 'cpu', dtype: 'float32', calls: 2000 });
    expect(r.problems).toEqual([]);
    expect(r.rssEndMiB - r.rssWarmMiB).toBeLessThan(MAX_RSS_GROWTH_MIB);
  });

  it('catches a backend that keeps 128 KiB per call', async () => {
    const kept: Float64Array[] = [];
    registerBackend(
      makeFakeBackend('leaky', {
        forward: (p) => {
          kept.push(new Float64Array(16384).fill(kept.length));
          return nanOutputs(p);
        },
        backward: grads,
      }),
    );
    const r = await runSoak({ backend: 'leaky', device: 'cpu', dtype: 'float32', calls: 2000 });
    expect(r.rssEndMiB - r.rssWarmMiB).toBeGreaterThan(MAX_RSS_GROWTH_MIB);
    kept.length = 0;
  });
});
