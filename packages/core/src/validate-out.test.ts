// The out option: validated with ATTN_OUT (shape, dtype, device, contiguity, aliasing, requiresGrad),
// disposed or forged tensors refused with their codes, on a fresh signature and on a cached one; a
// backend that returns another tensor than the given out is caught (ATTN_BACKEND_OUTPUT).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clearCallCache } from './call-cache.js';
import { registerDeviceRuntime } from './device-registry.js';
import { empty, fromStorage, tensor, zeros } from './factory.js';
import { makeFakeDeviceRuntime } from './fake-device.js';
import { forwardOutput } from './output-alloc.js';
import type { SdpaParams } from './params.js';
import { registerBackend } from './registry.js';
import { sdpa, sdpaForward } from './sdpa.js';
import { Tensor } from './tensor.js';
import { isolateRegistry, makeFakeBackend } from './testing.js';
import { sdpaVarlen } from './varlen.js';

const code = (c: string) => expect.objectContaining({ code: c });

/** A backend that writes through forwardOutput, as the real ones do. */
function writer(name = 'writer', priority = 1) {
  return makeFakeBackend(name, {
    priority,
    forward: (p: SdpaParams) => {
      const shape = p.varlen ? [p.query.shape[0]!, p.headsQ, p.headDimV] : [p.batch, p.headsQ, p.seqQ, p.headDimV];
      const out = forwardOutput(p, shape, { dtype: p.dtype, device: p.device });
      const lse = p.varlen
        ? zeros([p.headsQ, p.query.shape[0]!], { device: p.device })
        : zeros([p.batch, p.headsQ, p.seqQ], { device: p.device });
      return { out, logsumexp: lse };
    },
  });
}

describe('out', () => {
  let restore: () => void;
  beforeEach(() => {
    restore = isolateRegistry({ keepDeviceRuntimes: false });
    clearCallCache();
    registerBackend(writer());
  });
  afterEach(() => restore());

  const qkv = (): [Tensor, Tensor, Tensor] => [zeros([2, 3, 4, 8]), zeros([2, 3, 6, 8]), zeros([2, 3, 6, 5])];

  it('is the tensor the call returns, on a fresh and on a cached signature', () => {
    const [q, k, v] = qkv();
    const out = empty([2, 3, 4, 5]);
    expect(sdpa(q, k, v, { out })).toBe(out);
    const out2 = empty([2, 3, 4, 5]);
    expect(sdpaForward(q, k, v, { out: out2 }).out).toBe(out2);
  });

  it('refuses a wrong shape, dtype or device, a strided view and requiresGrad with ATTN_OUT', () => {
    registerDeviceRuntime(makeFakeDeviceRuntime());
    const [q, k, v] = qkv();
    for (const out of [
      empty([2, 3, 4, 8]),
      empty([2, 3, 4, 5], { dtype: 'float64' }),
      empty([2, 3, 4, 5], { device: 'cuda' }),
      empty([2, 4, 3, 5]).transpose(1, 2),
    ]) {
      expect(() => sdpa(q, k, v, { out })).toThrow(code('ATTN_OUT'));
    }
    expect(() => sdpa(q, k, v, { out: empty([2, 3, 4, 5]), requiresGrad: true })).toThrow(code('ATTN_OUT'));
  });

  it('refuses an out that shares memory with an input, also on a cached signature', () => {
    const q = zeros([2, 3, 4, 8]);
    const k = zeros([2, 3, 4, 8]);
    expect(() => sdpa(q, k, k, { out: q })).toThrow(code('ATTN_OUT'));
    sdpa(q, k, k, { out: empty([2, 3, 4, 8]) }); // caches the signature
    expect(() => sdpa(q, k, k, { out: k })).toThrow(code('ATTN_OUT'));
    // Two tensors over one ArrayBuffer, overlapping: same layouts as the cached call.
    const shared = new Float32Array(2 * 3 * 4 * 8 * 2);
    const over = (from: number) => fromStorage(shared.subarray(from, from + 192), [2, 3, 4, 8], { dtype: 'float32' });
    const q2 = over(0);
    const overlapping = over(100);
    const apart = over(192);
    expect(() => sdpa(q2, k, k, { out: overlapping })).toThrow(code('ATTN_OUT'));
    expect(sdpa(q2, k, k, { out: apart })).toBe(apart);
  });

  it('refuses device outs that overlap an input by address', () => {
    const rt = makeFakeDeviceRuntime();
    registerDeviceRuntime(rt);
    registerBackend(writer('device-writer', 1) as never);
    const cudaWriter = { ...writer('cuda-writer'), deviceType: 'cuda' as const };
    registerBackend(cudaWriter);
    const storage = rt.allocate(4 * 2 * 64, 0);
    const q = fromStorage(storage, [1, 1, 4, 8], { dtype: 'float32' });
    const view = fromStorage(storage, [1, 1, 4, 8], { dtype: 'float32', offset: 16 });
    const k = zeros([1, 1, 4, 8], { device: 'cuda' });
    expect(() => sdpa(q, k, k, { out: view })).toThrow(code('ATTN_OUT'));
    expect(sdpa(q, k, k, { out: zeros([1, 1, 4, 8], { device: 'cuda' }) }).device.type).toBe('cuda');
  });

  it('refuses a disposed or forged out with ATTN_DISPOSED / ATTN_TYPE', () => {
    const [q, k, v] = qkv();
    sdpa(q, k, v, { out: empty([2, 3, 4, 5]) });
    const gone = empty([2, 3, 4, 5]);
    gone.dispose();
    expect(() => sdpa(q, k, v, { out: gone })).toThrow(code('ATTN_DISPOSED'));
    expect(() => sdpa(q, k, v, { out: Object.create(Tensor.prototype) as Tensor })).toThrow(code('ATTN_TYPE'));
  });

  it('takes varlen outs [totalQ, Hq, Dv]', () => {
    const q = zeros([3, 2, 8]);
    const k = zeros([5, 2, 8]);
    const i32 = (values: number[]) => tensor(values, [values.length], { dtype: 'int32' });
    const opts = { cuSeqlensQ: i32([0, 1, 3]), cuSeqlensK: i32([0, 2, 5]), maxSeqlenQ: 2, maxSeqlenK: 3 };
    const out = empty([3, 2, 8]);
    expect(sdpaVarlen(q, k, k, { ...opts, out }).out).toBe(out);
    expect(() => sdpaVarlen(q, k, k, { ...opts, out: empty([2, 3, 4, 8]) })).toThrow(code('ATTN_OUT'));
  });

  it('catches a backend that returns its own tensor instead of writing into out', () => {
    registerBackend(makeFakeBackend('ignores-out', { priority: 9 }));
    const [q, k, v] = qkv();
    expect(() => sdpa(q, k, v, { out: empty([2, 3, 4, 5]) })).toThrow(code('ATTN_BACKEND_OUTPUT'));
  });
});
