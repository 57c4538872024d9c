// The argument layout shared with the addon (native/src/abi.h): names in the same order. abi.test.ts
// reads the header and fails when the two lists drift apart.

// Grouped by meaning, one group per line, as the header's enum.
// prettier-ignore
export const PTR_NAMES = [
  'q', 'k', 'v', 'out', 'lse', 'alibi', 'cuSeqlensQ', 'cuSeqlensK', 'oaccum', 'lseAccum', 'stream', 'seed', 'sequsedK',
  'blockTable', 'kvSeqlens', 'kvLeftpad',
] as const;

// Grouped by meaning, one group per line, as the header's enum.
// prettier-ignore
export const NUM_NAMES = [
  'isBf16', 'batch', 'headsQ', 'headsK', 'seqQ', 'seqK', 'headDim', 'totalQ',
  'qBatchStride', 'qHeadStride', 'qRowStride',
  'kBatchStride', 'kHeadStride', 'kRowStride',
  'vBatchStride', 'vHeadStride', 'vRowStride',
  'oBatchStride', 'oHeadStride', 'oRowStride',
  'lseBatchStride', 'lseHeadStride',
  'scale', 'causal', 'lowerRight', 'windowLeft', 'windowRight', 'alibiBatchStride', 'softcap',
  'dropout', 'dropoutThreshold', 'dropoutKeepScale', 'dropoutOffset',
  'device', 'smCount', 'smemOptin', 'ccMajor', 'ccMinor',
  'numSplits', 'aligned16', 'kernel',
  'totalK', 'pageSize', 'numPages', 'maxPagesPerSeq', 'kPageStride', 'vPageStride',
  'kvCache', 'kvNewLen', 'kernelFamily',
  'allocate', 'outBytes', 'lseBytes', 'accumBytes', 'lseAccumOffset',
] as const;

/** nums[NUM.allocate]'s bits (abi.h's Alloc): what forward() allocates from @attn/cuda's allocator before it launches. */
export const ALLOC = Object.freeze({ out: 1, lse: 2, partials: 4, lseScratch: 8 });

export type PtrName = (typeof PTR_NAMES)[number];
export type NumName = (typeof NUM_NAMES)[number];

/** Each name's position in its list: the enum value the header gives it. */
export const nameIndex = <T extends string>(names: readonly T[]): Readonly<Record<T, number>> =>
  Object.freeze(Object.fromEntries(names.map((n, i) => [n, i])) as Record<T, number>);

export const PTR = nameIndex(PTR_NAMES);
export const NUM = nameIndex(NUM_NAMES);

/** Fresh argument arrays, zeroed. */
export function argArrays(): { ptrs: BigUint64Array; nums: Float64Array } {
  return { ptrs: new BigUint64Array(PTR_NAMES.length), nums: new Float64Array(NUM_NAMES.length) };
}
