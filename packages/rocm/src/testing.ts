// @attn/rocm/testing: tensors on a 'rocm' device that does not exist, for the ROCm backend packages'
// tests (@attn/rocm-aotriton, @attn/rocm-ck). Their storage is a fake device buffer with a chosen
// address, so marshalling can be checked pointer by pointer; nothing reads it. Side-effect free:
// importing it registers nothing and loads no addon (installFakeRocmRuntime() does, when called).
import {
  DTYPE_BYTES,
  fromStorage,
  registerDeviceRuntime,
  tensor,
  unregisterDeviceRuntime,
  type DeviceRuntime,
  normalizeParams,
  normalizeVarlenParams,
  type DeviceProperties,
  type DeviceStorage,
  type DType,
  type RuleContext,
  type SdpaOptions,
  type SdpaParams,
  type Tensor,
  type VarlenOptions,
} from '@attn/core';

let nextBase = 0x10_0000_0000n;

/** A fresh fake device buffer of `bytes`, at an address far from every other one. */
export function fakeStorage(bytes: number, index = 0): DeviceStorage {
  const pointer = nextBase;
  nextBase += 0x1_0000_0000n;
  return { kind: 'device', device: { type: 'rocm', index }, pointer, bytes, disposed: false, dispose: () => undefined };
}

export interface FakeTensorOptions {
  dtype?: DType;
  strides?: readonly number[];
  offset?: number;
  /** Elements of storage (default: enough for shape and strides). */
  storageElements?: number;
}

export function rocmTensor(shape: readonly number[], opts: FakeTensorOptions = {}): Tensor {
  const dtype = opts.dtype ?? 'float16';
  const numel = shape.reduce((a, b) => a * b, 1);
  const span = opts.strides
    ? shape.reduce((acc, s, i) => acc + (s - 1) * opts.strides![i]!, 1) + (opts.offset ?? 0)
    : numel;
  const elements = opts.storageElements ?? Math.max(span, numel);
  return fromStorage(fakeStorage(elements * DTYPE_BYTES[dtype]), shape, {
    dtype,
    strides: opts.strides,
    offset: opts.offset,
  });
}

export interface Qkv {
  q: Tensor;
  k: Tensor;
  v: Tensor;
}

/** Dense [B, H, S, D] q, k, v. */
export function qkv(
  b: number,
  hq: number,
  sq: number,
  sk: number,
  d: number,
  opts: { dtype?: DType; hk?: number; dv?: number } = {},
): Qkv {
  const dtype = opts.dtype ?? 'float16';
  const hk = opts.hk ?? hq;
  return {
    q: rocmTensor([b, hq, sq, d], { dtype }),
    k: rocmTensor([b, hk, sk, d], { dtype }),
    v: rocmTensor([b, hk, sk, opts.dv ?? d], { dtype }),
  };
}

export function params(t: Qkv, opts: SdpaOptions = {}): SdpaParams {
  return normalizeParams(t.q, t.k, t.v, { dropoutSeed: 1n, ...opts });
}

/** Packed varlen q, k, v with the given sequence lengths (same for q and k unless kLens given). */
export function varlenParams(
  qLens: number[],
  h: number,
  d: number,
  opts: Partial<VarlenOptions> & { kLens?: number[]; dtype?: DType } = {},
): SdpaParams {
  const kLens = opts.kLens ?? qLens;
  const dtype = opts.dtype ?? 'float16';
  const cu = (lens: number[]) => {
    const out = [0];
    for (const l of lens) out.push(out[out.length - 1]! + l);
    return out;
  };
  const cuQ = cu(qLens);
  const cuK = cu(kLens);
  const totalQ = cuQ[cuQ.length - 1]!;
  const totalK = cuK[cuK.length - 1]!;
  const { kLens: _k, dtype: _d, ...rest } = opts;
  return normalizeVarlenParams(
    rocmTensor([totalQ, h, d], { dtype }),
    rocmTensor([totalK, h, d], { dtype }),
    rocmTensor([totalK, h, d], { dtype }),
    {
      cuSeqlensQ: hostInt32OnRocm(cuQ),
      cuSeqlensK: hostInt32OnRocm(cuK),
      maxSeqlenQ: Math.max(...qLens),
      maxSeqlenK: Math.max(...kLens),
      dropoutSeed: 1n,
      ...rest,
    },
  );
}

function hostInt32OnRocm(values: number[]): Tensor {
  return tensor(values, [values.length], { dtype: 'int32', device: 'rocm' });
}

/**
 * A 'rocm' DeviceRuntime double whose "device memory" is host bytes: enough for core to read varlen
 * offsets back and for explain() to see a GPU of the chosen arch. It runs no kernel.
 */
export function installFakeRocmRuntime(arch = 'gfx942', count = 1): { setArch(a: string): void } {
  const buffers = new Map<bigint, Uint8Array>();
  let current = arch;
  const bytesOf = (s: DeviceStorage): Uint8Array => {
    const b = buffers.get(s.pointer);
    if (!b) throw new Error('fake rocm: unknown buffer');
    return b;
  };
  const runtime: DeviceRuntime = {
    type: 'rocm',
    availability: () => ({ ok: true }),
    deviceCount: () => count,
    properties: (index) => gpu(current, index),
    allocate: (bytes, index) => {
      const s = fakeStorage(bytes, index);
      buffers.set(s.pointer, new Uint8Array(bytes));
      return s;
    },
    copyHostToDevice: (dst, off, src) => bytesOf(dst).set(src, off),
    copyDeviceToHost: (src, off, dst) => dst.set(bytesOf(src).subarray(off, off + dst.byteLength)),
    copyDeviceToDevice: (dst, doff, src, soff, n) => bytesOf(dst).set(bytesOf(src).subarray(soff, soff + n), doff),
    fill: (dst, off, n, v) => bytesOf(dst).fill(v, off, off + n),
    synchronize: () => undefined,
  };
  // Importing @attn/rocm registered the real 'rocm' runtime; this double replaces it on purpose, so
  // remove it first instead of getting core's ATTN_RUNTIME_REPLACED warning about a duplicate copy.
  unregisterDeviceRuntime('rocm');
  registerDeviceRuntime(runtime);
  return { setArch: (a) => (current = a) };
}

export function gpu(arch: string, index = 0): DeviceProperties {
  return {
    type: 'rocm',
    index,
    name: `AMD ${arch}`,
    arch,
    major: 0,
    minor: 0,
    multiProcessorCount: 304,
    totalMemoryBytes: 192 * 2 ** 30,
    sharedMemoryPerBlockOptin: 65536,
    l2CacheBytes: 4 * 2 ** 20,
  };
}

export function ctx(arch = 'gfx942'): RuleContext {
  return { device: gpu(arch) };
}
