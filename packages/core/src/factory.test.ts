import { describe, expect, it } from 'vitest';
import { empty, fromStorage, full, ones, randn, tensor, zeros } from './factory.js';

describe('factories', () => {
  it('tensor() copies and converts values', () => {
    const src = [1, 2, 3, 4, 5, 6];
    const t = tensor(src, [2, 3]);
    src[0] = 99;
    expect(t.dtype).toBe('float32');
    expect(t.toFloat64Array()[0]).toBe(1);
    expect(tensor([1, 2, 3]).shape).toEqual([3]);
    const raw = new Float32Array([1, 2]);
    const r = tensor(raw, [2]);
    expect(r.storage).not.toBe(raw);
  });

  it('takes a dtype-native typed array as raw storage', () => {
    expect([...tensor(new Uint16Array([0x3c00]), [1], { dtype: 'float16' }).toFloat64Array()]).toEqual([1]);
    // Another typed array is read as numbers.
    expect([...(tensor(new Float64Array([1]), [1], { dtype: 'float16' }).hostData() as Uint16Array)]).toEqual([0x3c00]);
    expect([...tensor(new Uint8Array([0, 7]), [2], { dtype: 'bool' }).hostData()]).toEqual([0, 1]);
    expect([...tensor([3, -4], [2], { dtype: 'int32' }).hostData()]).toEqual([3, -4]);
  });

  it('rejects bad values and shapes', () => {
    expect(() => tensor([1, 2, 3], [2, 2])).toThrow(expect.objectContaining({ code: 'ATTN_SHAPE' }));
    expect(() => tensor([1, 'a' as never], [2])).toThrow(expect.objectContaining({ code: 'ATTN_VALUE' }));
    expect(() => tensor(5 as never, [1])).toThrow(expect.objectContaining({ code: 'ATTN_VALUE' }));
    expect(() => tensor([1.5], [1], { dtype: 'int32' })).toThrow(expect.objectContaining({ code: 'ATTN_VALUE' }));
    expect(() => tensor([1], [1], { dtype: 'float8' as never })).toThrow(
      expect.objectContaining({ code: 'ATTN_DTYPE' }),
    );
    expect(() => zeros([2], { device: 'tpu' as never })).toThrow(expect.objectContaining({ code: 'ATTN_DEVICE' }));
  });

  it('fills', () => {
    expect([...zeros([2, 2], { dtype: 'float64' }).toFloat64Array()]).toEqual([0, 0, 0, 0]);
    expect([...ones([3], { dtype: 'bfloat16' }).toFloat64Array()]).toEqual([1, 1, 1]);
    expect([...full([2], -0.5, { dtype: 'float16' }).toFloat64Array()]).toEqual([-0.5, -0.5]);
    expect(Number.isNaN(full([1], NaN).toFloat64Array()[0])).toBe(true);
    expect(empty([0, 4]).numel).toBe(0);
    expect(zeros([]).numel).toBe(1);
  });

  it('randn is reproducible for a seed, differs across seeds, and is standard normal', () => {
    const a = randn([3, 5, 7], { seed: 42 }).toFloat64Array();
    const b = randn([3, 5, 7], { seed: 42n }).toFloat64Array();
    const c = randn([3, 5, 7], { seed: 43 }).toFloat64Array();
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
    // A prefix of a longer draw is the shorter draw: values depend on the index only.
    expect(randn([10], { seed: 42 }).toFloat64Array()).toEqual(a.slice(0, 10));
    const big = randn([40000], { seed: 7, dtype: 'float64' }).toFloat64Array();
    let mean = 0;
    let sq = 0;
    for (const x of big) {
      mean += x;
      sq += x * x;
    }
    mean /= big.length;
    const variance = sq / big.length - mean * mean;
    expect(Math.abs(mean)).toBeLessThan(0.03);
    expect(Math.abs(variance - 1)).toBeLessThan(0.04);
    expect(big.every(Number.isFinite)).toBe(true);
  });

  it('randn rounds to the dtype and refuses non-floating dtypes', () => {
    const f32 = randn([8], { seed: 1 }).toFloat64Array();
    const f16 = randn([8], { seed: 1, dtype: 'float16' }).toFloat64Array();
    for (let i = 0; i < 8; i++) expect(Math.abs(f16[i]! - f32[i]!)).toBeLessThanOrEqual(Math.abs(f32[i]!) * 2 ** -11);
    expect(() => randn([2], { dtype: 'int32' })).toThrow(expect.objectContaining({ code: 'ATTN_DTYPE' }));
    expect(() => randn([2], { seed: -1 })).toThrow(expect.objectContaining({ code: 'ATTN_SEED' }));
    expect(() => randn([2], { seed: 1n << 64n })).toThrow(expect.objectContaining({ code: 'ATTN_SEED' }));
  });

  it('fromStorage wraps memory without copying', () => {
    const mem = new Float32Array(12);
    const t = fromStorage(mem, [3, 2], { dtype: 'float32', strides: [4, 2], offset: 1 });
    mem[1] = 5;
    mem[3] = 6;
    mem[5] = 7;
    expect([...t.toFloat64Array()].slice(0, 3)).toEqual([5, 6, 7]);
    expect(() => fromStorage(mem, [2], undefined as never)).toThrow(expect.objectContaining({ code: 'ATTN_DTYPE' }));
  });
});
