import { describe, expect, it } from 'vitest';
import { AttnInputError, DisposedError } from './errors.js';
import { fromStorage, tensor, zeros } from './factory.js';
import { float32ToBfloat16Bits, float32ToFloat16Bits } from './half.js';
import { Tensor } from './tensor.js';

const iota = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/** Element at a multi-index, read straight from host storage through the strides. */
function at(t: Tensor, idx: number[]): number {
  const data = t.hostData();
  return data[t.offset + idx.reduce((s, i, d) => s + i * t.strides[d]!, 0)]!;
}

describe('Tensor views', () => {
  const t = tensor(iota(24), [2, 3, 4]);

  it('transposes without copying', () => {
    const tt = t.transpose(0, 2);
    expect(tt.shape).toEqual([4, 3, 2]);
    expect(tt.strides).toEqual([1, 4, 12]);
    expect(tt.storage).toBe(t.storage);
    expect(at(tt, [3, 2, 1])).toBe(at(t, [1, 2, 3]));
    expect(tt.isContiguous()).toBe(false);
    expect(t.transpose(-1, -3).shape).toEqual([4, 3, 2]);
  });

  it('permutes, and rejects bad permutations', () => {
    const p = t.permute([1, 2, 0]);
    expect(p.shape).toEqual([3, 4, 2]);
    expect(at(p, [2, 1, 1])).toBe(at(t, [1, 2, 1]));
    expect(() => t.permute([0, 0, 1])).toThrow(expect.objectContaining({ code: 'ATTN_DIM' }));
    expect(() => t.permute([0, 1])).toThrow(AttnInputError);
  });

  it('narrows with an offset', () => {
    const n = t.narrow(2, 1, 2);
    expect(n.shape).toEqual([2, 3, 2]);
    expect(n.offset).toBe(1);
    expect([...n.toFloat64Array()]).toEqual([1, 2, 5, 6, 9, 10, 13, 14, 17, 18, 21, 22]);
    expect(t.narrow(0, 2, 0).numel).toBe(0);
    expect(() => t.narrow(1, 2, 2)).toThrow(expect.objectContaining({ code: 'ATTN_DIM' }));
  });

  it('expands size-1 dims with stride 0 and adds leading dims', () => {
    const col = tensor([1, 2, 3], [3, 1]);
    const e = col.expand([2, 3, 4]);
    expect(e.strides).toEqual([0, 1, 0]);
    expect([...e.toFloat64Array()].slice(0, 8)).toEqual([1, 1, 1, 1, 2, 2, 2, 2]);
    expect(col.expand([-1, 5]).shape).toEqual([3, 5]);
    expect(() => col.expand([2, 2])).toThrow(expect.objectContaining({ code: 'ATTN_SHAPE' }));
    expect(() => col.expand([1])).toThrow(AttnInputError);
  });

  it('unsqueezes anywhere', () => {
    expect(t.unsqueeze(0).shape).toEqual([1, 2, 3, 4]);
    expect(t.unsqueeze(-1).shape).toEqual([2, 3, 4, 1]);
    expect(t.unsqueeze(1).strides).toEqual([12, 12, 4, 1]);
    expect([...t.unsqueeze(2).toFloat64Array()]).toEqual(iota(24));
  });

  it('reshapes as a view when possible and copies otherwise', () => {
    const r = t.reshape([6, -1]);
    expect(r.shape).toEqual([6, 4]);
    expect(r.storage).toBe(t.storage);
    const tr = t.transpose(1, 2);
    const flat = tr.reshape([24]);
    expect(flat.storage).not.toBe(t.storage);
    expect([...flat.toFloat64Array()]).toEqual([...tr.toFloat64Array()]);
    expect(() => t.reshape([5, -1])).toThrow(expect.objectContaining({ code: 'ATTN_SHAPE' }));
    expect(() => t.reshape([-1, -1])).toThrow(AttnInputError);
    expect(() => t.reshape([25])).toThrow(AttnInputError);
  });

  it('contiguous() copies only when needed, in logical order', () => {
    expect(t.contiguous()).toBe(t);
    const c = t.permute([2, 0, 1]).contiguous();
    expect(c.isContiguous()).toBe(true);
    expect([...c.toFloat64Array()]).toEqual([...t.permute([2, 0, 1]).toFloat64Array()]);
    expect(c.toFloat64Array()[1]).toBe(at(t, [0, 1, 0]));
  });
});

describe('Tensor data', () => {
  it('reads logical order from any strides as float32 and float64', () => {
    const t = tensor(iota(6), [2, 3], { dtype: 'float64' }).transpose(0, 1);
    expect([...t.toFloat64Array()]).toEqual([0, 3, 1, 4, 2, 5]);
    expect(t.toFloat32Array()).toBeInstanceOf(Float32Array);
  });

  it('stores half types as rounded bits and reads them back', () => {
    const h = tensor([1, 0.1, 65520], [3], { dtype: 'float16' });
    expect([...(h.hostData() as Uint16Array)]).toEqual([0x3c00, float32ToFloat16Bits(0.1), 0x7c00]);
    expect(h.toFloat64Array()[2]).toBe(Infinity);
    const b = tensor([1, 0.1], [2], { dtype: 'bfloat16' });
    expect([...(b.hostData() as Uint16Array)]).toEqual([0x3f80, float32ToBfloat16Bits(0.1)]);
  });

  it('converts dtypes', () => {
    const f = tensor([1.5, -2.7, 0, NaN], [4]);
    expect([...f.toDType('bool').toFloat64Array()]).toEqual([1, 1, 0, 1]);
    expect(f.toDType('float32')).toBe(f);
    expect([...tensor([1.5, -2.7], [2]).toDType('int32').toFloat64Array()]).toEqual([1, -2]);
    expect(() => f.toDType('int32')).toThrow(expect.objectContaining({ code: 'ATTN_VALUE' }));
    const h = tensor([1, 2, 3, 4], [2, 2], { dtype: 'float64' }).transpose(0, 1).toDType('float16');
    expect(h.dtype).toBe('float16');
    expect([...h.toFloat64Array()]).toEqual([1, 3, 2, 4]);
    expect(() => f.toDType('float8' as never)).toThrow(expect.objectContaining({ code: 'ATTN_DTYPE' }));
  });

  it('gives hostData on the CPU', () => {
    const t = zeros([2, 2]);
    expect(t.hostData()).toBe(t.storage);
    expect(() => t.dataPointer()).toThrow(expect.objectContaining({ code: 'ATTN_DEVICE' }));
  });

  it('to(cpu) is the identity', () => {
    const t = zeros([2]);
    expect(t.to('cpu')).toBe(t);
    expect(() => t.to('gpu' as never)).toThrow(expect.objectContaining({ code: 'ATTN_DEVICE' }));
  });
});

describe('Tensor construction checks', () => {
  it('rejects storage of the wrong type', () => {
    expect(() => new Tensor({ storage: new Float64Array(4), dtype: 'float32', shape: [4] })).toThrow(
      expect.objectContaining({ code: 'ATTN_STORAGE' }),
    );
    expect(() => new Tensor({ storage: new Int16Array(4) as never, dtype: 'float16', shape: [4] })).toThrow(
      AttnInputError,
    );
  });

  it('rejects views that reach past the storage', () => {
    expect(() => fromStorage(new Float32Array(6), [2, 3], { dtype: 'float32', offset: 1 })).toThrow(
      expect.objectContaining({ code: 'ATTN_STRIDES' }),
    );
    expect(() => fromStorage(new Float32Array(6), [2, 3], { dtype: 'float32', strides: [3] })).toThrow(AttnInputError);
    expect(() => fromStorage(new Float32Array(6), [2, 3], { dtype: 'float32', strides: [-3, 1] })).toThrow(
      AttnInputError,
    );
    // Empty views may sit anywhere.
    expect(fromStorage(new Float32Array(0), [0, 3], { dtype: 'float32', offset: 0 }).numel).toBe(0);
  });

  it('describes itself', () => {
    expect(String(zeros([2, 3], { dtype: 'bfloat16' }))).toBe('Tensor(bfloat16, [2, 3], cpu)');
  });
});

describe('dispose', () => {
  it('makes every use an error, for host tensors and their views', () => {
    const t = tensor([1, 2, 3, 4], [2, 2]);
    const view = t.transpose(0, 1);
    t.dispose();
    expect(t.disposed).toBe(true);
    expect(view.disposed).toBe(true);
    expect(() => t.toFloat32Array()).toThrow(DisposedError);
    expect(() => view.contiguous()).toThrow(DisposedError);
    expect(() => t.hostData()).toThrow(expect.objectContaining({ code: 'ATTN_DISPOSED' }));
    expect(() => t.reshape([4])).toThrow(DisposedError);
    expect(() => t.dispose()).not.toThrow();
  });

  it('copies made before dispose stay alive', () => {
    const t = tensor([1, 2, 3, 4], [2, 2]);
    const copy = t.transpose(0, 1).contiguous();
    t.dispose();
    expect([...copy.toFloat64Array()]).toEqual([1, 3, 2, 4]);
  });
});

describe('storage that changes under a tensor', () => {
  it('a detached ArrayBuffer is a coded error on every read, never NaN or zeros', () => {
    const data = new Float32Array([1, 2, 3, 4]);
    const t = fromStorage(data, [2, 2], { dtype: 'float32' });
    structuredClone(data.buffer, { transfer: [data.buffer] });
    for (const read of [() => t.toFloat64Array(), () => t.hostData(), () => t.contiguous(), () => t.transpose(0, 1)]) {
      expect(read).toThrow(expect.objectContaining({ code: 'ATTN_STORAGE' }));
    }
  });

  it('a resizable ArrayBuffer shrunk below the view is the same error', () => {
    // Resizable buffers are ES2024 (Node 20 has them; the project's TS lib predates them).
    type Resizable = ArrayBuffer & { resize(bytes: number): void };
    const buffer = new (ArrayBuffer as unknown as new (bytes: number, o: { maxByteLength: number }) => Resizable)(16, {
      maxByteLength: 32,
    });
    const t = fromStorage(new Float32Array(buffer), [4], { dtype: 'float32' });
    expect([...t.toFloat64Array()]).toEqual([0, 0, 0, 0]);
    buffer.resize(8);
    expect(() => t.toFloat64Array()).toThrow(expect.objectContaining({ code: 'ATTN_STORAGE' }));
  });
});

describe('Tensor.isTensor', () => {
  it('is a brand check: Object.create(Tensor.prototype) is not a tensor', () => {
    expect(Tensor.isTensor(zeros([1]))).toBe(true);
    expect(Tensor.isTensor(Object.create(Tensor.prototype))).toBe(false);
    expect(Tensor.isTensor({ shape: [1], dtype: 'float32' })).toBe(false);
    expect(Tensor.isTensor(null)).toBe(false);
  });
});
