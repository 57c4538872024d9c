// The gradient of an additive mask, summed over the dims it was broadcast along, so that it comes
// back in the mask's own shape (as autograd would give it).
import { emptyOutput, OUTPUT_NAMES } from '@attn/core';
import type { MaskParams, Tensor } from '@attn/core';
import { scatterRow } from './host-io.js';

export class BiasGrad {
  private readonly acc: Float64Array;
  /** Strides of the contiguous mask-shaped gradient, seen as [B, Hq, Sq, Sk]: 0 on broadcast dims. */
  private readonly strides: readonly [number, number, number, number];

  constructor(private readonly mask: MaskParams) {
    const shape = mask.tensor.shape;
    const shape4 = [...Array<number>(4 - shape.length).fill(1), ...shape];
    const strides = [0, 0, 0, 0];
    let stride = 1;
    for (let d = 3; d >= 0; d--) {
      const n = shape4[d]!;
      strides[d] = n === 1 ? 0 : stride;
      stride *= n;
    }
    this.strides = strides as [number, number, number, number];
    this.acc = new Float64Array(stride);
  }

  /** Offset of score (b, h, i, 0) in the gradient; key j adds j * keyStride. */
  rowBase(b: number, h: number, i: number): number {
    return b * this.strides[0] + h * this.strides[1] + i * this.strides[2];
  }

  get keyStride(): number {
    return this.strides[3];
  }

  add(index: number, value: number): void {
    this.acc[index] = this.acc[index]! + value;
  }

  /** The gradient as a contiguous tensor of the mask's shape and dtype, rounded once. */
  toTensor(): Tensor {
    const t = this.mask.tensor;
    const grad = emptyOutput(OUTPUT_NAMES.dbias, t.shape, { dtype: t.dtype });
    scatterRow(this.acc, 0, this.acc.length, grad.hostData(), t.dtype, 0, 1);
    return grad;
  }
}
