// The backward's own arguments, beside the forward's (abi.h): backward(ptrs, nums, bptrs, bnums) takes
// the forward call's arrays as they were (out and lse being the saved forward results) plus these two.
// src/bwd-abi.ts lists the same names in the same order (abi.test.ts compares the two files).
#pragma once

namespace attn::flash::abi {

// BigUint64Array: device addresses (0 = absent). dqAccum is only needed in the default (atomic) mode.
enum BwdPtr : int { kDout, kDq, kDk, kDv, kDqAccum, kDsum, kBwdPtrCount };

// Float64Array: strides (elements) of dO and of the gradients, flags.
enum BwdNum : int {
  kDoBatchStride,
  kDoHeadStride,
  kDoRowStride,
  kDqBatchStride,
  kDqHeadStride,
  kDqRowStride,
  kDkBatchStride,
  kDkHeadStride,
  kDkRowStride,
  kDvBatchStride,
  kDvHeadStride,
  kDvRowStride,
  kDeterministic,
  kGradAligned16,
  kBwdNumCount
};

}  // namespace attn::flash::abi
