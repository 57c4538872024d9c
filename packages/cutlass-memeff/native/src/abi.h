// The argument layout between src/launch-args.ts and the addon (@attn/cuda's one argument ABI,
// attn/abi_args.h): forward(ptrs, nums), backwardPlan / backward(ptrs, nums, bptrs, bnums), each array indexed
// by these enums. src/abi.ts lists the same names in the same order (abi.test.ts checks them against this file).
#pragma once

namespace memeff::abi {

// BigUint64Array: device addresses (0 = absent), the stream, the dropout seed.
// clang-format off: the enums are grouped by meaning, one group per line.
enum Ptr : int {
  kQ, kK, kV, kOut, kLse, kStream,
  kAlibi, kCuSeqlensQ, kCuSeqlensK, kSequsedK, kMask, kSeed,
  kPtrCount
};

// Float64Array: sizes, strides (elements), flags (0/1) and scalars. kPath: PathRequest (0 auto, 1 FMA, 2 tensor
// cores); kDtype and kMaskDtype: ElemType codes; kMaskKind: MaskKind (0 none, 1 additive, 2 bool); window sides
// -1 unbounded.
enum Num : int {
  kDtype, kDevice, kPath,
  kBatch, kHeadsQ, kHeadsKv, kSeqQ, kSeqK, kHeadDim, kHeadDimV, kTotalQ, kTotalK,
  kQBatchStride, kQHeadStride, kQRowStride,
  kKBatchStride, kKHeadStride, kKRowStride,
  kVBatchStride, kVHeadStride, kVRowStride,
  kOBatchStride, kOHeadStride, kORowStride,
  kScale, kCausal, kLowerRight, kWindowLeft, kWindowRight, kSoftcap,
  kAlibiBatchStride, kAlibiHeadStride,
  kMaskKind, kMaskDtype, kMaskBatchStride, kMaskHeadStride, kMaskRowStride, kMaskKeyStride,
  kDropout, kDropoutThreshold, kDropoutOffset, kDropoutKeepScale,
  kNumCount
};

// The backward's own arrays, beside the forward's (out and lse being the saved forward results).
enum BwdPtr : int { kDout, kDq, kDk, kDv, kDbias, kWorkspace, kBwdPtrCount };

// dbias's strides and sizes along [B, Hq, Sq, Sk] (stride 0 and size 1 on the dims it sums over).
enum BwdNum : int {
  kDoBatchStride, kDoHeadStride, kDoRowStride,
  kDqBatchStride, kDqHeadStride, kDqRowStride,
  kDkBatchStride, kDkHeadStride, kDkRowStride,
  kDvBatchStride, kDvHeadStride, kDvRowStride,
  kDbiasBatchStride, kDbiasHeadStride, kDbiasRowStride, kDbiasKeyStride,
  kDbiasBatches, kDbiasHeads, kDbiasRows, kDbiasKeys,
  kDeterministic, kWorkspaceBytes,
  kBwdNumCount
};
// clang-format on

}  // namespace memeff::abi
