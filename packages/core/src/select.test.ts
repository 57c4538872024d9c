// Selection: ordering, restriction, reporting; and property tests over random backends and params.
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Rule } from './backend.js';
import { ruleContext } from './device-context.js';
import { FLOAT_DTYPES, type FloatDType } from './dtype.js';
import { zeros } from './factory.js';
import type { SdpaOptions } from './params.js';
import { registerBackend } from './registry.js';
import { formatReport, NoBackendError } from './report.js';
import * as R from './rules.js';
import { explain, sdpaForward } from './sdpa.js';
import { sdpaKernel } from './scope.js';
import { isolateRegistry, makeFakeBackend, withIsolatedRegistry } from './testing.js';
import { normalizeParams } from './validate.js';

const q = () => zeros([1, 2, 3, 8]);

let restore: () => void;
beforeEach(() => {
  restore = isolateRegistry({ keepDeviceRuntimes: false });
});
afterEach(() => restore());

describe('selection', () => {
  it('tries backends by priority and runs the first that passes every rule', () => {
    const hi = makeFakeBackend('hi', { priority: 10, rules: [R.noDropout] });
    const lo = makeFakeBackend('lo', { priority: 1 });
    registerBackend(lo);
    registerBackend(hi);
    expect(sdpaForward(q(), q(), q()).backend).toBe('hi');
    expect(sdpaForward(q(), q(), q(), { dropoutP: 0.5 }).backend).toBe('lo');
    expect(hi.calls).toHaveLength(1);
    expect(lo.calls).toHaveLength(1);
  });

  it('skips unavailable backends and says why', () => {
    registerBackend(makeFakeBackend('broken', { priority: 5, available: 'addon not built: run pnpm build:native' }));
    registerBackend(makeFakeBackend('ok'));
    const report = explain(q(), q(), q());
    expect(report.selected).toBe('ok');
    expect(report.candidates[0]).toMatchObject({
      backend: 'broken',
      available: false,
      unavailableReason: 'addon not built: run pnpm build:native',
      selected: false,
    });
    expect(formatReport(report)).toContain('unavailable: addon not built');
  });

  it('reports every failing rule of every candidate, not only the first', () => {
    registerBackend(makeFakeBackend('flashy', { priority: 2, rules: [R.noDropout, R.noAttnMask, R.headDimAtMost(4)] }));
    registerBackend(makeFakeBackend('picky', { priority: 1, rules: [R.dtypeIn(['float16'])] }));
    const call = (): unknown =>
      sdpaForward(q(), q(), q(), { dropoutP: 0.1, attnMask: zeros([3, 3], { dtype: 'bool' }) });
    expect(call).toThrow(NoBackendError);
    try {
      call();
    } catch (e) {
      const err = e as NoBackendError;
      expect(err.code).toBe('ATTN_NO_BACKEND');
      expect(err.report.selected).toBeNull();
      expect(err.report.candidates.map((c) => c.reasons.map((r) => r.rule))).toEqual([
        ['noDropout', 'noAttnMask', 'headDimAtMost(4)'],
        ['dtypeIn(float16)'],
      ]);
      const lines = err.message.split('\n');
      expect(lines[0]).toBe('attn: no backend can run this call on cpu.');
      expect(lines.filter((l) => /^ {2}\d\. /.test(l))).toHaveLength(2);
      expect(lines.filter((l) => /^ {7}- /.test(l))).toHaveLength(4);
      expect(err.message).toContain('dropout 0.1');
    }
  });

  it('explain covers every candidate and computes nothing', () => {
    const a = makeFakeBackend('a', { priority: 2 });
    const b = makeFakeBackend('b', { priority: 1, rules: [R.noDropout] });
    registerBackend(a);
    registerBackend(b);
    const report = explain(q(), q(), q(), { dropoutP: 0.2 });
    expect(report.candidates.map((c) => [c.backend, c.selected, c.reasons.length])).toEqual([
      ['a', true, 0],
      ['b', false, 1],
    ]);
    expect(a.calls).toHaveLength(0);
    expect(formatReport(report)).toMatch(/^attn: a runs this call on cpu\./);
  });

  it("labels a backend that declares itself the device's fallback, and says so when it is selected", () => {
    registerBackend(makeFakeBackend('fast', { priority: 2, rules: [R.noDropout] }));
    registerBackend({ ...makeFakeBackend('catch-all', { priority: 0 }), fallback: true });
    const report = explain(q(), q(), q(), { dropoutP: 0.2 });
    expect(report.candidates.map((c) => [c.backend, c.fallback ?? false])).toEqual([
      ['fast', false],
      ['catch-all', true],
    ]);
    const text = formatReport(report);
    expect(text).toMatch(/^attn: catch-all runs this call on cpu, the device's fallback\./);
    expect(text).toContain('2. catch-all (priority 0, fallback): selected');
    expect(formatReport(explain(q(), q(), q()))).toMatch(/^attn: fast runs this call on cpu\.$/m);
  });

  it('per-call backends restrict and order the candidates', () => {
    registerBackend(makeFakeBackend('first', { priority: 9 }));
    registerBackend(makeFakeBackend('second', { priority: 1 }));
    registerBackend(makeFakeBackend('third', { priority: 5 }));
    const report = explain(q(), q(), q(), { backends: ['second', 'first'] });
    expect(report.candidates.map((c) => c.backend)).toEqual(['second', 'first']);
    expect(report).toMatchObject({
      selected: 'second',
      restrictedTo: ['second', 'first'],
      restrictionSource: 'call',
      excluded: ['third'],
    });
    expect(formatReport(report)).toContain('restricted to (backends option): second, first');
    expect(formatReport(report)).toContain('left out by the restriction: third');
  });

  it('the sdpaKernel scope restricts; a per-call list replaces it', async () => {
    registerBackend(makeFakeBackend('a', { priority: 2 }));
    registerBackend(makeFakeBackend('b', { priority: 1 }));
    await sdpaKernel(['b'], async () => {
      await new Promise((r) => setTimeout(r, 1));
      expect(sdpaForward(q(), q(), q()).backend).toBe('b');
      expect(explain(q(), q(), q()).restrictionSource).toBe('scope');
      expect(sdpaForward(q(), q(), q(), { backends: ['a'] }).backend).toBe('a');
    });
    expect(sdpaForward(q(), q(), q()).backend).toBe('a');
  });

  it('a restriction without a backend for the device leaves no candidate', () => {
    registerBackend(makeFakeBackend('gpu-only', { deviceType: 'cuda' }));
    registerBackend(makeFakeBackend('cpu-one'));
    const err = (() => {
      try {
        sdpaKernel(['gpu-only'], () => sdpaForward(q(), q(), q()));
      } catch (e) {
        return e as NoBackendError;
      }
      throw new Error('expected NoBackendError');
    })();
    expect(err.report.candidates).toEqual([]);
    expect(err.report.excluded).toEqual(['cpu-one']);
    expect(err.message).toContain('no registered cpu backend is in the restriction');
  });

  it('with nothing registered, says to import a backend package', () => {
    expect(() => sdpaForward(q(), q(), q())).toThrow(/import a backend package/);
  });

  it('a rule or availability() that throws counts as a failure with its error, never as a pass', () => {
    const throwing: Rule = {
      name: 'explodes',
      check: () => {
        throw new Error('kaboom');
      },
    };
    registerBackend(makeFakeBackend('bad-rule', { priority: 3, rules: [throwing] }));
    const badAvail = makeFakeBackend('bad-avail', { priority: 2 });
    registerBackend({
      ...badAvail,
      availability: () => {
        throw new Error('dlopen failed');
      },
    });
    registerBackend(makeFakeBackend('fine'));
    const report = explain(q(), q(), q());
    expect(report.selected).toBe('fine');
    expect(report.candidates[0]!.reasons[0]!.message).toContain('kaboom');
    expect(report.candidates[1]!.unavailableReason).toContain('dlopen failed');
  });

  it('passes device properties to rules (the CPU has no sm)', () => {
    registerBackend(makeFakeBackend('needs-sm', { priority: 1, rules: [R.smRange(80, 121)] }));
    registerBackend(makeFakeBackend('any'));
    const report = explain(q(), q(), q());
    expect(report.selected).toBe('any');
    expect(report.candidates[0]!.reasons[0]!.message).toContain('cpu (');
  });
});

// ---- property tests ---------------------------------------------------------------------------

/** Rules the random backends draw from: each one is failed by some of the random calls. */
const RULE_POOL: Rule[] = [
  R.noDropout,
  R.noAttnMask,
  R.noBoolMask,
  R.noAdditiveMask,
  R.noCausalNonSquare,
  R.noWindow,
  R.noSoftcap,
  R.noBackward,
  R.nonzeroSeqLens,
  R.headDimAtMost(64),
  R.headDimMultipleOf(8),
  R.headDimsEqual,
  R.dtypeIn(['float16', 'bfloat16']),
  R.dtypeIn(['float32', 'float64']),
  R.batchAndHeads({ gqa: false }),
  R.batchAndHeads({ gqa: true }),
  R.attnMaskShape2dOr4d,
  R.lastDimContiguous(),
  R.smRange(80, 121),
  R.noCausalWithMask,
];

const callArb = fc.record({
  B: fc.integer({ min: 0, max: 2 }),
  group: fc.constantFrom(1, 2),
  Hk: fc.integer({ min: 1, max: 2 }),
  Sq: fc.integer({ min: 0, max: 3 }),
  Sk: fc.integer({ min: 0, max: 3 }),
  D: fc.constantFrom(1, 8, 13, 64, 72),
  Dv: fc.option(fc.constantFrom(8, 16), { nil: undefined }),
  dtype: fc.constantFrom<FloatDType>(...FLOAT_DTYPES),
  mask: fc.constantFrom('none', 'bool2d', 'float3d'),
  dropout: fc.boolean(),
  causal: fc.boolean(),
  window: fc.boolean(),
  softcap: fc.boolean(),
  requiresGrad: fc.boolean(),
  transposedKey: fc.boolean(),
});

const backendsArb = fc.array(
  fc.record({
    priority: fc.integer({ min: 0, max: 3 }),
    available: fc.integer({ min: 0, max: 9 }).map((n) => n < 8),
    rules: fc.subarray(RULE_POOL, { maxLength: 4 }),
  }),
  { minLength: 1, maxLength: 5 },
);

type CallSpec = typeof callArb extends fc.Arbitrary<infer T> ? T : never;

function buildCall(c: CallSpec) {
  const Hq = c.Hk * c.group;
  const Dv = c.Dv ?? c.D;
  const query = zeros([c.B, Hq, c.Sq, c.D], { dtype: c.dtype });
  const key = c.transposedKey
    ? zeros([c.B, c.Hk, c.D, c.Sk], { dtype: c.dtype }).transpose(2, 3)
    : zeros([c.B, c.Hk, c.Sk, c.D], { dtype: c.dtype });
  const value = zeros([c.B, c.Hk, c.Sk, Dv], { dtype: c.dtype });
  const opts: SdpaOptions = {
    enableGqa: c.group > 1,
    dropoutP: c.dropout ? 0.1 : 0,
    isCausal: c.causal,
    window: c.window ? [2, 0] : null,
    softcap: c.softcap ? 20 : 0,
    requiresGrad: c.requiresGrad,
    attnMask:
      c.mask === 'bool2d'
        ? zeros([c.Sq, c.Sk], { dtype: 'bool' })
        : c.mask === 'float3d'
          ? zeros([Hq, c.Sq, c.Sk], { dtype: c.dtype })
          : null,
  };
  return { query, key, value, opts };
}

describe('selection properties', () => {
  it('the chosen backend passes all its rules and every backend ahead of it fails one or is unavailable', () => {
    const outcomes = { selectedAfterRejections: 0, none: 0 };
    fc.assert(
      fc.property(callArb, backendsArb, fc.boolean(), (callSpec, specs, restrict) =>
        withIsolatedRegistry(() => {
          const backends = specs.map((s, i) =>
            makeFakeBackend(`b${i}`, {
              priority: s.priority,
              rules: s.rules,
              available: s.available ? true : `b${i} is off`,
            }),
          );
          backends.forEach((b) => registerBackend(b));
          const { query, key, value, opts } = buildCall(callSpec);
          // Half the runs restrict to a reversed subset, which also fixes the order.
          const restriction = restrict
            ? backends
                .filter((_, i) => i % 2 === 0)
                .map((b) => b.name)
                .reverse()
            : undefined;
          if (restriction) opts.backends = restriction;

          const params = normalizeParams(query, key, value, opts);
          const ctx = ruleContext(params.device);
          const order = restriction
            ? restriction.map((n) => backends.find((b) => b.name === n)!)
            : [...backends]
                .map((b, i) => ({ b, i }))
                .sort((x, y) => y.b.defaultPriority - x.b.defaultPriority || x.i - y.i)
                .map((x) => x.b);
          const failing = (b: (typeof backends)[number]) =>
            b.rules.filter((r) => r.check(params, ctx) !== null).map((r) => r.name);
          const runnable = (b: (typeof backends)[number]) => b.availability().ok && failing(b).length === 0;

          const report = explain(query, key, value, opts);
          expect(report.candidates.map((c) => c.backend)).toEqual(order.map((b) => b.name));
          report.candidates.forEach((c, i) => {
            expect(c.reasons.map((r) => r.rule)).toEqual(failing(order[i]!));
            expect(c.available).toBe(order[i]!.availability().ok);
          });

          const expected = order.find(runnable) ?? null;
          expect(report.selected).toBe(expected?.name ?? null);
          if (expected) {
            const idx = order.indexOf(expected);
            if (idx > 0) outcomes.selectedAfterRejections++;
            for (const ahead of order.slice(0, idx)) expect(runnable(ahead)).toBe(false);
            expect(failing(expected)).toEqual([]);
            const result = sdpaForward(query, key, value, opts);
            expect(result.backend).toBe(expected.name);
            expect(expected.calls).toHaveLength(1);
          } else {
            let thrown: unknown;
            try {
              sdpaForward(query, key, value, opts);
            } catch (e) {
              thrown = e;
            }
            outcomes.none++;
            expect(thrown).toBeInstanceOf(NoBackendError);
            expect((thrown as NoBackendError).report.candidates).toEqual(report.candidates);
            for (const b of order) expect(runnable(b)).toBe(false);
          }
        }),
      ),
      { numRuns: 250 },
    );
    // Both interesting outcomes occurred, so the properties above were not checked vacuously.
    expect(outcomes.selectedAfterRejections).toBeGreaterThan(10);
    expect(outcomes.none).toBeGreaterThan(10);
  });
});
