// Selection and rules through core's explain(), with a fake 'rocm' device (no kernel runs): which
// AOTriton backend takes which call, and what every decline says.
import { explain, registerBackend, type SdpaOptions, type SelectionReport } from '@attn/core';
import { withIsolatedRegistry } from '@attn/core/testing';
import { preferredRocmFaLibrary, resetRocmFaPreference, resetWarnOnce, type FaLibraryDeps } from '@attn/rocm';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { installFakeRocmRuntime, qkv, rocmTensor, type Qkv } from '@attn/rocm/testing';
import { makeAotritonBackend } from './backend.js';
import type { AotritonVersion } from './version.js';

let device: { setArch(a: string): void };
beforeAll(() => {
  device = installFakeRocmRuntime('gfx942');
});
beforeEach(() => {
  resetRocmFaPreference();
  resetWarnOnce();
  vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
});
afterEach(() => device.setArch('gfx942'));

interface World {
  version?: AotritonVersion;
  experimental?: boolean;
  preferCk?: boolean;
}

function report(t: Qkv, opts: SdpaOptions, world: World = {}): SelectionReport {
  const fa = (): FaLibraryDeps => ({
    probe: (lib) =>
      lib === 'ck'
        ? { library: 'ck', availability: () => ({ ok: true }), archs: ['gfx90a', 'gfx942', 'gfx950'] }
        : undefined,
    visibleArchs: () => ({ ok: true, archs: ['gfx942'] }),
  });
  const deps = {
    version: () => world.version ?? { major: 0, minor: 12, patch: 1 },
    experimental: () => world.experimental ?? false,
    faLibrary: fa,
  };
  if (world.preferCk) preferredRocmFaLibrary('ck', fa());
  else resetRocmFaPreference();
  return withIsolatedRegistry(() => {
    registerBackend(makeAotritonBackend('flash', deps));
    registerBackend(makeAotritonBackend('efficient', deps));
    return explain(t.q, t.k, t.v, opts);
  });
}

/** The failing rule names of one candidate. */
function failing(r: SelectionReport, backend: string): string[] {
  return r.candidates.find((c) => c.backend === backend)!.reasons.map((x) => x.rule);
}
function message(r: SelectionReport, backend: string, rule: string): string {
  return r.candidates.find((c) => c.backend === backend)!.reasons.find((x) => x.rule === rule)?.message ?? '';
}

describe('AOTriton selection (PyTorch ROCm flash -> efficient order)', () => {
  it('fp16 plain attention passes every flash and efficient rule; unavailable here only for lack of the addon', () => {
    const r = report(qkv(2, 8, 128, 128, 64), {});
    expect(failing(r, 'aotriton-flash')).toEqual([]);
    expect(failing(r, 'aotriton-efficient')).toEqual([]);
    expect(r.candidates.map((c) => c.backend)).toEqual(['aotriton-flash', 'aotriton-efficient']);
  });

  it('fp32 is efficient-only; float64 is neither', () => {
    const r32 = report(qkv(1, 2, 16, 16, 64, { dtype: 'float32' }), {});
    expect(failing(r32, 'aotriton-flash')).toContain('dtypeIn(float16, bfloat16)');
    expect(failing(r32, 'aotriton-efficient')).toEqual([]);
    const r64 = report(qkv(1, 2, 16, 16, 64, { dtype: 'float64' }), {});
    expect(failing(r64, 'aotriton-efficient').some((n) => n.startsWith('dtypeIn'))).toBe(true);
  });

  it('GQA runs on flash, not on efficient', () => {
    const r = report(qkv(1, 8, 16, 16, 64, { hk: 2 }), { enableGqa: true });
    expect(failing(r, 'aotriton-flash')).toEqual([]);
    expect(failing(r, 'aotriton-efficient')).toEqual(['batchAndHeads(gqa=false, sameKvHeads=true, mqa=false)']);
  });

  it('a mask is efficient-only: additive of the query dtype; a boolean mask is declined with the fix', () => {
    const t = qkv(1, 2, 16, 16, 64);
    const additive = report(t, { attnMask: rocmTensor([16, 16], { dtype: 'float16' }) });
    expect(failing(additive, 'aotriton-flash')).toContain('noAttnMask');
    expect(failing(additive, 'aotriton-efficient')).toEqual([]);
    const bool = report(t, { attnMask: rocmTensor([16, 16], { dtype: 'bool' }) });
    expect(message(bool, 'aotriton-efficient', 'aotritonBias')).toMatch(/additive bias, not a boolean mask.*-Infinity/);
    const f32 = report(t, { attnMask: rocmTensor([16, 16], { dtype: 'float32' }) });
    expect(message(f32, 'aotriton-efficient', 'aotritonBias')).toMatch(/dtype of q, k, v \(float16\); got float32/);
  });

  it('a broadcast bias cannot get its gradient', () => {
    const t = qkv(2, 2, 16, 16, 64);
    const r = report(t, { attnMask: rocmTensor([16, 16], { dtype: 'float16' }), requiresGrad: true });
    expect(message(r, 'aotriton-efficient', 'aotritonBias')).toMatch(/cannot reduce it to a broadcast mask/);
    const full = report(t, { attnMask: rocmTensor([2, 2, 16, 16], { dtype: 'float16' }), requiresGrad: true });
    expect(failing(full, 'aotriton-efficient')).toEqual([]);
  });

  it('head dim: 512 on gfx942, 256 on gfx11 with 0.11, multiple of 8 for flash', () => {
    expect(failing(report(qkv(1, 1, 8, 8, 512), {}), 'aotriton-flash')).toEqual([]);
    expect(message(report(qkv(1, 1, 8, 8, 520), {}), 'aotriton-flash', 'aotritonHeadDim')).toMatch(/at most 512/);
    expect(message(report(qkv(1, 1, 8, 8, 100), {}), 'aotriton-flash', 'aotritonHeadDim')).toMatch(/divisible by 8/);
    device.setArch('gfx1100');
    const r = report(qkv(1, 1, 8, 8, 384), {}, { version: { major: 0, minor: 11, patch: 2 } });
    expect(message(r, 'aotriton-flash', 'aotritonHeadDim')).toMatch(/at most 256 .*gfx1100/);
    expect(message(r, 'aotriton-efficient', 'aotritonHeadDim')).toMatch(/multiple of 8 and at most 256/);
  });

  it('efficient head dims from 0.12: alignment 4 for fp32', () => {
    expect(failing(report(qkv(1, 1, 8, 8, 36, { dtype: 'float32' }), {}), 'aotriton-efficient')).toEqual([]);
    expect(message(report(qkv(1, 1, 8, 8, 36), {}), 'aotriton-efficient', 'aotritonHeadDim')).toMatch(
      /divisible by 8 for float16/,
    );
  });

  it('no ALiBi, no softcap, and dropout declined because the Philox mapping differs', () => {
    const t = qkv(1, 2, 8, 8, 64);
    const alibi = report(t, { alibiSlopes: rocmTensor([2], { dtype: 'float32' }) });
    expect(message(alibi, 'aotriton-flash', 'noAlibi')).toMatch(
      /^AOTriton 0\.12\.1 is built without ALiBi.*preferredRocmFaLibrary\('ck'\)/,
    );
    expect(failing(report(t, { softcap: 30 }), 'aotriton-flash')).toContain('noSoftcap');
    const drop = report(t, { dropoutP: 0.1 });
    expect(message(drop, 'aotriton-flash', 'noDropout')).toMatch(
      /^AOTriton 0\.12\.1 draws dropout with its own Philox counter layout \(tl.randint4x .*ceil\(Sk\/4\).*same seed would drop different elements/,
    );
    expect(failing(drop, 'aotriton-efficient')).toContain('noDropout');
  });

  it('causal with Sq != Sk runs (both alignments are encoded), unlike PyTorch flash', () => {
    const t = qkv(1, 2, 8, 32, 64);
    expect(failing(report(t, { isCausal: true }), 'aotriton-flash')).toEqual([]);
    expect(failing(report(t, { isCausal: true, alignment: 'lowerRight' }), 'aotriton-flash')).toEqual([]);
  });

  it('the window_right bug declines asymmetric windows on 0.11.1 only', () => {
    const t = qkv(1, 2, 32, 32, 64);
    const old = { version: { major: 0, minor: 11, patch: 1 } };
    expect(message(report(t, { window: [8, 2] }, old), 'aotriton-flash', 'aotritonWindow')).toMatch(
      /0\.11\.1 ignores window_right.*0\.11\.2b/,
    );
    expect(failing(report(t, { isCausal: true }, old), 'aotriton-flash')).toEqual([]);
    expect(failing(report(t, { window: [4, 4] }, old), 'aotriton-flash')).toEqual([]);
    expect(
      failing(report(t, { window: [8, 2] }, { version: { major: 0, minor: 11, patch: 2 } }), 'aotriton-flash'),
    ).toEqual([]);
  });

  it('deterministic backward needs 0.12', () => {
    const t = qkv(1, 2, 8, 8, 64);
    const opts = { requiresGrad: true, deterministic: true };
    expect(
      message(
        report(t, opts, { version: { major: 0, minor: 11, patch: 2 } }),
        'aotriton-flash',
        'aotritonDeterministic',
      ),
    ).toMatch(/came in 0\.12/);
    expect(failing(report(t, opts), 'aotriton-flash')).toEqual([]);
  });
});

describe('arch gating', () => {
  it('experimental archs need enableExperimentalAotritonArchs(true)', () => {
    device.setArch('gfx1101');
    const t = qkv(1, 2, 8, 8, 64);
    expect(message(report(t, {}), 'aotriton-flash', 'aotritonArch')).toMatch(
      /gfx1101 is still experimental.*enableExperimentalAotritonArchs\(true\) from @attn\/rocm-aotriton/,
    );
    expect(message(report(t, {}), 'aotriton-efficient', 'aotritonArch')).toMatch(/^Mem Efficient attention on gfx1101/);
    expect(failing(report(t, {}, { experimental: true }), 'aotriton-flash')).toEqual([]);
  });

  it('unknown archs are declined with the supported list; tech preview needs no switch', () => {
    device.setArch('gfx1030');
    expect(message(report(qkv(1, 2, 8, 8, 64), {}), 'aotriton-flash', 'aotritonArch')).toMatch(
      /no kernels for gfx1030 \(it runs on gfx90a, gfx942, gfx950.*more behind enableExperimentalAotritonArchs\(true\)/,
    );
    device.setArch('gfx1250');
    expect(
      failing(report(qkv(1, 2, 8, 8, 64), {}, { version: { major: 0, minor: 13, patch: 0 } }), 'aotriton-flash'),
    ).toEqual([]);
  });
});

describe('library preference', () => {
  it('with CK preferred, both AOTriton backends decline and say so', () => {
    const r = report(qkv(1, 2, 8, 8, 64), {}, { preferCk: true });
    expect(message(r, 'aotriton-flash', 'rocmFaLibrary')).toMatch(
      /CK is the preferred ROCm attention library \(preferredRocmFaLibrary\('ck'\)\).*preferredRocmFaLibrary\('aotriton'\)/,
    );
    expect(failing(r, 'aotriton-efficient')).toEqual(['rocmFaLibrary']);
  });
});
