// Invalid calls, each of which must fail with an AttnError carrying a stable code: never a bare
// TypeError, never a crash, never a result. Drawn as (kind, entry point, dtype) so the child
// process rebuilds them; every kind names the mistake it makes.
import fc from 'fast-check';
import {
  AttnError,
  explain,
  randn,
  sdpa,
  sdpaBackward,
  sdpaForward,
  sdpaForwardAsync,
  sdpaVarlen,
  Tensor,
  tensor,
  zeros,
} from '@attn/core';
import type { FloatDType, SdpaOptions } from '@attn/core';

type Qkv = [Tensor, Tensor, Tensor];
type Call = (q: unknown, k: unknown, v: unknown, opts?: unknown) => unknown;

const qkv = (dtype: FloatDType): Qkv => [
  randn([2, 2, 5, 8], { dtype, seed: 1 }),
  randn([2, 2, 7, 8], { dtype, seed: 2 }),
  randn([2, 2, 7, 8], { dtype, seed: 3 }),
];
/** key and value of qkv, for calls that replace the query. */
const kv = (dtype: FloatDType): [Tensor, Tensor] => {
  const [, k, v] = qkv(dtype);
  return [k, v];
};

/** Each kind: the call's arguments (q, k, v, options), or a whole call of its own (backward, varlen). */
const KINDS: Record<string, (dtype: FloatDType, call: Call) => unknown> = {
  'query rank 3': (d, call) => call(randn([2, 5, 8], { dtype: d }), ...kv(d)),
  'dtype mismatch': (d, call) => {
    const [q, k] = qkv(d);
    return call(q, k, randn([2, 2, 7, 8], { dtype: d === 'float32' ? 'float16' : 'float32' }));
  },
  'bool query': (_d, call) => {
    const b = zeros([1, 1, 2, 2], { dtype: 'bool' });
    return call(b, b, b);
  },
  'batch mismatch': (d, call) => call(randn([3, 2, 5, 8], { dtype: d }), ...kv(d)),
  'heads differ without enableGqa': (d, call) => call(randn([2, 4, 5, 8], { dtype: d }), ...kv(d)),
  'head dims differ': (d, call) => call(randn([2, 2, 5, 16], { dtype: d }), ...kv(d)),
  'key and value lengths differ': (d, call) => {
    const [q, k] = qkv(d);
    return call(q, k, randn([2, 2, 6, 8], { dtype: d }));
  },
  'mask not broadcastable': (d, call) => call(...qkv(d), { attnMask: zeros([5, 6]) }),
  'int32 mask': (d, call) => call(...qkv(d), { attnMask: zeros([5, 7], { dtype: 'int32' }) }),
  'dropoutP 1': (d, call) => call(...qkv(d), { dropoutP: 1 }),
  "dropoutP the string '0.1'": (d, call) => call(...qkv(d), { dropoutP: '0.1' }),
  'scale 0': (d, call) => call(...qkv(d), { scale: 0 }),
  'scale NaN': (d, call) => call(...qkv(d), { scale: NaN }),
  'scale an object without a primitive form': (d, call) => call(...qkv(d), { scale: Object.create(null) }),
  'window [-2, 0]': (d, call) => call(...qkv(d), { window: [-2, 0] }),
  'window of bigints': (d, call) => call(...qkv(d), { window: [1n, 0] }),
  'softcap -1': (d, call) => call(...qkv(d), { softcap: -1 }),
  'alibi slopes of the wrong shape': (d, call) => call(...qkv(d), { alibiSlopes: zeros([3]) }),
  'unknown option': (d, call) => call(...qkv(d), { is_causal: true }),
  'options a number': (d, call) => call(...qkv(d), 5),
  'unknown backend': (d, call) => call(...qkv(d), { backends: ['no-such-backend'] }),
  'query a plain object': (d, call) => call({ shape: [2, 2, 5, 8], dtype: d }, ...kv(d)),
  'query Object.create(Tensor.prototype)': (d, call) => call(Object.create(Tensor.prototype), ...kv(d)),
  'query null': (d, call) => call(null, ...kv(d)),
  'disposed key': (d, call) => {
    const [q, k, v] = qkv(d);
    k.dispose();
    return call(q, k, v);
  },
  'query over a detached ArrayBuffer': (d, call) => {
    const [q, k, v] = qkv(d);
    const buffer = q.hostData().buffer as ArrayBuffer;
    structuredClone(buffer, { transfer: [buffer] });
    return call(q, k, v);
  },
  'more than 2^53 scores': (_d, call) => {
    const q = zeros([1, 1, 1, 1]).expand([2 ** 14, 2 ** 14, 2 ** 14, 1]);
    return call(q, q, q);
  },
  'backward of a copied forward result': (d) => {
    const fwd = sdpaForward(...qkv(d));
    return sdpaBackward(randn(fwd.out.shape, { dtype: d }), { ...fwd });
  },
  'backward of a hand-built result with params': (d) => {
    const [q, k, v] = qkv(d);
    const fwd = sdpaForward(q, k, v);
    return sdpaBackward(randn(fwd.out.shape, { dtype: d }), {
      out: fwd.out,
      logsumexp: fwd.logsumexp,
      rng: fwd.rng,
      backend: 'cpu-math',
      params: { query: q },
    } as never);
  },
  'backward with gradOut of the wrong shape': (d) => {
    const fwd = sdpaForward(...qkv(d), { requiresGrad: true } as SdpaOptions);
    return sdpaBackward(randn([2, 2, 5, 9], { dtype: d }), fwd);
  },
  'backward after the key was disposed': (d) => {
    const [q, k, v] = qkv(d);
    const fwd = sdpaForward(q, k, v, { requiresGrad: true });
    k.dispose();
    return sdpaBackward(randn(fwd.out.shape, { dtype: d }), fwd);
  },
  'varlen offsets not ending at the total': (d) => {
    const t = randn([7, 2, 8], { dtype: d });
    const cu = tensor([0, 3, 6], [3], { dtype: 'int32' });
    return sdpaVarlen(t, t, t, { cuSeqlensQ: cu, cuSeqlensK: cu, maxSeqlenQ: 3, maxSeqlenK: 3 });
  },
};

export const INVALID_KINDS: readonly string[] = Object.keys(KINDS);

const ENTRY_POINTS: Record<string, Call> = {
  sdpa: (q, k, v, o) => sdpa(q as Tensor, k as Tensor, v as Tensor, o as SdpaOptions),
  sdpaForward: (q, k, v, o) => sdpaForward(q as Tensor, k as Tensor, v as Tensor, o as SdpaOptions),
  sdpaForwardAsync: (q, k, v, o) => sdpaForwardAsync(q as Tensor, k as Tensor, v as Tensor, o as SdpaOptions),
  explain: (q, k, v, o) => explain(q as Tensor, k as Tensor, v as Tensor, o as SdpaOptions),
};

export interface InvalidCase {
  readonly kind: string;
  readonly entry: string;
  readonly dtype: FloatDType;
}

export const invalidCase: fc.Arbitrary<InvalidCase> = fc.record({
  kind: fc.constantFrom(...INVALID_KINDS),
  entry: fc.constantFrom(...Object.keys(ENTRY_POINTS)),
  dtype: fc.constantFrom<FloatDType>('float32', 'float16', 'bfloat16', 'float64'),
});

/** null when the call failed as it must (an AttnError with a code), else what went wrong. */
export async function checkInvalid(c: InvalidCase): Promise<string | null> {
  const make = KINDS[c.kind];
  const entry = ENTRY_POINTS[c.entry];
  if (!make || !entry) return `unknown invalid case ${JSON.stringify(c)}`;
  let error: unknown;
  try {
    await make(c.dtype, entry);
    return 'the call succeeded';
  } catch (e) {
    error = e;
  }
  if (!(error instanceof AttnError))
    return `not an AttnError: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`;
  if (!/^ATTN_[A-Z0-9_]+$/.test(error.code)) return `an AttnError without a stable code: ${String(error.code)}`;
  if (error.message.length < 20) return `a message too short to say what to change: ${error.message}`;
  return null;
}
