// Element types. Half types live in Uint16Array (Node 20 has no Float16Array); float8_e4m3 and bool in
// Uint8Array. float8_e4m3 (float8.ts) is not a FloatDType: no output, gradient or mask is float8. It is an
// attention input (QkvDType) only with descale factors (SdpaOptions.descale), and the output is bfloat16.

export type FloatDType = 'float64' | 'float32' | 'float16' | 'bfloat16';
/** The dtypes query, key and value may have: the float ones, and float8_e4m3 with descale factors. */
export type QkvDType = FloatDType | 'float8_e4m3';
export type DType = FloatDType | 'float8_e4m3' | 'bool' | 'int32';

export const FLOAT_DTYPES: readonly FloatDType[] = ['float64', 'float32', 'float16', 'bfloat16'];
export const DTYPES: readonly DType[] = [...FLOAT_DTYPES, 'float8_e4m3', 'bool', 'int32'];

/** Bytes per element. */
export const DTYPE_BYTES: Readonly<Record<DType, number>> = {
  float64: 8,
  float32: 4,
  float16: 2,
  bfloat16: 2,
  float8_e4m3: 1,
  bool: 1,
  int32: 4,
};

/** The typed array that holds each dtype on the host. */
export interface HostArrayOf {
  float64: Float64Array;
  float32: Float32Array;
  float16: Uint16Array;
  bfloat16: Uint16Array;
  float8_e4m3: Uint8Array;
  bool: Uint8Array;
  int32: Int32Array;
}
export type HostArray = HostArrayOf[DType];

export function isFloatDType(d: DType): d is FloatDType {
  return (FLOAT_DTYPES as readonly string[]).includes(d);
}

export function isQkvDType(d: DType): d is QkvDType {
  return d === 'float8_e4m3' || isFloatDType(d);
}
