// The forward's argument layout (native/src/abi.h): @attn/cuda's one argument ABI (its src/abi.ts), names in
// the header's order. abi.test.ts checks them against the header with the shared drift check.
import { abiLayout } from '@attn/cuda';

// Grouped by meaning, one group per line, as the header's enum.
// prettier-ignore
export const PTR_NAMES = [
  'q', 'k', 'v', 'out', 'lse', 'alibi', 'cuSeqlensQ', 'cuSeqlensK', 'oaccum', 'lseAccum', 'stream', 'seed', 'sequsedK',
  'blockTable', 'kvSeqlens', 'kvLeftpad',
  'kvKNew', 'kvVNew', 'kvBatchIdx', 'rotaryCos', 'rotarySin',
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
  'kvFused', 'kvKNewS0', 'kvKNewS1', 'kvKNewS2', 'kvKNewS3', 'kvVNewS0', 'kvVNewS1', 'kvVNewS2', 'kvVNewS3',
  'rotaryRows', 'rotaryHalf', 'rotaryInterleaved', 'rotaryQPerRow', 'rotaryCosS0', 'rotaryCosS1', 'rotarySinS0', 'rotarySinS1',
  'fp8', 'descaleQ', 'descaleK', 'descaleV',
  'allocate', 'outBytes', 'lseBytes', 'accumBytes', 'lseAccumOffset',
] as const;

/** nums[NUM.allocate]'s bits (abi.h's Alloc): what forward() allocates from @attn/cuda's allocator before it launches. */
export const ALLOC = Object.freeze({ out: 1, lse: 2, partials: 4, lseScratch: 8 });

export type PtrName = (typeof PTR_NAMES)[number];
export type NumName = (typeof NUM_NAMES)[number];

/** The forward's layout: the packer's slots (`FORWARD_ABI.num.batch`, ...) and its fresh arrays. */
export const FORWARD_ABI = abiLayout(PTR_NAMES, NUM_NAMES);
export const PTR = FORWARD_ABI.ptr;
export const NUM = FORWARD_ABI.num;

/** Fresh argument arrays, zeroed. */
export function argArrays(): { ptrs: BigUint64Array; nums: Float64Array } {
  return FORWARD_ABI.arrays();
}
