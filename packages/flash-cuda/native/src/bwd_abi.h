// The backward's own arguments, beside the forward's (abi.h): backward(ptrs, nums, bptrs, bnums) takes
// the forward call's arrays as they were (out and lse being the saved forward results) plus these two.
// src/bwd-abi.ts lists the same names in the same order (abi.test.ts compares the two files).
#pragma once

namespace attn::flash::abi {

// BigUint64Array: device addresses (0 = absent). dqAccum: where the plan's dK/dV kernel adds dQ (the default
// mode, and the TMA kernel's deterministic mode); dqTurns: int32 turn counters where the plan says dqTurnRows > 0.
enum BwdPtr : int { kDout, kDq, kDk, kDv, kDqAccum, kDsum, kDqTurns, kBwdPtrCount };

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
