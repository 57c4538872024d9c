// Typed arrays behind host tensors: allocation, type checks, and number <-> element encoding.
import { type DType, DTYPES, type HostArray, type HostArrayOf } from './dtype.js';
import { AttnInputError } from './errors.js';
import { float8E4m3Bits, float8E4m3DecodeTable } from './float8.js';
import { bfloat16BitsToFloat32, float16DecodeTable, float32ToBfloat16Bits, float32ToFloat16Bits } from './half.js';

/** The constructor of each dtype's host array. */
const HOST_ARRAY_CTOR = {
  float64: Float64Array,
  float32: Float32Array,
  float16: Uint16Array,
  bfloat16: Uint16Array,
  float8_e4m3: Uint8Array,
  bool: Uint8Array,
  int32: Int32Array,
} as const;

export function isDType(d: unknown): d is DType {
  return typeof d === 'string' && (DTYPES as readonly string[]).includes(d);
}

export function checkDType(d: unknown, what = 'dtype'): DType {
  if (!isDType(d)) {
    throw new AttnInputError('ATTN_DTYPE', `${what} must be one of ${DTYPES.join(', ')}; got ${JSON.stringify(d)}.`);
  }
  return d;
}

/** Zero-filled host storage for n elements. Throws ATTN_SIZE when the host cannot hold it. */
export function allocHostArray<D extends DType>(dtype: D, n: number): HostArrayOf[D] {
  try {
    return new HOST_ARRAY_CTOR[dtype](n) as HostArrayOf[D];
  } catch (cause) {
    throw new AttnInputError('ATTN_SIZE', `The host cannot allocate ${n} ${dtype} elements.`, { cause });
  }
}

/** Node's Buffer, where the runtime has one: the one allocator that hands out memory without zeroing it. */
interface UnsafeAllocator {
  allocUnsafeSlow(bytes: number): Uint8Array<ArrayBuffer>;
}

/**
 * Host storage for n elements whose contents are unspecified: for outputs that a kernel overwrites whole. A
 * zero-filled array of a megabyte costs the calling thread its memset (or, fresh from the system, a page fault
 * per 4 KiB) before the kernel writes the same bytes again: 50-70 us per call for a forward's out on a
 * 2-vCPU Xeon, and ~100 us of a 0.3-0.4 ms call on 16 cores. Without Node's Buffer it is allocHostArray.
 * Throws ATTN_SIZE when the host cannot hold it.
 */
export function allocHostArrayUnwritten<D extends DType>(dtype: D, n: number): HostArrayOf[D] {
  const unsafe = (globalThis as { Buffer?: UnsafeAllocator }).Buffer;
  if (typeof unsafe?.allocUnsafeSlow !== 'function') return allocHostArray(dtype, n);
  const Ctor = HOST_ARRAY_CTOR[dtype];
  try {
    // allocUnsafeSlow never pools: the bytes are an ArrayBuffer of their own, at offset 0.
    const bytes = unsafe.allocUnsafeSlow(n * Ctor.BYTES_PER_ELEMENT);
    return new Ctor(bytes.buffer, bytes.byteOffset, n) as HostArrayOf[D];
  } catch (cause) {
    throw new AttnInputError('ATTN_SIZE', `The host cannot allocate ${n} ${dtype} elements.`, { cause });
  }
}

/** Whether arr is exactly the typed array a dtype is stored in (Uint16Array for both half types). */
export function isHostArrayOf(arr: unknown, dtype: DType): arr is HostArray {
  return arr instanceof HOST_ARRAY_CTOR[dtype] && arr.constructor === HOST_ARRAY_CTOR[dtype];
}

export function isHostArray(arr: unknown): arr is HostArray {
  return Object.values(HOST_ARRAY_CTOR).some((C) => arr instanceof C && arr.constructor === C);
}

/**
 * A function that turns a number into the stored element of a dtype. bool: nonzero (and NaN) is
 * true, as PyTorch. int32: the value must already be an integer in range; toDType truncates first.
 */
export function elementEncoder(dtype: DType): (v: number) => number {
  switch (dtype) {
    case 'float64':
    case 'float32':
      return (v) => v; // the typed array store rounds to float32 (nearest even)
    case 'float16':
      return float32ToFloat16Bits;
    case 'bfloat16':
      return float32ToBfloat16Bits;
    case 'float8_e4m3':
      return float8E4m3Bits;
    case 'bool':
      return (v) => (v !== 0 ? 1 : 0);
    case 'int32':
      return (v) => {
        if (!Number.isInteger(v) || v < -(2 ** 31) || v >= 2 ** 31) {
          throw new AttnInputError('ATTN_VALUE', `${v} is not an int32; int32 tensors hold integers in [-2^31, 2^31).`);
        }
        return v;
      };
  }
}

/** A function that turns a stored element into its number value. */
export function elementDecoder(dtype: DType): (stored: number) => number {
  switch (dtype) {
    case 'float16': {
      const table = float16DecodeTable();
      return (bits) => table[bits]!;
    }
    case 'bfloat16':
      return bfloat16BitsToFloat32;
    case 'float8_e4m3': {
      const table = float8E4m3DecodeTable();
      return (bits) => table[bits]!;
    }
    default:
      return (v) => v;
  }
}
