// sdpaBackwardFrom's selection and hand-off: only backends declaring backwardFrom are candidates, the
// form's own rules decline like any rule, the caller's out and lse reach the backend unchanged, and
// a refusal lists every candidate with its reasons.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ForwardOutputs } from './backend.js';
import { sdpaBackwardFrom } from './backward-from.js';
import { registerDeviceRuntime } from './device-registry.js';
import { zeros } from './factory.js';
import { makeFakeDeviceRuntime } from './fake-device.js';
import { registerBackend } from './registry.js';
import { NoBackendError } from './report.js';
import { rule } from './rule.js';
import { isolateRegistry, makeFakeBackend } from './testing.js';

let restore: () => void;
beforeEach(() => {
  restore = isolateRegistry({ keepDeviceRuntimes: false });
  registerDeviceRuntime(makeFakeDeviceRuntime());
});
afterEach(() => restore());

const q = () => zeros([1, 2, 3, 8]);
const gradsOf = (p: { query: { shape: readonly number[] }; key: { shape: readonly number[] } }) => ({
  dq: zeros(p.query.shape),
  dk: zeros(p.key.shape),
  dv: zeros(p.key.shape),
});

describe('sdpaBackwardFrom selection', () => {
  it('skips backends without the form, runs the first that has it, with the given tensors', () => {
    const seen: ForwardOutputs[] = [];
    registerBackend(makeFakeBackend('no-form', { priority: 10, backward: (p) => gradsOf(p) }));
    registerBackend(
      makeFakeBackend('declines', {
        priority: 5,
        backwardFrom: { rules: [rule('never', () => 'never runs this form')], run: (p) => gradsOf(p) },
      }),
    );
    registerBackend(
      makeFakeBackend('takes-it', {
        priority: 1,
        backwardFrom: {
          run: (p, saved) => {
            seen.push(saved);
            expect(p.requiresGrad).toBe(true);
            return gradsOf(p);
          },
        },
      }),
    );
    const saved = { out: zeros([1, 2, 3, 8]), logsumexp: zeros([1, 2, 3]) };
    const g = sdpaBackwardFrom(q(), q(), q(), saved, zeros([1, 2, 3, 8]));
    expect(g.dq.shape).toEqual([1, 2, 3, 8]);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.out).toBe(saved.out);
    expect(seen[0]!.logsumexp).toBe(saved.logsumexp);
  });

  it('refuses with every candidate and reason when none runs it', () => {
    registerBackend(makeFakeBackend('no-form', { priority: 10, backward: (p) => gradsOf(p) }));
    registerBackend(
      makeFakeBackend('declines', {
        backwardFrom: { rules: [rule('never', () => 'never runs this form')], run: (p) => gradsOf(p) },
      }),
    );
    const saved = { out: zeros([1, 2, 3, 8]), logsumexp: zeros([1, 2, 3]) };
    let err: unknown;
    try {
      sdpaBackwardFrom(q(), q(), q(), saved, zeros([1, 2, 3, 8]));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(NoBackendError);
    const r = (err as NoBackendError).report;
    expect(r.candidates.map((c) => [c.backend, c.reasons.map((x) => x.rule)])).toEqual([
      ['no-form', ['backwardFrom']],
      ['declines', ['never']],
    ]);
    expect(r.call).toContain('backward from a given out and logsumexp');
  });

  it('keeps the backends restriction', () => {
    registerBackend(makeFakeBackend('a', { priority: 10, backwardFrom: { run: (p) => gradsOf(p) } }));
    const b = makeFakeBackend('b', { backwardFrom: { run: (p) => gradsOf(p) } });
    let ran = '';
    registerBackend({
      ...b,
      backwardFrom: {
        run: (p) => {
          ran = 'b';
          return gradsOf(p);
        },
      },
    });
    const saved = { out: zeros([1, 2, 3, 8]), logsumexp: zeros([1, 2, 3]) };
    sdpaBackwardFrom(q(), q(), q(), saved, zeros([1, 2, 3, 8]), { backends: ['b'] });
    expect(ran).toBe('b');
  });
});
