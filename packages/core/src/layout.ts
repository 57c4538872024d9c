// Shape and stride arithmetic, in elements. Strides are non-negative (0 = broadcast), as in PyTorch.
import { AttnInputError } from './errors.js';

/** Largest size of one dimension: kernels index with int32. */
export const MAX_DIM = 2 ** 31 - 1;

/** Validates a shape; returns its element count. Throws ATTN_SHAPE / ATTN_SIZE. */
export function checkShape(shape: readonly number[], what = 'shape'): number {
  if (!Array.isArray(shape)) {
    throw new AttnInputError('ATTN_SHAPE', `${what} must be an array of sizes, got ${String(shape)}.`);
  }
  let numel = 1;
  for (const [i, s] of shape.entries()) {
    if (!Number.isInteger(s) || s < 0) {
      throw new AttnInputError('ATTN_SHAPE', `${what}[${i}] must be a non-negative integer, got ${String(s)}.`);
    }
    if (s > MAX_DIM) {
      throw new AttnInputError('ATTN_SIZE', `${what}[${i}] = ${s} exceeds the largest supported size 2^31 - 1.`);
    }
    numel *= s;
  }
  if (numel > Number.MAX_SAFE_INTEGER) {
    throw new AttnInputError('ATTN_SIZE', `${what} [${shape.join(', ')}] has more than 2^53 elements.`);
  }
  return numel;
}

export function shapeNumel(shape: readonly number[]): number {
  let n = 1;
  for (const s of shape) n *= s;
  return n;
}

export function contiguousStrides(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length);
  let acc = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    strides[d] = acc;
    acc *= Math.max(shape[d]!, 1);
  }
  return strides;
}

/** Row-major without gaps. Size-1 dims may have any stride (as PyTorch); empty tensors are contiguous. */
export function isContiguousLayout(shape: readonly number[], strides: readonly number[]): boolean {
  if (shape.includes(0)) return true;
  let expected = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    const s = shape[d]!;
    if (s !== 1) {
      if (strides[d] !== expected) return false;
      expected *= s;
    }
  }
  return true;
}

/** Wraps a possibly negative dim into [0, rank). Throws ATTN_DIM. */
export function normalizeDim(dim: number, rank: number, what = 'dim'): number {
  if (!Number.isInteger(dim) || dim < -rank || dim >= rank) {
    throw new AttnInputError(
      'ATTN_DIM',
      `${what} ${String(dim)} is out of range for a rank-${rank} tensor: use an integer in [${-rank}, ${rank - 1}].`,
    );
  }
  return dim < 0 ? dim + rank : dim;
}

/** Largest element index reachable from offset (offset itself for an empty or rank-0 tensor). */
export function maxReachableIndex(shape: readonly number[], strides: readonly number[], offset: number): number {
  let max = offset;
  for (let d = 0; d < shape.length; d++) {
    if (shape[d] === 0) return offset;
    max += (shape[d]! - 1) * strides[d]!;
  }
  return max;
}

/**
 * Strides that view a tensor of (shape, strides) as newShape without copying, or null when no
 * such view exists (the rule of ATen's computeStride: newShape must split or merge only dims that
 * are laid out contiguously relative to each other).
 */
export function viewStrides(
  shape: readonly number[],
  strides: readonly number[],
  newShape: readonly number[],
): number[] | null {
  if (shapeNumel(shape) === 0) return contiguousStrides(newShape);
  if (shape.length === 0) return newShape.map(() => 1);
  const out = new Array<number>(newShape.length);
  let viewD = newShape.length - 1;
  let chunkBaseStride = strides.length > 0 ? strides[strides.length - 1]! : 1;
  let tensorNumel = 1;
  let viewNumel = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    tensorNumel *= shape[d]!;
    // A chunk ends where dim d - 1 is not laid out right after dim d.
    if (d === 0 || (shape[d - 1] !== 1 && strides[d - 1] !== tensorNumel * chunkBaseStride)) {
      while (viewD >= 0 && (viewNumel < tensorNumel || newShape[viewD] === 1)) {
        out[viewD] = viewNumel * chunkBaseStride;
        viewNumel *= newShape[viewD]!;
        viewD--;
      }
      if (viewNumel !== tensorNumel) return null;
      if (d > 0) {
        chunkBaseStride = strides[d - 1]!;
        tensorNumel = 1;
        viewNumel = 1;
      }
    }
  }
  if (viewD !== -1) return null;
  return out;
}

/**
 * Calls fn once per innermost row, in logical row-major order: the row's first storage index,
 * the storage stride along the row, its length, and the logical index of its first element.
 * Callers do the per-element work in a tight loop of their own.
 */
export function forEachRow(
  shape: readonly number[],
  strides: readonly number[],
  offset: number,
  fn: (start: number, stride: number, length: number, logical: number) => void,
): void {
  const rank = shape.length;
  if (shapeNumel(shape) === 0) return;
  if (rank === 0) {
    fn(offset, 1, 1, 0);
    return;
  }
  const rowLen = shape[rank - 1]!;
  const rowStride = strides[rank - 1]!;
  const outer = rank - 1;
  const idx = new Array<number>(outer).fill(0);
  let start = offset;
  let logical = 0;
  for (;;) {
    fn(start, rowStride, rowLen, logical);
    logical += rowLen;
    // Odometer over the outer dims.
    let d = outer - 1;
    while (d >= 0) {
      idx[d]!++;
      start += strides[d]!;
      if (idx[d]! < shape[d]!) break;
      start -= idx[d]! * strides[d]!;
      idx[d] = 0;
      d--;
    }
    if (d < 0) return;
  }
}

/** Checks that `from` broadcasts to `to` (right-aligned; each dim equal or 1). */
export function broadcastsTo(from: readonly number[], to: readonly number[]): boolean {
  if (from.length > to.length) return false;
  const lead = to.length - from.length;
  return from.every((s, i) => s === 1 || s === to[lead + i]);
}

/** Strides of `shape` broadcast to `target` (right-aligned): 0 on broadcast and missing dims. */
export function expandedStridesTo(
  shape: readonly number[],
  strides: readonly number[],
  target: readonly number[],
): number[] {
  const lead = target.length - shape.length;
  return target.map((t, i) => {
    const d = i - lead;
    return d < 0 || shape[d] === 1 || t === 1 ? 0 : strides[d]!;
  });
}
