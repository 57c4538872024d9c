import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ForwardOutputs, Gradients } from './backend.js';
import { AttnError, DisposedError } from './errors.js';
import { full, tensor, zeros } from './factory.js';
import type { SdpaParams } from './params.js';
import { registerBackend, unregisterBackend } from './registry.js';
import { NoBackendError } from './report.js';
import { noVarlen } from './rules.js';
import { explain, sdpa, sdpaBackward, sdpaForward, sdpaForwardAsync } from './sdpa.js';
import { sdpaKernel } from './scope.js';
import { isolateRegistry, makeFakeBackend, nanOutputs } from './testing.js';
import { explainVarlen, sdpaVarlen } from './varlen.js';

let restore: () => void;
beforeEach(() => {
  restore = isolateRegistry({ keepDeviceRuntimes: false });
});
afterEach(() => restore());

/** Outputs filled with a marker value, so tests can tell which backend produced them. */
function marked(value: number) {
  return (p: SdpaParams): ForwardOutputs => ({
    out: full([p.batch, p.headsQ, p.seqQ, p.headDimV], value, { dtype: p.dtype }),
    logsumexp: full([p.batch, p.headsQ, p.seqQ], 0, { dtype: 'float32' }),
  });
}

function gradsLike(p: SdpaParams): Gradients {
  const like = (t: { shape: readonly number[] }) => full(t.shape, 1, { dtype: p.dtype });
  return {
    dq: like(p.query),
    dk: like(p.key),
    dv: like(p.value),
    ...(p.mask?.kind === 'additive' ? { dbias: full(p.mask.tensor.shape, 2, { dtype: p.mask.tensor.dtype }) } : {}),
  };
}

const qkv = () => [zeros([2, 3, 4, 8]), zeros([2, 3, 5, 8]), zeros([2, 3, 5, 6])] as const;

describe('sdpa and sdpaForward', () => {
  it('returns the chosen backend output and the forward record', () => {
    registerBackend(makeFakeBackend('seven', { forward: marked(7) }));
    const [q, k, v] = qkv();
    expect([...sdpa(q, k, v).toFloat64Array()].every((x) => x === 7)).toBe(true);
    const fwd = sdpaForward(q, k, v, { dropoutP: 0.25, dropoutSeed: 1234n, dropoutOffset: 9 });
    expect(fwd.backend).toBe('seven');
    expect(fwd.rng).toEqual({ seed: 1234n, offset: 9 });
    expect(Object.isFrozen(fwd)).toBe(true);
    expect(fwd.out.shape).toEqual([2, 3, 4, 6]);
    expect(fwd.logsumexp.shape).toEqual([2, 3, 4]);
    expect(sdpaForward(q, k, v).rng).toEqual({ seed: 0n, offset: 0 });
  });

  it('sdpa frees the logsumexp it does not hand back, and keeps out alive', () => {
    const made: ForwardOutputs[] = [];
    registerBackend(makeFakeBackend('seven', { forward: (p) => (made.push(marked(7)(p)), made.at(-1)!) }));
    const [q, k, v] = qkv();
    const out = sdpa(q, k, v);
    expect(made).toHaveLength(1);
    expect(made[0]!.logsumexp.disposed).toBe(true);
    expect(out.disposed).toBe(false);
    expect(sdpaForward(q, k, v).logsumexp.disposed).toBe(false);
  });

  it('refuses backend outputs of the wrong shape, dtype or kind', () => {
    const [q, k, v] = qkv();
    registerBackend(
      makeFakeBackend('wrong-shape', {
        forward: (p) => ({
          out: zeros([p.batch, p.headsQ, p.seqQ, p.headDim]),
          logsumexp: zeros([p.batch, p.headsQ, p.seqQ]),
        }),
      }),
    );
    expect(() => sdpa(q, k, v)).toThrow(expect.objectContaining({ code: 'ATTN_BACKEND_OUTPUT' }));
    expect(() => sdpa(q, k, v)).toThrow(/wrong-shape/);
    unregisterBackend('wrong-shape');
    registerBackend(
      makeFakeBackend('f64-lse', {
        forward: (p) => ({ ...nanOutputs(p), logsumexp: zeros([p.batch, p.headsQ, p.seqQ], { dtype: 'float64' }) }),
      }),
    );
    expect(() => sdpa(q, k, v)).toThrow(expect.objectContaining({ code: 'ATTN_BACKEND_OUTPUT' }));
    unregisterBackend('f64-lse');
    registerBackend(makeFakeBackend('nothing', { forward: () => undefined as never }));
    expect(() => sdpa(q, k, v)).toThrow(AttnError);
  });

  it('throws NoBackendError carrying the report', () => {
    registerBackend(
      makeFakeBackend('no-dropout-please', {
        rules: [{ name: 'noDropout', check: (p) => (p.dropout ? 'no dropout' : null) }],
      }),
    );
    const [q, k, v] = qkv();
    try {
      sdpa(q, k, v, { dropoutP: 0.5 });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(NoBackendError);
      expect((e as NoBackendError).report.candidates[0]!.reasons).toEqual([
        { rule: 'noDropout', message: 'no dropout' },
      ]);
    }
  });
});

describe('sdpaForwardAsync', () => {
  it('uses forwardAsync when the backend has it, else forward', async () => {
    const [q, k, v] = qkv();
    registerBackend(makeFakeBackend('async', { priority: 1, forwardAsync: async (p) => marked(3)(p) }));
    registerBackend(makeFakeBackend('sync', { forward: marked(4) }));
    expect((await sdpaForwardAsync(q, k, v)).out.toFloat64Array()[0]).toBe(3);
    expect((await sdpaForwardAsync(q, k, v, { backends: ['sync'] })).out.toFloat64Array()[0]).toBe(4);
  });

  it('selects inside the caller scope and rejects (not throws) on bad input', async () => {
    const [q, k, v] = qkv();
    registerBackend(makeFakeBackend('a', { priority: 1 }));
    registerBackend(makeFakeBackend('b'));
    const pending = sdpaKernel(['b'], () => sdpaForwardAsync(q, k, v));
    expect((await pending).backend).toBe('b');
    const bad = sdpaForwardAsync(q, k, v, { dropoutP: 2 });
    await expect(bad).rejects.toMatchObject({ code: 'ATTN_DROPOUT' });
  });
});

describe('sdpaBackward', () => {
  it('runs backward on the backend that ran forward, with the saved outputs', () => {
    const seen: unknown[] = [];
    registerBackend(
      makeFakeBackend('trainable', {
        priority: 1,
        forward: marked(5),
        backward: (p, saved, g) => {
          seen.push(saved.out, g);
          return gradsLike(p);
        },
      }),
    );
    registerBackend(makeFakeBackend('other'));
    const [q, k, v] = qkv();
    const fwd = sdpaForward(q, k, v, { requiresGrad: true, attnMask: zeros([4, 5]) });
    const gradOut = full([2, 3, 4, 6], 1);
    const grads = sdpaBackward(gradOut, fwd);
    expect(seen).toEqual([fwd.out, gradOut]);
    expect(grads.dq.shape).toEqual([2, 3, 4, 8]);
    expect(grads.dbias?.shape).toEqual([4, 5]);
  });

  it('checks the gradients the backend returns', () => {
    registerBackend(makeFakeBackend('bad-grads', { backward: (p) => ({ ...gradsLike(p), dk: zeros([1]) }) }));
    const [q, k, v] = qkv();
    expect(() => sdpaBackward(zeros([2, 3, 4, 6]), sdpaForward(q, k, v))).toThrow(
      expect.objectContaining({ code: 'ATTN_BACKEND_OUTPUT' }),
    );
    unregisterBackend('bad-grads');
    registerBackend(
      makeFakeBackend('no-dbias', {
        backward: (p) => ({ dq: gradsLike(p).dq, dk: gradsLike(p).dk, dv: gradsLike(p).dv }),
      }),
    );
    const fwd = sdpaForward(q, k, v, { attnMask: zeros([4, 5]) });
    expect(() => sdpaBackward(zeros([2, 3, 4, 6]), fwd)).toThrow(/dbias/);
  });

  it('refuses gradOut that does not match, disposed inputs, and vanished backends', () => {
    registerBackend(makeFakeBackend('t', { backward: gradsLike }));
    const [q, k, v] = qkv();
    const fwd = sdpaForward(q, k, v);
    expect(() => sdpaBackward(zeros([2, 3, 4, 6], { dtype: 'float64' }), fwd)).toThrow(
      expect.objectContaining({ code: 'ATTN_GRAD_OUT' }),
    );
    expect(() => sdpaBackward('x' as never, fwd)).toThrow(expect.objectContaining({ code: 'ATTN_TYPE' }));
    expect(() => sdpaBackward(zeros([2, 3, 4, 6]), {} as never)).toThrow(
      expect.objectContaining({ code: 'ATTN_FORWARD_RESULT' }),
    );
    // A copy is not the result: it could carry any out, logsumexp or backend.
    expect(() => sdpaBackward(zeros([2, 3, 4, 6]), { ...fwd })).toThrow(
      expect.objectContaining({ code: 'ATTN_FORWARD_RESULT' }),
    );
    unregisterBackend('t');
    expect(() => sdpaBackward(zeros([2, 3, 4, 6]), fwd)).toThrow(expect.objectContaining({ code: 'ATTN_NO_BACKWARD' }));
    registerBackend(makeFakeBackend('t', { backward: gradsLike }));
    k.dispose();
    expect(() => sdpaBackward(zeros([2, 3, 4, 6]), fwd)).toThrow(DisposedError);
  });
});

describe('sdpaBackward and the forward params', () => {
  it('runs backward on the params validation produced, which the result does not expose', () => {
    const seen: SdpaParams[] = [];
    registerBackend(makeFakeBackend('t', { backward: (p) => (seen.push(p), gradsLike(p)) }));
    const [q, k, v] = qkv();
    const fwd = sdpaForward(q, k, v, { scale: 0.5 });
    expect('params' in fwd).toBe(false);
    expect(Object.isFrozen(fwd) && Object.isFrozen(fwd.rng)).toBe(true);
    sdpaBackward(zeros([2, 3, 4, 6]), fwd);
    expect(seen[0]!.query).toBe(q);
    expect(seen[0]!.scale).toBe(0.5);
    expect(seen[0]!.seqK).toBe(k.shape[2]);
  });
});

describe('varlen entry points', () => {
  const lens = [0, 3, 5];
  const cu = () => tensor(lens, [3], { dtype: 'int32' });
  const packed = () => [zeros([5, 2, 8]), zeros([5, 2, 8]), zeros([5, 2, 4])] as const;

  it('runs a backend that takes varlen and skips one that does not', () => {
    registerBackend(makeFakeBackend('dense-only', { priority: 2, rules: [noVarlen] }));
    const vb = makeFakeBackend('varlen-ok');
    registerBackend(vb);
    const [q, k, v] = packed();
    const opts = { cuSeqlensQ: cu(), cuSeqlensK: cu(), maxSeqlenQ: 3, maxSeqlenK: 3 };
    const fwd = sdpaVarlen(q, k, v, opts);
    expect(fwd.backend).toBe('varlen-ok');
    expect(fwd.out.shape).toEqual([5, 2, 4]);
    expect(fwd.logsumexp.shape).toEqual([2, 5]);
    expect(vb.calls[0]!.varlen?.seqlensQ).toEqual(new Int32Array(lens));
    const report = explainVarlen(q, k, v, opts);
    expect(report.candidates[0]!.reasons[0]!.rule).toBe('noVarlen');
    expect(report.call).toContain('varlen (2 sequences, max 3/3)');
  });

  it('checks varlen output shapes', () => {
    registerBackend(
      makeFakeBackend('dense-shaped', {
        forward: (p) => ({ out: zeros([1, 2, 3, 4]), logsumexp: zeros([p.headsQ, 5]) }),
      }),
    );
    const [q, k, v] = packed();
    expect(() => sdpaVarlen(q, k, v, { cuSeqlensQ: cu(), cuSeqlensK: cu(), maxSeqlenQ: 3, maxSeqlenK: 3 })).toThrow(
      expect.objectContaining({ code: 'ATTN_BACKEND_OUTPUT' }),
    );
  });
});

describe('explain', () => {
  it('still validates inputs', () => {
    registerBackend(makeFakeBackend('x'));
    const [q, k] = qkv();
    expect(() => explain(q, k, zeros([2, 3, 6, 6]))).toThrow(expect.objectContaining({ code: 'ATTN_SEQ_LEN' }));
  });
});

describe('sdpa and forwardOut', () => {
  const q = () => full([1, 2, 3, 4], 0.5);

  it("runs a backend's forwardOut where it has one, and checks what it returns", () => {
    const b = makeFakeBackend('with-out', { forward: () => expect.unreachable('forward ran instead of forwardOut') });
    let outCalls = 0;
    registerBackend({ ...b, forwardOut: (p) => (outCalls++, marked(7)(p).out) });
    const out = sdpa(q(), q(), q());
    expect(outCalls).toBe(1);
    expect([...out.toFloat64Array()].every((x) => x === 7)).toBe(true);
    unregisterBackend('with-out');
    registerBackend({ ...b, forwardOut: () => full([1, 2, 3, 5], 0) });
    expect(() => sdpa(q(), q(), q())).toThrow(expect.objectContaining({ code: 'ATTN_BACKEND_OUTPUT' }));
  });

  it('falls back to forward for backends without forwardOut, disposing the logsumexp', () => {
    let lse: ReturnType<typeof full> | undefined;
    registerBackend(
      makeFakeBackend('plain', {
        forward: (p) => {
          const o = marked(3)(p);
          lse = o.logsumexp;
          return o;
        },
      }),
    );
    const out = sdpa(q(), q(), q());
    expect(out.toFloat64Array()[0]).toBe(3);
    expect(lse!.disposed).toBe(true);
  });
});
