// The Tensor: a dtype, a shape, strides and an offset (in elements) over host or device storage.
// Views (transpose, permute, narrow, expand, unsqueeze, reshape where possible) share storage and
// lifetime: disposing any of them disposes them all, because they are the same memory.
import type { Device, DeviceLike } from './device.js';
import { CPU, deviceToString, parseDevice, sameDevice } from './device-parse.js';
import { allocateDevice, copyOnDevice, downloadSpan, uploadHostArray } from './device-io.js';
import { DTYPE_BYTES, type DType, type HostArray } from './dtype.js';
import { AttnInputError, DisposedError } from './errors.js';
import { allocHostArray, checkDType, elementDecoder, elementEncoder, isHostArrayOf } from './host-array.js';
import {
  checkShape,
  contiguousStrides,
  forEachRow,
  isContiguousLayout,
  maxReachableIndex,
  normalizeDim,
  shapeNumel,
  viewStrides,
} from './layout.js';
import type { DeviceStorage } from './storage.js';

/** What a tensor is made of. Strides default to contiguous, offset to 0. */
export interface TensorInit {
  readonly storage: HostArray | DeviceStorage;
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly strides?: readonly number[];
  readonly offset?: number;
}

/** Shared by a tensor and all its views. */
interface Lifetime {
  disposed: boolean;
}

/** Device-to-device copies per contiguous() call before a host round trip is cheaper. */
const MAX_DEVICE_RUNS = 256;

export function isDeviceStorage(s: unknown): s is DeviceStorage {
  return typeof s === 'object' && s !== null && (s as { kind?: unknown }).kind === 'device';
}

export class Tensor {
  readonly dtype: DType;
  readonly shape: readonly number[];
  /** In elements. */
  readonly strides: readonly number[];
  /** Elements from the storage start. */
  readonly offset: number;
  readonly device: Device;
  readonly storage: HostArray | DeviceStorage;
  readonly rank: number;
  readonly numel: number;
  readonly #lifetime: Lifetime;
  /** Host storage: elements the view reaches (max index + 1). A detached or shrunk buffer covers fewer. */
  readonly #hostSpan: number;

  /**
   * Whether x was made by this class's constructor (a brand check: `instanceof` is also true for
   * Object.create(Tensor.prototype), which has no fields and would fail on first use).
   */
  static isTensor(x: unknown): x is Tensor {
    return typeof x === 'object' && x !== null && #lifetime in x;
  }

  /** Wraps storage without copying; checks that every reachable element lies inside it. */
  constructor(init: TensorInit, lifetime?: Lifetime) {
    const dtype = checkDType(init.dtype);
    const numel = checkShape(init.shape);
    const shape = Object.freeze([...init.shape]);
    const strides = Object.freeze(init.strides ? [...init.strides] : contiguousStrides(shape));
    const offset = init.offset ?? 0;
    if (strides.length !== shape.length || !strides.every((s) => Number.isSafeInteger(s) && s >= 0)) {
      throw new AttnInputError(
        'ATTN_STRIDES',
        `strides [${strides.join(', ')}] must be ${shape.length} non-negative integers (one per dim of [${shape.join(', ')}]).`,
      );
    }
    if (!Number.isSafeInteger(offset) || offset < 0) {
      throw new AttnInputError('ATTN_STRIDES', `offset must be a non-negative integer, got ${String(offset)}.`);
    }
    const storage = init.storage;
    let capacity: number;
    if (isDeviceStorage(storage)) {
      if (storage.disposed) throw new DisposedError('device storage');
      capacity = Math.floor(storage.bytes / DTYPE_BYTES[dtype]);
      this.device = storage.device;
    } else if (isHostArrayOf(storage, dtype)) {
      capacity = storage.length;
      this.device = CPU;
    } else {
      throw new AttnInputError(
        'ATTN_STORAGE',
        `Storage for a ${dtype} tensor must be a ${hostArrayName(dtype)} on the host or a DeviceStorage.`,
      );
    }
    if (numel > 0 && maxReachableIndex(shape, strides, offset) >= capacity) {
      throw new AttnInputError(
        'ATTN_STRIDES',
        `A [${shape.join(', ')}] view with strides [${strides.join(', ')}] at offset ${offset} reaches past the ` +
          `${capacity} elements of its storage.`,
      );
    }
    this.dtype = dtype;
    this.shape = shape;
    this.strides = strides;
    this.offset = offset;
    this.storage = storage;
    this.rank = shape.length;
    this.numel = numel;
    this.#lifetime = lifetime ?? { disposed: false };
    this.#hostSpan = isDeviceStorage(storage) || numel === 0 ? 0 : maxReachableIndex(shape, strides, offset) + 1;
  }

  get disposed(): boolean {
    return this.#lifetime.disposed || (isDeviceStorage(this.storage) && this.storage.disposed);
  }

  get isHost(): boolean {
    return this.device.type === 'cpu';
  }

  /** Bytes per element. */
  get itemBytes(): number {
    return DTYPE_BYTES[this.dtype];
  }

  /**
   * Throws DisposedError once this tensor (or a view of the same memory) is disposed, and
   * ATTN_STORAGE once its host ArrayBuffer was detached (transferred) or shrunk under it: a detached
   * typed array reads as empty, and kernels would see zeros or NaN instead of an error.
   */
  assertLive(what = 'Tensor'): void {
    if (this.disposed) throw new DisposedError(what);
    if (this.#hostSpan > 0 && (this.storage as HostArray).length < this.#hostSpan) {
      throw new AttnInputError(
        'ATTN_STORAGE',
        `${what}'s ArrayBuffer was detached or shrunk after the tensor was made (it now holds ${(this.storage as HostArray).length} ` +
          `of the ${this.#hostSpan} elements the view reaches); copy the data before transferring its buffer.`,
      );
    }
  }

  isContiguous(): boolean {
    return isContiguousLayout(this.shape, this.strides);
  }

  /** CPU only: the backing typed array (index it with offset + sum(i_k * strides[k])). */
  hostData(): HostArray {
    this.assertLive();
    if (isDeviceStorage(this.storage)) {
      throw new AttnInputError(
        'ATTN_DEVICE',
        `hostData() needs a CPU tensor; this one is on ${deviceToString(this.device)}. Use .to('cpu') or toFloat32Array().`,
      );
    }
    return this.storage;
  }

  /** Device only: the address of the element at the view's offset, for kernel addons. */
  dataPointer(): bigint {
    this.assertLive();
    if (!isDeviceStorage(this.storage)) {
      throw new AttnInputError('ATTN_DEVICE', 'dataPointer() needs a device tensor; CPU tensors have hostData().');
    }
    return this.storage.pointer + BigInt(this.offset * this.itemBytes);
  }

  #view(shape: readonly number[], strides: readonly number[], offset: number): Tensor {
    return new Tensor({ storage: this.storage, dtype: this.dtype, shape, strides, offset }, this.#lifetime);
  }

  transpose(a: number, b: number): Tensor {
    this.assertLive();
    const da = normalizeDim(a, this.rank, 'transpose dim');
    const db = normalizeDim(b, this.rank, 'transpose dim');
    const perm = [...this.shape.keys()];
    perm[da] = db;
    perm[db] = da;
    return this.permute(perm);
  }

  permute(dims: readonly number[]): Tensor {
    this.assertLive();
    const norm = dims.map((d) => normalizeDim(d, this.rank, 'permute dim'));
    if (norm.length !== this.rank || new Set(norm).size !== this.rank) {
      throw new AttnInputError(
        'ATTN_DIM',
        `permute([${dims.join(', ')}]) must name each of the ${this.rank} dims exactly once.`,
      );
    }
    return this.#view(
      norm.map((d) => this.shape[d]!),
      norm.map((d) => this.strides[d]!),
      this.offset,
    );
  }

  narrow(dim: number, start: number, length: number): Tensor {
    this.assertLive();
    const d = normalizeDim(dim, this.rank, 'narrow dim');
    const size = this.shape[d]!;
    if (!Number.isInteger(start) || !Number.isInteger(length) || start < 0 || length < 0 || start + length > size) {
      throw new AttnInputError(
        'ATTN_DIM',
        `narrow(${dim}, ${start}, ${length}) is out of range: dim ${d} has size ${size}; need 0 <= start and start + length <= ${size}.`,
      );
    }
    const shape = [...this.shape];
    shape[d] = length;
    return this.#view(shape, this.strides, length === 0 ? this.offset : this.offset + start * this.strides[d]!);
  }

  /** As PyTorch: new leading dims may be added; -1 keeps a size; only size-1 dims grow (stride 0). */
  expand(shape: readonly number[]): Tensor {
    this.assertLive();
    const lead = shape.length - this.rank;
    const fail = (why: string): never => {
      throw new AttnInputError(
        'ATTN_SHAPE',
        `Cannot expand [${this.shape.join(', ')}] to [${shape.join(', ')}]: ${why}.`,
      );
    };
    if (lead < 0) fail('the target has fewer dims');
    const outShape: number[] = [];
    const outStrides: number[] = [];
    for (let i = 0; i < shape.length; i++) {
      const want = shape[i]!;
      const d = i - lead;
      if (d < 0) {
        if (want === -1) fail(`-1 is not allowed for the new leading dim ${i}`);
        outShape.push(want);
        outStrides.push(0);
        continue;
      }
      const have = this.shape[d]!;
      if (want === -1 || want === have) {
        outShape.push(have);
        outStrides.push(this.strides[d]!);
      } else if (have === 1) {
        outShape.push(want);
        outStrides.push(0);
      } else {
        fail(`dim ${d} has size ${have}, which is not 1`);
      }
    }
    checkShape(outShape, 'expand shape');
    return this.#view(outShape, outStrides, this.offset);
  }

  unsqueeze(dim: number): Tensor {
    this.assertLive();
    const d = normalizeDim(dim, this.rank + 1, 'unsqueeze dim');
    const shape = [...this.shape];
    const strides = [...this.strides];
    const stride = d < this.rank ? this.shape[d]! * this.strides[d]! : 1;
    shape.splice(d, 0, 1);
    strides.splice(d, 0, stride);
    return this.#view(shape, strides, this.offset);
  }

  /** A view when the layout allows one (as PyTorch's view), else a contiguous copy. One -1 is inferred. */
  reshape(shape: readonly number[]): Tensor {
    this.assertLive();
    const target = this.#inferShape(shape);
    const strides = viewStrides(this.shape, this.strides, target);
    if (strides) return this.#view(target, strides, this.offset);
    return this.contiguous().#view(target, contiguousStrides(target), 0);
  }

  #inferShape(shape: readonly number[]): number[] {
    const fail = (why: string): never => {
      throw new AttnInputError(
        'ATTN_SHAPE',
        `Cannot reshape [${this.shape.join(', ')}] to [${shape.join(', ')}]: ${why}.`,
      );
    };
    const inferred = shape.filter((s) => s === -1).length;
    if (inferred > 1) fail('at most one size may be -1');
    const known = shape.filter((s) => s !== -1);
    checkShape(known, 'reshape shape');
    const knownNumel = shapeNumel(known);
    const out = [...shape];
    if (inferred === 1) {
      if (knownNumel === 0 || this.numel % knownNumel !== 0) fail('the -1 size cannot be inferred');
      out[shape.indexOf(-1)] = this.numel / knownNumel;
    } else if (knownNumel !== this.numel) {
      fail(`${this.numel} elements do not fill ${knownNumel}`);
    }
    return out;
  }

  /** Same device; returns this tensor when it is already contiguous. */
  contiguous(): Tensor {
    this.assertLive();
    if (this.isContiguous()) return this;
    if (isDeviceStorage(this.storage)) return this.#contiguousOnDevice(this.storage);
    return fromHostArray(this.#gatherHost(this.storage, this.offset), this.dtype, this.shape);
  }

  /** Copies into a new contiguous host array of the same dtype (raw elements, no conversion). */
  #gatherHost(src: HostArray, base: number): HostArray {
    const out = allocHostArray(this.dtype, this.numel);
    forEachRow(this.shape, this.strides, base, (start, stride, len, logical) => {
      for (let t = 0; t < len; t++) out[logical + t] = src[start + t * stride]!;
    });
    return out;
  }

  /** Host data in logical order: a copy for device tensors, a gather for strided host ones. */
  #contiguousHostData(): HostArray {
    if (isDeviceStorage(this.storage)) {
      const { data, base } = downloadSpan(this.storage, this.dtype, this.shape, this.strides, this.offset);
      if (this.isContiguous() && data.length === this.numel) return data;
      return this.#gatherHost(data, base);
    }
    return this.#gatherHost(this.storage, this.offset);
  }

  #contiguousOnDevice(src: DeviceStorage): Tensor {
    // Dims from `inner` on form one contiguous block; each outer index is one device copy.
    let inner = this.rank;
    while (inner > 0 && isContiguousLayout(this.shape.slice(inner - 1), this.strides.slice(inner - 1))) inner--;
    const runElems = shapeNumel(this.shape.slice(inner));
    const runs = this.numel / runElems;
    if (runs > MAX_DEVICE_RUNS) {
      return fromHostArray(this.#contiguousHostData(), this.dtype, this.shape, this.device);
    }
    const dst = allocateDevice(this.dtype, this.numel, this.device);
    const eb = this.itemBytes;
    try {
      const outerShape = [...this.shape.slice(0, inner), 1];
      const outerStrides = [...this.strides.slice(0, inner), 1];
      forEachRow(outerShape, outerStrides, this.offset, (start, _stride, _len, logical) => {
        copyOnDevice(dst, logical * runElems * eb, src, start * eb, runElems * eb);
      });
    } catch (e) {
      dst.dispose();
      throw e;
    }
    return new Tensor({ storage: dst, dtype: this.dtype, shape: this.shape });
  }

  /** Returns this tensor when it is already on that device. Cross-device copies go through the host. */
  to(device: DeviceLike): Tensor {
    this.assertLive();
    const target = parseDevice(device);
    if (sameDevice(target, this.device)) return this;
    return fromHostArray(this.#contiguousHostData(), this.dtype, this.shape, target);
  }

  /**
   * Converts element values (float16/bfloat16 round to nearest even; bool is value != 0; int32
   * truncates toward zero and rejects NaN, Inf and out-of-range values). Returns this tensor when
   * the dtype is already right. Device tensors convert on the host and come back.
   */
  toDType(dtype: DType): Tensor {
    this.assertLive();
    checkDType(dtype);
    if (dtype === this.dtype) return this;
    const values = this.toFloat64Array();
    const out = allocHostArray(dtype, values.length);
    const encode = elementEncoder(dtype);
    const truncate = dtype === 'int32';
    for (let i = 0; i < values.length; i++) out[i] = encode(truncate ? Math.trunc(values[i]!) : values[i]!);
    return fromHostArray(out, dtype, this.shape, this.device);
  }

  /** Values in logical row-major order, whatever the strides or device (reads synchronize). */
  toFloat64Array(): Float64Array {
    return this.#readValues(new Float64Array(this.numel));
  }

  /** Values in logical row-major order, rounded to float32. */
  toFloat32Array(): Float32Array {
    return this.#readValues(new Float32Array(this.numel));
  }

  #readValues<A extends Float64Array | Float32Array>(out: A): A {
    this.assertLive();
    let src: HostArray;
    let base: number;
    if (isDeviceStorage(this.storage)) {
      ({ data: src, base } = downloadSpan(this.storage, this.dtype, this.shape, this.strides, this.offset));
    } else {
      src = this.storage;
      base = this.offset;
    }
    const decode = elementDecoder(this.dtype);
    forEachRow(this.shape, this.strides, base, (start, stride, len, logical) => {
      for (let t = 0; t < len; t++) out[logical + t] = decode(src[start + t * stride]!);
    });
    return out;
  }

  /** Frees device memory now (host memory goes with the garbage collector). Twice is a no-op. */
  dispose(): void {
    if (this.#lifetime.disposed) return;
    this.#lifetime.disposed = true;
    if (isDeviceStorage(this.storage)) this.storage.dispose();
  }

  toString(): string {
    return `Tensor(${this.dtype}, [${this.shape.join(', ')}], ${deviceToString(this.device)}${this.disposed ? ', disposed' : ''})`;
  }
}

function hostArrayName(dtype: DType): string {
  return {
    float64: 'Float64Array',
    float32: 'Float32Array',
    float16: 'Uint16Array',
    bfloat16: 'Uint16Array',
    float8_e4m3: 'Uint8Array',
    bool: 'Uint8Array',
    int32: 'Int32Array',
  }[dtype];
}

/** A contiguous tensor over a host array, moved to `device` when that is not the CPU. */
export function fromHostArray(data: HostArray, dtype: DType, shape: readonly number[], device: Device = CPU): Tensor {
  if (device.type === 'cpu') return new Tensor({ storage: data, dtype, shape });
  const storage = uploadHostArray(data, device);
  return new Tensor({ storage, dtype, shape });
}
