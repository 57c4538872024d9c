// Random inputs of one case, three ways: for the backend under test (the case's dtype, on its
// device, in its layout), for the reference (float64 on the CPU, contiguous, the same rounded
// values), and as plain logical arrays for the naive low-precision implementation.
import { float8E4m3Bits, float8E4m3DecodeTable, randn, tensor } from '@attn/core';
import type { Device, FloatDType, QkvDType, Tensor } from '@attn/core';
import type { CaseSpec, PoisonSpec } from './cases.js';
import { pagedLayout, toPool } from './paged.js';
import type { PagedLayout } from './paged.js';

/** What a call takes besides q, k, v; absent fields are absent from the call too. */
export interface CallTensors {
  readonly q: Tensor;
  readonly k: Tensor;
  readonly v: Tensor;
  readonly gradOut: Tensor;
  readonly mask: Tensor | null;
  readonly slopes: Tensor | null;
  readonly cuSeqlensQ: Tensor | null;
  readonly cuSeqlensK: Tensor | null;
  readonly sequsedK: Tensor | null;
  /** Paged cases, on the side under test: int32 [B, maxBlocksPerSeq] (k and v are then block pools). */
  readonly blockTable: Tensor | null;
}

/** Logical row-major values (already rounded to the case's dtype). */
export interface CaseValues {
  readonly q: Float64Array;
  readonly k: Float64Array;
  readonly v: Float64Array;
  readonly gradOut: Float64Array;
  /** Mask values in the mask's own shape: 0 / 1 for bool, the additive values otherwise. */
  readonly mask: Float64Array | null;
  readonly slopes: Float64Array | null;
  /**
   * Paged cases: the pools [numBlocks, blockSize, Hk, D|Dv] as the backend gets them (NaN where no
   * sequence reads) and their table; k and v above stay packed.
   */
  readonly paged: { readonly layout: PagedLayout; readonly kPool: Float64Array; readonly vPool: Float64Array } | null;
}

export interface CaseInputs {
  readonly test: CallTensors;
  readonly ref: CallTensors;
  readonly values: CaseValues;
  /** float8_e4m3 cases (CaseSpec.float8): the factors that dequantize q, k and v; else null. */
  readonly descale: { readonly q: number; readonly k: number; readonly v: number } | null;
  readonly dropoutSeed: bigint;
  readonly dropoutOffset: number;
}

/** Dense [B, H, S, D] or packed [total, H, D]. */
export function qkvShapes(spec: CaseSpec): { q: number[]; k: number[]; v: number[]; out: number[] } {
  const { batch: B, headsQ: Hq, headsKV: Hk, seqQ, seqK, headDim: D, headDimV: Dv, varlen } = spec;
  if (varlen) {
    const tq = sum(varlen.seqlensQ);
    const tk = sum(varlen.seqlensK);
    return { q: [tq, Hq, D], k: [tk, Hk, D], v: [tk, Hk, Dv], out: [tq, Hq, Dv] };
  }
  return { q: [B, Hq, seqQ, D], k: [B, Hk, seqK, D], v: [B, Hk, seqK, Dv], out: [B, Hq, seqQ, Dv] };
}

function sum(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0);
}

/** A small deterministic stream of seeds for the tensors of one case. */
function seedStream(seed: bigint): () => bigint {
  let s = seed;
  return () => {
    s = (s * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
    return s;
  };
}

function normals(shape: readonly number[], seed: bigint): Float64Array {
  return randn(shape, { dtype: 'float64', seed }).toFloat64Array();
}

/**
 * float8_e4m3 with a per-tensor descale factor, as a user quantizes: descale = the largest finite |value| / 448
 * (1 if there is none), the stored values round(value / descale) in e4m3 (NaN stays NaN). Returns the stored
 * values (exact in e4m3) and the factor; the call attends stored * descale.
 */
function quantized(values: Float64Array): { stored: Float64Array; descale: number } {
  let amax = 0;
  for (const x of values) if (Number.isFinite(x)) amax = Math.max(amax, Math.abs(x));
  const descale = amax > 0 ? amax / 448 : 1;
  const table = float8E4m3DecodeTable();
  return { stored: values.map((x) => table[float8E4m3Bits(x / descale)]!), descale };
}

/** The values rounded to dtype, as float64. */
function roundTo(values: Float64Array, dtype: FloatDType): Float64Array {
  return tensor(values, [values.length], { dtype }).toFloat64Array();
}

/** A view of values one element off its storage's alignment (CaseSpec.misalign). */
function misaligned(
  values: Float64Array,
  shape: readonly number[],
  dtype: QkvDType,
  device: Device,
  how: 'base' | 'rows',
): Tensor {
  if (how === 'base') {
    const padded = new Float64Array(values.length + 1);
    padded.set(values, 1);
    return tensor(padded, [padded.length], { dtype, device }).narrow(0, 1, values.length).reshape(shape);
  }
  const cols = shape[shape.length - 1]!;
  const wide = new Float64Array((values.length / Math.max(cols, 1)) * (cols + 1));
  for (let r = 0; r < values.length / cols; r++)
    wide.set(values.subarray(r * cols, (r + 1) * cols), r * (cols + 1) + 1);
  return tensor(wide, [...shape.slice(0, -1), cols + 1], { dtype, device }).narrow(shape.length - 1, 1, cols);
}

/** q/k/v-like tensor in the case's layout: 'bshd' is a transposed view of [B, S, H, D] storage. */
function placed(
  values: Float64Array,
  shape: readonly number[],
  dtype: QkvDType,
  device: Device,
  layout: CaseSpec['layout'],
  misalign?: CaseSpec['misalign'],
): Tensor {
  if (misalign && values.length > 0) return misaligned(values, shape, dtype, device, misalign);
  if (layout === 'bhsd' || shape.length !== 4) return tensor(values, shape, { dtype, device });
  const [B, H, S, D] = shape as [number, number, number, number];
  const physical = new Float64Array(values.length);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < H; h++)
      for (let s = 0; s < S; s++)
        for (let d = 0; d < D; d++) physical[((b * S + s) * H + h) * D + d] = values[((b * H + h) * S + s) * D + d]!;
  return tensor(physical, [B, S, H, D], { dtype, device }).transpose(1, 2);
}

function maskValues(spec: CaseSpec, next: () => bigint): Float64Array | null {
  const m = spec.mask;
  if (!m) return null;
  const z = normals(m.shape, next());
  const sk = m.shape[m.shape.length - 1]!;
  const rows = z.length / sk;
  const out = new Float64Array(z.length);
  for (let n = 0; n < z.length; n++) {
    // bool: about 80% attend; additive: N(0, 1) with about 10% -inf.
    if (m.kind === 'bool') out[n] = z[n]! > -0.85 ? 1 : 0;
    else out[n] = z[n]! < -1.3 ? -Infinity : z[n]!;
  }
  if (m.fullyMaskedRows) {
    // Every 5th row of the mask sees no key at all.
    for (let r = 1; r < rows; r += 5) out.fill(m.kind === 'bool' ? 0 : -Infinity, r * sk, (r + 1) * sk);
  }
  return out;
}

function slopeValues(spec: CaseSpec): Float64Array | null {
  if (!spec.alibi) return null;
  const perBatch = spec.alibi === 'perBatchHead';
  const B = perBatch ? spec.batch : 1;
  const out = new Float64Array(B * spec.headsQ);
  // The usual geometric ALiBi slopes, varied per batch entry so that [B, Hq] is not [Hq] repeated.
  for (let b = 0; b < B; b++)
    for (let h = 0; h < spec.headsQ; h++)
      out[b * spec.headsQ + h] = Math.fround(2 ** ((-8 * (h + 1)) / spec.headsQ) * (1 + 0.25 * b));
  return out;
}

function cumulative(lengths: readonly number[]): Int32Array {
  const cu = new Int32Array(lengths.length + 1);
  lengths.forEach((n, i) => (cu[i + 1] = cu[i]! + n));
  return cu;
}

/** Plants the case's poison values into the raw values of `which` (before rounding, which keeps NaN and Inf). */
function planted(values: Float64Array, spec: CaseSpec, which: PoisonSpec['tensor']): Float64Array {
  for (const p of spec.poison ?? []) {
    if (p.tensor === which && values.length > 0) values[p.index % values.length] = p.value;
  }
  return values;
}

/** The K/V pools of a paged case (the packed values laid out through a shuffled table), else null. */
function pagedValues(spec: CaseSpec, k: Float64Array, v: Float64Array, seed: bigint) {
  if (!spec.paged) return null;
  if (!spec.varlen) throw new Error(`${spec.name}: paged K/V needs varlen lengths`);
  const lengths = spec.varlen.seqlensK;
  const layout = pagedLayout(lengths, spec.paged.blockSize, seed);
  const { blockSize, numBlocks } = layout;
  return {
    layout,
    kPool: toPool(k, lengths, spec.headsKV, spec.headDim, layout, NaN),
    vPool: toPool(v, lengths, spec.headsKV, spec.headDimV, layout, NaN),
    kShape: [numBlocks, blockSize, spec.headsKV, spec.headDim],
    vShape: [numBlocks, blockSize, spec.headsKV, spec.headDimV],
  };
}

export function makeInputs(spec: CaseSpec, seed: bigint, device: Device): CaseInputs {
  const next = seedStream(seed);
  const shapes = qkvShapes(spec);
  const { dtype, layout } = spec;
  // float8 cases: q, k, v stored in e4m3 (fp8 below) on both sides; the naive implementation reads the values
  // the call attends (stored * descale).
  const input = (which: 'q' | 'k' | 'v', shape: readonly number[]) => {
    const raw = planted(normals(shape, next()), spec, which);
    if (!spec.float8) {
      const rounded = roundTo(raw, dtype);
      return { stored: rounded, value: rounded, descale: 1 };
    }
    const { stored, descale } = quantized(raw);
    return { stored, value: stored.map((x) => x * descale), descale };
  };
  const qIn = input('q', shapes.q);
  const kIn = input('k', shapes.k);
  const vIn = input('v', shapes.v);
  const [q, k, v] = [qIn.value, kIn.value, vIn.value];
  const gradOut = roundTo(normals(shapes.out, next()), dtype);
  const maskRaw = maskValues(spec, next);
  // Only an additive mask carries values; a bool one is keep / drop.
  const rawMask = maskRaw && spec.mask?.kind === 'additive' ? planted(maskRaw, spec, 'mask') : maskRaw;
  const mask = rawMask && spec.mask?.kind === 'additive' ? roundTo(rawMask, spec.mask.dtype ?? dtype) : rawMask;
  const slopes = slopeValues(spec);
  const maskDtype = spec.mask?.kind === 'bool' ? 'bool' : dtype;
  const cuQ = spec.varlen ? cumulative(spec.varlen.seqlensQ) : null;
  const cuK = spec.varlen ? cumulative(spec.varlen.seqlensK) : null;
  const paged = pagedValues(spec, kIn.stored, vIn.stored, next());

  // The side under test gets the pools and the table; the reference the packed keys (independent of
  // paging, so that a paged call is checked against a packed one).
  // q, k and v: float8 cases keep their e4m3 values on both sides (the reference takes them too), others
  // the case's dtype under test and float64 for the reference.
  const on = (
    where: Device,
    asDtype: FloatDType,
    lay: CaseSpec['layout'],
    pages: typeof paged,
    off?: CaseSpec['misalign'],
  ): CallTensors => {
    const qkvAs: QkvDType = spec.float8 ? 'float8_e4m3' : asDtype;
    return {
      q: placed(qIn.stored, shapes.q, qkvAs, where, lay, off),
      k: pages
        ? tensor(pages.kPool, pages.kShape, { dtype: qkvAs, device: where })
        : placed(kIn.stored, shapes.k, qkvAs, where, lay, off),
      v: pages
        ? tensor(pages.vPool, pages.vShape, { dtype: qkvAs, device: where })
        : placed(vIn.stored, shapes.v, qkvAs, where, lay, off),
      gradOut: off
        ? placed(gradOut, shapes.out, asDtype, where, 'bhsd', off)
        : tensor(gradOut, shapes.out, { dtype: asDtype, device: where }),
      mask:
        mask && spec.mask
          ? tensor(mask, spec.mask.shape, {
              dtype: maskDtype === 'bool' ? 'bool' : asDtype === 'float64' ? asDtype : (spec.mask.dtype ?? asDtype),
              device: where,
            })
          : null,
      slopes: slopes
        ? tensor(slopes, spec.alibi === 'perBatchHead' ? [spec.batch, spec.headsQ] : [spec.headsQ], {
            dtype: 'float32',
            device: where,
          })
        : null,
      cuSeqlensQ: cuQ ? tensor(cuQ, [cuQ.length], { dtype: 'int32', device: where }) : null,
      cuSeqlensK: cuK ? tensor(cuK, [cuK.length], { dtype: 'int32', device: where }) : null,
      sequsedK: spec.sequsedK ? tensor(spec.sequsedK, [spec.sequsedK.length], { dtype: 'int32', device: where }) : null,
      blockTable: pages
        ? tensor(pages.layout.table, [spec.batch, pages.layout.maxBlocksPerSeq], { dtype: 'int32', device: where })
        : null,
    };
  };
  const cpu: Device = { type: 'cpu', index: 0 };
  const dropoutSeed = next();
  return {
    test: on(device, dtype, layout, paged, spec.misalign),
    ref: on(cpu, 'float64', 'bhsd', null),
    values: { q, k, v, gradOut, mask, slopes, paged },
    descale: spec.float8 ? { q: qIn.descale, k: kIn.descale, v: vIn.descale } : null,
    dropoutSeed,
    // Below 2^20: any uint32 works, and small ones are easy to type when reproducing.
    dropoutOffset: Number(next() >> 44n),
  };
}
