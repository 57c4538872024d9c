// Moving numbers between a CPU tensor's typed array (any dtype, any strides) and float64 work rows.
// Kernels gather one row at a time into a contiguous Float64Array so that their inner loops never
// see a dtype or a stride; outputs are rounded to their dtype exactly once, on the way out.
import {
  bfloat16BitsToFloat32,
  float16DecodeTable,
  float32ToBfloat16Bits,
  float32ToFloat16Bits,
  float8E4m3DecodeTable,
} from '@attn/core';
import type { DType, HostArray } from '@attn/core';
import type { RowAddressing } from './layout.js';

let bfloat16Table: Float64Array | null = null;
let float16Table: Float64Array | null = null;

/** The dtypes stored as bit patterns, decoded through a table. */
type TableDType = 'float16' | 'bfloat16' | 'float8_e4m3';

function isTableDType(dtype: DType): dtype is TableDType {
  return dtype === 'float16' || dtype === 'bfloat16' || dtype === 'float8_e4m3';
}

/** float64 value of every 16-bit (or 8-bit float8_e4m3) pattern: decoding an element is one load. */
function decodeTable(dtype: TableDType): Float64Array {
  if (dtype === 'float8_e4m3') return float8E4m3DecodeTable();
  if (dtype === 'float16') {
    float16Table ??= Float64Array.from(float16DecodeTable());
    return float16Table;
  }
  if (!bfloat16Table) {
    const table = new Float64Array(65536);
    for (let bits = 0; bits < 65536; bits++) table[bits] = bfloat16BitsToFloat32(bits);
    bfloat16Table = table;
  }
  return bfloat16Table;
}

/**
 * dst[r * cols + c] = value at src[base + r * rowStride + c * colStride], as float64.
 * bool reads as 0 / 1.
 */
export function gather(
  src: HostArray,
  dtype: DType,
  base: number,
  rows: number,
  rowStride: number,
  cols: number,
  colStride: number,
  dst: Float64Array,
): void {
  if (isTableDType(dtype)) {
    const table = decodeTable(dtype);
    for (let r = 0; r < rows; r++) {
      const from = base + r * rowStride;
      const to = r * cols;
      for (let c = 0; c < cols; c++) dst[to + c] = table[src[from + c * colStride]!]!;
    }
    return;
  }
  for (let r = 0; r < rows; r++) {
    const from = base + r * rowStride;
    const to = r * cols;
    for (let c = 0; c < cols; c++) dst[to + c] = src[from + c * colStride]!;
  }
}

/**
 * dst[r * cols + c] = column c of row r of head h of sequence b (r < rows), as float64: gather's
 * rows where the layout places them (dense, packed or paged alike).
 */
export function gatherRows(
  src: HostArray,
  dtype: DType,
  at: RowAddressing,
  b: number,
  h: number,
  rows: number,
  cols: number,
  dst: Float64Array,
): void {
  const cs = at.colStride;
  const table = isTableDType(dtype) ? decodeTable(dtype) : null;
  for (let r = 0; r < rows; r++) {
    const from = at.row(b, h, r);
    const to = r * cols;
    if (table) {
      for (let c = 0; c < cols; c++) dst[to + c] = table[src[from + c * cs]!]!;
    } else {
      for (let c = 0; c < cols; c++) dst[to + c] = src[from + c * cs]!;
    }
  }
}

/** dst[base + c * colStride] = src[srcBase + c], rounded once (nearest even) to dtype. */
export function scatterRow(
  src: Float64Array,
  srcBase: number,
  cols: number,
  dst: HostArray,
  dtype: DType,
  base: number,
  colStride: number,
): void {
  if (dtype === 'bool' || dtype === 'int32' || dtype === 'float8_e4m3')
    throw new TypeError(`scatterRow: ${dtype} is not an output dtype`);
  // Float32Array and Float64Array stores round to nearest even themselves; halves go through core's
  // encoders, which round straight from the double (no float32 double rounding).
  const encode = dtype === 'float16' ? float32ToFloat16Bits : dtype === 'bfloat16' ? float32ToBfloat16Bits : null;
  if (encode) {
    for (let c = 0; c < cols; c++) dst[base + c * colStride] = encode(src[srcBase + c]!);
  } else {
    for (let c = 0; c < cols; c++) dst[base + c * colStride] = src[srcBase + c]!;
  }
}
