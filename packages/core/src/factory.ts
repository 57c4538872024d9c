// Making tensors: from values, filled, random (seeded), or over existing memory.
import type { DeviceLike } from './device.js';
import { parseDevice } from './device-parse.js';
import { allocateDevice } from './device-io.js';
import { requireDeviceRuntime } from './device-registry.js';
import { DTYPE_BYTES, type DType, type HostArray } from './dtype.js';
import { AttnInputError } from './errors.js';
import { allocHostArray, allocHostArrayUnwritten, checkDType, elementEncoder, isHostArrayOf } from './host-array.js';
import { checkShape } from './layout.js';
import { philox4x32Into, seedKey } from './philox.js';
import { randomSeed, toSeed } from './seed.js';
import type { DeviceStorage } from './storage.js';
import { fromHostArray, Tensor } from './tensor.js';

export interface TensorOptions {
  /** Default 'float32'. */
  dtype?: DType;
  /** Default 'cpu'. */
  device?: DeviceLike;
}

export interface RandnOptions extends TensorOptions {
  /** Same seed, same values, on every machine. Default: a fresh random seed. */
  seed?: bigint | number;
}

function resolve(opts: TensorOptions | undefined): { dtype: DType; device: ReturnType<typeof parseDevice> } {
  return { dtype: checkDType(opts?.dtype ?? 'float32'), device: parseDevice(opts?.device ?? 'cpu') };
}

/**
 * A new tensor holding a copy of `values` in row-major order. A typed array that is already the
 * dtype's storage type (e.g. Uint16Array for float16) is copied as raw storage (bits); anything
 * else is read as numbers and converted (half types round to nearest even). Shape defaults to
 * [values.length].
 */
export function tensor(values: ArrayLike<number> | HostArray, shape?: readonly number[], opts?: TensorOptions): Tensor {
  const { dtype, device } = resolve(opts);
  if (typeof values !== 'object' || values === null || typeof values.length !== 'number') {
    throw new AttnInputError('ATTN_VALUE', 'tensor(values): values must be an array or a typed array of numbers.');
  }
  const dims = shape ?? [values.length];
  const numel = checkShape(dims);
  if (numel !== values.length) {
    throw new AttnInputError(
      'ATTN_SHAPE',
      `tensor(): ${values.length} values do not fill shape [${dims.join(', ')}] (${numel} elements).`,
    );
  }
  let data: HostArray;
  if (dtype !== 'bool' && isHostArrayOf(values, dtype)) {
    data = values.slice();
  } else {
    data = allocHostArray(dtype, numel);
    const encode = elementEncoder(dtype);
    for (let i = 0; i < numel; i++) {
      const v = values[i];
      if (typeof v !== 'number') {
        throw new AttnInputError('ATTN_VALUE', `tensor(): values[${i}] is ${typeof v}, not a number.`);
      }
      data[i] = encode(v);
    }
  }
  return fromHostArray(data, dtype, dims, device);
}

function emptyFrom(shape: readonly number[], opts: TensorOptions | undefined, host: typeof allocHostArray): Tensor {
  const { dtype, device } = resolve(opts);
  const numel = checkShape(shape);
  if (device.type === 'cpu') return new Tensor({ storage: host(dtype, numel), dtype, shape });
  return new Tensor({ storage: allocateDevice(dtype, numel, device), dtype, shape });
}

/** Uninitialized on a device (whatever the memory held); zero on the host, which cannot do otherwise. */
export function empty(shape: readonly number[], opts?: TensorOptions): Tensor {
  return emptyFrom(shape, opts, allocHostArray);
}

/**
 * empty() for a tensor its maker overwrites whole before anyone reads it (a kernel's output): on the host its
 * storage is not zero-filled either (allocHostArrayUnwritten says why).
 */
export function emptyUnwritten(shape: readonly number[], opts?: TensorOptions): Tensor {
  return emptyFrom(shape, opts, allocHostArrayUnwritten);
}

export function zeros(shape: readonly number[], opts?: TensorOptions): Tensor {
  const t = empty(shape, opts);
  if (t.device.type !== 'cpu') {
    const storage = t.storage as DeviceStorage;
    requireDeviceRuntime(t.device).fill(storage, 0, t.numel * DTYPE_BYTES[t.dtype], 0);
  }
  return t;
}

export function full(shape: readonly number[], value: number, opts?: TensorOptions): Tensor {
  const { dtype, device } = resolve(opts);
  if (typeof value !== 'number')
    throw new AttnInputError('ATTN_VALUE', `full(): value must be a number, got ${typeof value}.`);
  const numel = checkShape(shape);
  const data = allocHostArray(dtype, numel);
  data.fill(elementEncoder(dtype)(value));
  return fromHostArray(data, dtype, shape, device);
}

export function ones(shape: readonly number[], opts?: TensorOptions): Tensor {
  return full(shape, 1, opts);
}

/** Philox counter word 3 of randn's stream ("rand"), so it never shares a counter with dropout offset 0. */
const RANDN_STREAM = 0x72616e64;

/**
 * Standard normal samples, reproducible for a seed: Philox4x32-10 (key = seed, counter = block
 * index) gives four 32-bit uniforms per block, Box-Muller turns each pair into two normals.
 * Values are generated on the host and copied to the device, so a seed means the same tensor
 * everywhere.
 */
export function randn(shape: readonly number[], opts?: RandnOptions): Tensor {
  const { dtype, device } = resolve(opts);
  if (dtype === 'bool' || dtype === 'int32') {
    throw new AttnInputError('ATTN_DTYPE', `randn() makes floating tensors; got dtype ${dtype}.`);
  }
  const numel = checkShape(shape);
  const [k0, k1] = seedKey(opts?.seed === undefined ? randomSeed() : toSeed(opts.seed, 'randn seed'));
  const data = allocHostArray(dtype, numel);
  const encode = elementEncoder(dtype);
  const words = new Uint32Array(4);
  const TWO_PI = 2 * Math.PI;
  const INV_2_32 = 2 ** -32;
  for (let block = 0, i = 0; i < numel; block++) {
    philox4x32Into(words, block >>> 0, Math.floor(block / 2 ** 32), 0, RANDN_STREAM, k0, k1);
    for (let pair = 0; pair < 2 && i < numel; pair++) {
      // u1 in (0, 1] keeps log finite; u2 in [0, 1).
      const u1 = (words[2 * pair]! + 1) * INV_2_32;
      const u2 = words[2 * pair + 1]! * INV_2_32;
      const r = Math.sqrt(-2 * Math.log(u1));
      data[i++] = encode(r * Math.cos(TWO_PI * u2));
      if (i < numel) data[i++] = encode(r * Math.sin(TWO_PI * u2));
    }
  }
  return fromHostArray(data, dtype, shape, device);
}

export interface FromStorageOptions {
  dtype: DType;
  /** In elements; default contiguous. */
  strides?: readonly number[];
  /** In elements; default 0. */
  offset?: number;
}

/** Wraps existing memory (a host typed array of the dtype, or a DeviceStorage) without copying. */
export function fromStorage(
  storage: HostArray | DeviceStorage,
  shape: readonly number[],
  opts: FromStorageOptions,
): Tensor {
  if (typeof opts !== 'object' || opts === null) {
    throw new AttnInputError('ATTN_DTYPE', 'fromStorage(storage, shape, { dtype }): dtype is required.');
  }
  return new Tensor({ storage, dtype: opts.dtype, shape, strides: opts.strides, offset: opts.offset });
}
