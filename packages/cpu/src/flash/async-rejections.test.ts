// No promise inside the library may reject while nobody listens (Node's default
// --unhandled-rejections=throw would kill an app without a global handler). Async calls run with
// their inputs disposed and dropped mid-flight, with invalid inputs, and with kernels refusing the
// call; every promise the test holds gets its handler at once, so any 'unhandledRejection' or
// 'rejectionHandled' event can only come from a promise the library made and left alone.
import { randn, sdpaForwardAsync, sdpaVarlenAsync, tensor } from '@attn/core';
import type { Tensor } from '@attn/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import '../index.js';
import { addon } from './native.js';

const load = addon();
const events: string[] = [];
const onUnhandled = (reason: unknown) =>
  events.push(`unhandledRejection: ${reason instanceof Error ? reason.message : String(reason)}`);
const onHandledLate = () => events.push('rejectionHandled (a rejection got its handler late)');

/** Lets Node run its unhandled-rejection check: after microtasks and a few macrotask turns. */
const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

beforeEach(() => {
  events.length = 0;
  process.on('unhandledRejection', onUnhandled);
  process.on('rejectionHandled', onHandledLate);
});
afterEach(() => {
  process.off('unhandledRejection', onUnhandled);
  process.off('rejectionHandled', onHandledLate);
});

/** Settles p into 'ok' or the error's code, attaching the handler synchronously. */
function outcome(p: Promise<unknown>): Promise<string> {
  return p.then(
    () => 'ok',
    (e: unknown) => String((e as { code?: unknown }).code ?? 'uncoded'),
  );
}

describe.skipIf(!load.ok)('async calls leave no promise unhandled', () => {
  it('inputs disposed and dropped while the cpu-flash kernel runs', async () => {
    const pending: Promise<string>[] = [];
    for (let i = 0; i < 24; i++) {
      let q: Tensor | null = randn([1, 4, 384, 64], { seed: i });
      let k: Tensor | null = randn([1, 4, 384, 64], { seed: i + 100 });
      let v: Tensor | null = randn([1, 4, 384, 64], { seed: i + 200 });
      pending.push(outcome(sdpaForwardAsync(q, k, v, { isCausal: i % 2 === 0 })));
      q.dispose();
      k.dispose();
      v.dispose();
      q = k = v = null;
    }
    const results = await Promise.all(pending);
    await settle();
    expect(results.every((r) => r === 'ok')).toBe(true);
    expect(events).toEqual([]);
  });

  it('calls that reject: disposed before the call, invalid options, a refused backend, varlen errors', async () => {
    const q = randn([1, 2, 16, 8], { seed: 1 });
    const gone = randn([1, 2, 16, 8], { seed: 2 });
    gone.dispose();
    const cu = tensor([0, 16], [2], { dtype: 'int32' });
    const packed = randn([16, 2, 8], { seed: 3 });
    const calls = [
      sdpaForwardAsync(q, gone, q),
      sdpaForwardAsync(q, q, q, { dropoutP: '0.1' as never }),
      sdpaForwardAsync(q, q, q, { backends: ['no-such-backend'] }),
      sdpaForwardAsync(q, q, q, { scale: 1e39, backends: ['cpu-flash'] }),
      sdpaVarlenAsync(packed, packed, packed, { cuSeqlensQ: cu, cuSeqlensK: cu, maxSeqlenQ: 3, maxSeqlenK: 16 }),
    ];
    const codes = await Promise.all(calls.map(outcome));
    await settle();
    expect(codes).toEqual(['ATTN_DISPOSED', 'ATTN_DROPOUT', 'ATTN_UNKNOWN_BACKEND', 'ATTN_NO_BACKEND', 'ATTN_VARLEN']);
    expect(events).toEqual([]);
  });
});
