// The backward's own argument layout (native/src/bwd_abi.h), beside the forward's (abi.ts): the addon's
// backward takes the forward call's two arrays plus these two. abi.test.ts checks the names against the header.
import { abiLayout } from '@attn/cuda';

export const BWD_PTR_NAMES = ['dout', 'dq', 'dk', 'dv', 'dqAccum', 'dsum', 'dqTurns'] as const;

// Grouped by meaning, one group per line, as the header's enum.
// prettier-ignore
export const BWD_NUM_NAMES = [
  'doBatchStride', 'doHeadStride', 'doRowStride',
  'dqBatchStride', 'dqHeadStride', 'dqRowStride',
  'dkBatchStride', 'dkHeadStride', 'dkRowStride',
  'dvBatchStride', 'dvHeadStride', 'dvRowStride',
  'deterministic', 'gradAligned16',
] as const;

export type BwdPtrName = (typeof BWD_PTR_NAMES)[number];
export type BwdNumName = (typeof BWD_NUM_NAMES)[number];

/** The backward's layout (its own two arrays). */
export const BACKWARD_ABI = abiLayout(BWD_PTR_NAMES, BWD_NUM_NAMES);
export const BWD_PTR = BACKWARD_ABI.ptr;
export const BWD_NUM = BACKWARD_ABI.num;

/** Fresh backward argument arrays, zeroed. */
export function bwdArgArrays(): { bptrs: BigUint64Array; bnums: Float64Array } {
  const { ptrs, nums } = BACKWARD_ABI.arrays();
  return { bptrs: ptrs, bnums: nums };
}
