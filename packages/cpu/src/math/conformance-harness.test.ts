// The conformance suite must fail a wrong backend: cpu-math variants with one planted fault each
// (a small error, a NaN, an unwritten logsumexp, another dropout mask, a crash) run single cases.
import { registerBackend, rule, tensor } from '@attn/core';
import type { Backend, ForwardOutputs, SdpaParams, Tensor } from '@attn/core';
import { buildCases, runCase } from '@attn/conformance';
import type { Outcome } from '@attn/conformance';
import { describe, expect, it } from 'vitest';
import { backwardMath, cpuMathBackend, forwardMath } from '../index.js';

const CPU = { type: 'cpu', index: 0 } as const;
const cases = buildCases({ quick: true });

function variant(name: string, change: Partial<Backend>): string {
  registerBackend({ ...cpuMathBackend, name, description: `cpu-math with a planted fault (${name})`, ...change });
  return name;
}

/** The same tensor with fn applied to its values (logical order). */
function mapped(t: Tensor, fn: (x: number, n: number) => number): Tensor {
  return tensor(t.toFloat64Array().map(fn), t.shape, { dtype: t.dtype });
}

function forwardWith(change: (o: ForwardOutputs, p: SdpaParams) => ForwardOutputs): Partial<Backend> {
  return { forward: (p) => change(forwardMath(p), p) };
}

function run(backend: string, caseName: string): Outcome {
  const spec = cases.find((c) => c.name === caseName);
  if (!spec) throw new Error(`no case ${caseName}`);
  return runCase(backend, spec, 12345n, CPU);
}

function failed(outcome: Outcome, what: string): string | undefined {
  if (outcome.ran === 'declined') throw new Error(`declined: ${outcome.reasons.join('; ')}`);
  return outcome.verdicts.find((v) => v.message.startsWith(`${what}:`) && !v.ok)?.message;
}

describe('the conformance suite fails a faulty backend', () => {
  it('passes cpu-math itself on the cases used below', () => {
    for (const name of [
      'plain/float16',
      'plain/float32',
      'bool-mask-full-fully-masked-rows/float32',
      'dropout/bfloat16',
    ]) {
      const o = run('cpu-math', name);
      expect(o.ran === 'declined' ? [] : o.verdicts.filter((v) => !v.ok)).toEqual([]);
    }
  });

  it('an error of 1% in out', () => {
    const b = variant(
      'fault-1pct',
      forwardWith((o) => ({ ...o, out: mapped(o.out, (x) => x * 1.01) })),
    );
    expect(failed(run(b, 'plain/float16'), 'out')).toMatch(/error .* > bound/);
    expect(failed(run(b, 'plain/float32'), 'out')).toMatch(/error .* > bound/);
  });

  it('one NaN in out', () => {
    const b = variant(
      'fault-nan',
      forwardWith((o) => ({ ...o, out: mapped(o.out, (x, n) => (n === 3 ? NaN : x)) })),
    );
    expect(failed(run(b, 'plain/float32'), 'out')).toMatch(/NaN/);
  });

  it('logsumexp 0 (unwritten) instead of -inf on fully masked rows', () => {
    const b = variant(
      'fault-lse',
      forwardWith((o) => ({ ...o, logsumexp: mapped(o.logsumexp, (x) => (x === -Infinity ? 0 : x)) })),
    );
    expect(failed(run(b, 'bool-mask-full-fully-masked-rows/float32'), 'logsumexp')).toMatch(/infinite/);
  });

  it('a dropout mask other than the Philox mapping gives', () => {
    const b = variant('fault-dropout', {
      forward: (p) => forwardMath(p.dropout ? { ...p, dropout: { ...p.dropout, offset: p.dropout.offset + 1 } } : p),
    });
    expect(failed(run(b, 'dropout/bfloat16'), 'out')).toBeDefined();
  });

  it("a gradient off by 0.1% (float32) or 10% (half types), whatever the gradient allowance (the fused form's Delta and P) permits", () => {
    const off = (factor: number) =>
      variant(`fault-dq-x${factor}`, {
        backward: (p, saved, gradOut) => {
          const g = backwardMath(p, saved, gradOut);
          return { ...g, dq: mapped(g.dq, (x) => x * factor) };
        },
      });
    const [small, large] = [off(1.001), off(1.1)];
    for (const [b, name] of [
      [small, 'plain/float32'],
      [small, 'softcap/float32'],
      [small, 'dropout-causal-gqa/float32'],
      [large, 'plain/bfloat16'],
      [large, 'dropout/bfloat16'],
      [large, 'scale/float16'],
    ] as const) {
      expect(failed(run(b, name), 'dq'), name).toMatch(/dq: error \(beyond 2 x its allowance\) .* > bound/);
    }
  });

  it('declines reported by rules are declines, with the reasons', () => {
    const b = variant('fault-declines', { rules: [rule('noThanks', () => 'this backend runs nothing; use cpu-math')] });
    const o = run(b, 'plain/float32');
    expect(o).toEqual({ ran: 'declined', reasons: ['noThanks: this backend runs nothing; use cpu-math'] });
  });

  it('a backend that accepts a call and then throws fails the case', () => {
    const b = variant('fault-throws', {
      forward: () => {
        throw new Error('kernel exploded');
      },
    });
    expect(() => run(b, 'plain/float32')).toThrow(/kernel exploded/);
  });

  it('a forward-only backend runs forward only', () => {
    const b = variant('fault-forward-only', { backward: undefined });
    expect(run(b, 'plain/float32').ran).toBe('forward');
  });
});
