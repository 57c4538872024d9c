// The backward's own argument layout (native/src/bwd_abi.h), beside the forward's (abi.ts): the addon's
// backward takes the forward call's two arrays plus these two. abi.test.ts compares the names with the header.

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

const index = <T extends string>(names: readonly T[]): Readonly<Record<T, number>> =>
  Object.freeze(Object.fromEntries(names.map((n, i) => [n, i])) as Record<T, number>);

export const BWD_PTR = index(BWD_PTR_NAMES);
export const BWD_NUM = index(BWD_NUM_NAMES);

/** Fresh backward argument arrays, zeroed. */
export function bwdArgArrays(): { bptrs: BigUint64Array; bnums: Float64Array } {
  return { bptrs: new BigUint64Array(BWD_PTR_NAMES.length), bnums: new Float64Array(BWD_NUM_NAMES.length) };
}
