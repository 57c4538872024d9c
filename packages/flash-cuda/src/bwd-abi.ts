// The backward's own argument layout (native/src/bwd_abi.h), beside the forward's (abi.ts): the addon's
// backward takes the forward call's two arrays plus these two. abi.test.ts compares the names with the header.
import { nameIndex } from './abi.js';

export const BWD_PTR_NAMES = ['dout', 'dq', 'dk', 'dv', 'dqAccum', 'dsum'] as const;

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

export const BWD_PTR = nameIndex(BWD_PTR_NAMES);
export const BWD_NUM = nameIndex(BWD_NUM_NAMES);

/** Fresh backward argument arrays, zeroed. */
export function bwdArgArrays(): { bptrs: BigUint64Array; bnums: Float64Array } {
  return { bptrs: new BigUint64Array(BWD_PTR_NAMES.length), bnums: new Float64Array(BWD_NUM_NAMES.length) };
}
