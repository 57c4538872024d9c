// The features AOTriton lacks are declined with AOTriton's reason and version; the call's out is taken.
import { explain, registerBackend, type RuleContext, type SdpaParams } from '@attn/core';
import { withIsolatedRegistry } from '@attn/core/testing';
import { installFakeRocmRuntime, qkv, rocmTensor } from '@attn/rocm/testing';
import { resetRocmFaPreference, type FaLibraryDeps } from '@attn/rocm';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { makeAotritonBackend } from './backend.js';
import { aotritonNoKvCache, aotritonNoPagedKv, aotritonNoSequsedK, aotritonNoSoftcap } from './declines.js';

beforeAll(() => {
  installFakeRocmRuntime('gfx942');
});
beforeEach(() => resetRocmFaPreference());

const v0112 = () => ({ major: 0, minor: 11, patch: 2 });
const ctx = {} as RuleContext;
/** Only the fields a decline rule reads; the rest of SdpaParams is irrelevant to it. */
const params = (fields: Partial<Record<keyof SdpaParams, unknown>>): SdpaParams =>
  ({ softcap: 0, sequsedK: null, paged: null, kvCache: null, varlen: null, ...fields }) as unknown as SdpaParams;

describe('AOTriton declines', () => {
  it('name the loaded AOTriton version and what its flash API lacks', () => {
    expect(aotritonNoSoftcap(v0112).check(params({ softcap: 30 }), ctx)).toMatch(
      /^AOTriton 0\.11\.2 has no logits soft cap: .*Sm_scale only \(0\.10b to 0\.13b\)/,
    );
    expect(aotritonNoSequsedK(v0112).check(params({ sequsedK: {} }), ctx)).toMatch(
      /^AOTriton 0\.11\.2 takes no per-batch used-key count .*cu_seqlens_k only/,
    );
    expect(aotritonNoSequsedK(() => ({ major: 0, minor: 12, patch: 1 })).check(params({ sequsedK: {} }), ctx)).toMatch(
      /^AOTriton 0\.12\.1 takes used key lengths only as the cu_seqlens_k of its padded or strided varlen layouts .* does not marshal/,
    );
    expect(aotritonNoPagedKv(v0112).check(params({ paged: {} }), ctx)).toMatch(
      /^AOTriton 0\.11\.2 has no paged K\/V: .*no block table/,
    );
    expect(aotritonNoKvCache(v0112).check(params({ kvCache: {} }), ctx)).toMatch(
      /^AOTriton 0\.11\.2 has no KV-cache call: its flash API is attn_fwd and attn_bwd/,
    );
  });

  it('pass calls without those features, and cite the newest known version without the addon', () => {
    for (const r of [aotritonNoSoftcap, aotritonNoSequsedK, aotritonNoPagedKv, aotritonNoKvCache])
      expect(r(v0112).check(params({}), ctx)).toBeNull();
    expect(aotritonNoSoftcap(() => null).check(params({ softcap: 30 }), ctx)).toMatch(/^AOTriton 0\.14\.0 /);
  });

  it("take the call's out on both backends (attn_fwd writes a strided Out)", () => {
    const t = qkv(1, 2, 8, 8, 64);
    const fa = (): FaLibraryDeps => ({ probe: () => undefined, visibleArchs: () => ({ ok: true, archs: ['gfx942'] }) });
    const deps = { version: () => ({ major: 0, minor: 12, patch: 1 }), experimental: () => false, faLibrary: fa };
    const r = withIsolatedRegistry(() => {
      registerBackend(makeAotritonBackend('flash', deps));
      registerBackend(makeAotritonBackend('efficient', deps));
      return explain(t.q, t.k, t.v, { out: rocmTensor([1, 2, 8, 64]) });
    });
    for (const c of r.candidates) expect(c.reasons.map((x) => x.rule)).toEqual([]);
  });
});
