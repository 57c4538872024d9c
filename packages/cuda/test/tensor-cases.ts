// Tensor data and views shared by the round-trip suites (GPU and simulated).
import { type DType, type HostArray, type Tensor, tensor } from '@attn/core';
import { expect } from 'vitest';
import { makeRng } from './random.js';

export const DTYPES: readonly DType[] = ['float64', 'float32', 'float16', 'bfloat16', 'float8_e4m3', 'bool', 'int32'];

/** Host data for a dtype with its special values first (NaN, infinities, signed zero, subnormals, limits). */
export function sampleData(dtype: DType, n: number, seed?: number): HostArray {
  const rng = makeRng(seed);
  switch (dtype) {
    case 'float64': {
      const a = new Float64Array(n).map(() => (rng.u32() / 2 ** 32 - 0.5) * 2 ** (rng.int(40) - 20));
      a.set([NaN, Infinity, -Infinity, -0, 5e-324, 1.7976931348623157e308, -2.2250738585072014e-308].slice(0, n));
      return a;
    }
    case 'float32': {
      const a = new Float32Array(n).map(() => (rng.u32() / 2 ** 32 - 0.5) * 2 ** (rng.int(40) - 20));
      a.set([NaN, Infinity, -Infinity, -0, 1e-45, 3.4028234663852886e38].slice(0, n));
      return a;
    }
    case 'float16':
    case 'bfloat16':
      // Every 16-bit pattern (NaNs, infinities, subnormals), then random ones.
      return new Uint16Array(n).map((_, i) => (i < 65536 ? i : rng.u32() & 0xffff));
    case 'float8_e4m3':
      // Every 8-bit pattern (the two NaNs, signed zeros, subnormals, +-448), then random ones.
      return new Uint8Array(n).map((_, i) => (i < 256 ? i : rng.u32() & 0xff));
    case 'bool':
      return new Uint8Array(n).map(() => rng.int(2));
    case 'int32': {
      const a = new Int32Array(n).map(() => rng.u32() | 0);
      a.set([-2147483648, 2147483647, 0, -1].slice(0, n));
      return a;
    }
  }
}

/** Views of a [2, 3, 4, 5] tensor: none of them contiguous. */
export const VIEWS: readonly (readonly [string, (t: Tensor) => Tensor])[] = [
  ['transpose(1,3)', (t) => t.transpose(1, 3)],
  ['permute([3,1,0,2])', (t) => t.permute([3, 1, 0, 2])],
  ['narrow(2,1,2)', (t) => t.narrow(2, 1, 2)],
  ['narrow(3,2,3).transpose(0,2)', (t) => t.narrow(3, 2, 3).transpose(0, 2)],
  ['narrow(0,1,1).unsqueeze(1).expand([1,4,3,4,5])', (t) => t.narrow(0, 1, 1).unsqueeze(1).expand([1, 4, 3, 4, 5])],
];

/** Element-wise equality where NaN equals NaN and -0 differs from 0. */
export function expectSameValues(got: Float64Array, want: Float64Array, what: string): void {
  expect(got.length, what).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    const g = got[i]!;
    const w = want[i]!;
    if (!(Object.is(g, w) || (Number.isNaN(g) && Number.isNaN(w))))
      expect.fail(`${what}: element ${i} is ${g}, expected ${w}`);
  }
}

/** The raw bytes of a tensor, read back to the host in logical order. */
export function hostBits(t: Tensor): Uint8Array {
  const h = t.to('cpu').hostData();
  return new Uint8Array(h.buffer, h.byteOffset, h.byteLength);
}

/** Every dtype to the device and back (bit-exact) and every view read back in logical order. */
export function checkRoundTrip(dtype: DType): void {
  const n = dtype === 'float16' || dtype === 'bfloat16' ? 65536 + 1000 : 10_007;
  const data = sampleData(dtype, n);
  const cpu = tensor(data, [n], { dtype });
  const dev = cpu.to('cuda');
  try {
    expect(dev.device).toEqual({ type: 'cuda', index: 0 });
    expect(hostBits(dev)).toEqual(hostBits(cpu));
    expectSameValues(dev.toFloat64Array(), cpu.toFloat64Array(), dtype);
    const direct = tensor(data, [n], { dtype, device: 'cuda:0' });
    expect(hostBits(direct)).toEqual(hostBits(cpu));
    direct.dispose();
  } finally {
    dev.dispose();
  }
}

/** Strided views of a device tensor read back (and pack with contiguous()) as on the CPU. */
export function checkViews(dtype: DType): void {
  const cpu = tensor(sampleData(dtype, 120), [2, 3, 4, 5], { dtype });
  const dev = cpu.to('cuda');
  try {
    for (const [name, view] of VIEWS) {
      const want = view(cpu).toFloat64Array();
      const v = view(dev);
      expectSameValues(v.toFloat64Array(), want, `${dtype} ${name}`);
      expect(v.toFloat32Array(), `${dtype} ${name} toFloat32Array`).toEqual(view(cpu).toFloat32Array());
      const packed = v.contiguous(); // device-to-device copies
      expect(packed.isContiguous()).toBe(true);
      expect(packed.device.type).toBe('cuda');
      expectSameValues(packed.toFloat64Array(), want, `${dtype} ${name}.contiguous()`);
      expect(hostBits(packed)).toEqual(hostBits(view(cpu).contiguous()));
      if (packed !== v) packed.dispose(); // a view shares dev's memory: never dispose it here
    }
  } finally {
    dev.dispose();
  }
}
