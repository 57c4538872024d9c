// The addon's argument layout (native/src/abi.h): @attn/cuda's one argument ABI (its src/abi.ts), names in
// the header's order. abi.test.ts checks them against the header with the shared drift check.
import { abiLayout } from '@attn/cuda';

// Grouped by meaning, one group per line, as the header's enum.
// prettier-ignore
const PTR_NAMES = [
  'q', 'k', 'v', 'out', 'lse', 'stream',
  'alibi', 'cuSeqlensQ', 'cuSeqlensK', 'sequsedK', 'mask', 'seed',
] as const;

// prettier-ignore
const NUM_NAMES = [
  'dtype', 'device', 'path',
  'batch', 'headsQ', 'headsKv', 'seqQ', 'seqK', 'headDim', 'headDimV', 'totalQ', 'totalK',
  'qBatchStride', 'qHeadStride', 'qRowStride',
  'kBatchStride', 'kHeadStride', 'kRowStride',
  'vBatchStride', 'vHeadStride', 'vRowStride',
  'oBatchStride', 'oHeadStride', 'oRowStride',
  'scale', 'causal', 'lowerRight', 'windowLeft', 'windowRight', 'softcap',
  'alibiBatchStride', 'alibiHeadStride',
  'maskKind', 'maskDtype', 'maskBatchStride', 'maskHeadStride', 'maskRowStride', 'maskKeyStride',
  'dropout', 'dropoutThreshold', 'dropoutOffset', 'dropoutKeepScale',
] as const;

// prettier-ignore
const BWD_PTR_NAMES = ['dout', 'dq', 'dk', 'dv', 'dbias', 'workspace'] as const;

// prettier-ignore
const BWD_NUM_NAMES = [
  'doBatchStride', 'doHeadStride', 'doRowStride',
  'dqBatchStride', 'dqHeadStride', 'dqRowStride',
  'dkBatchStride', 'dkHeadStride', 'dkRowStride',
  'dvBatchStride', 'dvHeadStride', 'dvRowStride',
  'dbiasBatchStride', 'dbiasHeadStride', 'dbiasRowStride', 'dbiasKeyStride',
  'dbiasBatches', 'dbiasHeads', 'dbiasRows', 'dbiasKeys',
  'deterministic', 'workspaceBytes',
] as const;

/** forward(ptrs, nums), and the first two arrays of the backward's functions. */
export const FORWARD_ABI = abiLayout(PTR_NAMES, NUM_NAMES);
/** The backward's own two arrays (bptrs, bnums). */
export const BACKWARD_ABI = abiLayout(BWD_PTR_NAMES, BWD_NUM_NAMES);

/** nums[num.path]: native/src/dispatch.h's PathRequest. */
export const PATH_CODE = Object.freeze({ auto: 0, simt: 1, mma: 2 });
/** nums[num.maskKind]: native/src/common/params.h's MaskKind. */
export const MASK_KIND = Object.freeze({ none: 0, additive: 1, bool: 2 });
