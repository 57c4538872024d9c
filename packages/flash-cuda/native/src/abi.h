// The argument layout between src/native.ts and the addon: two typed arrays, indexed by these enums.
// src/abi.ts lists the same names in the same order (a test compares the two files).
#pragma once

namespace attn::flash::abi {

// BigUint64Array: device addresses (0 = absent), the stream, the dropout seed. The kv-cache call that appends
// in the forward (kKvFused) adds kNew / vNew, a contiguous cache's cacheBatchIdx and the rotary tables.
// clang-format off: the enums are grouped by meaning, one group per line.
enum Ptr : int {
  kQ, kK, kV, kOut, kLse, kAlibi, kCuSeqlensQ, kCuSeqlensK, kOaccum, kLseAccum, kStream, kSeed, kSequsedK,
  kBlockTable, kKvSeqlens, kKvLeftpad,
  kKvKNew, kKvVNew, kKvBatchIdx, kRotaryCos, kRotarySin,
  kPtrCount
};

// Float64Array: sizes, strides (elements), flags (0/1) and scalars. kFp8: float8_e4m3 q, k, v (strides in bytes) with
// their descale factors; the output is then bf16 (kIsBf16 = 1). kAllocate: what forward() allocates
// from @attn/cuda's allocator before it launches (kAlloc* bits; sizes in bytes, the lse partials at
// kLseAccumOffset bytes into the partials' block), 0 for a call whose buffers are all given.
enum Num : int {
  kIsBf16, kBatch, kHeadsQ, kHeadsK, kSeqQ, kSeqK, kHeadDim, kTotalQ,
  kQBatchStride, kQHeadStride, kQRowStride,
  kKBatchStride, kKHeadStride, kKRowStride,
  kVBatchStride, kVHeadStride, kVRowStride,
  kOBatchStride, kOHeadStride, kORowStride,
  kLseBatchStride, kLseHeadStride,
  kScale, kCausal, kLowerRight, kWindowLeft, kWindowRight, kAlibiBatchStride, kSoftcap,
  kDropout, kDropoutThreshold, kDropoutKeepScale, kDropoutOffset,
  kDevice, kSmCount, kSmemOptin, kCcMajor, kCcMinor,
  kNumSplits, kAligned16, kKernel,
  kTotalK, kPageSize, kNumPages, kMaxPagesPerSeq, kKPageStride, kVPageStride,
  kKvCache, kKvNewLen, kKernelFamily,
  kKvFused, kKvKNewS0, kKvKNewS1, kKvKNewS2, kKvKNewS3, kKvVNewS0, kKvVNewS1, kKvVNewS2, kKvVNewS3,
  kRotaryRows, kRotaryHalf, kRotaryInterleaved, kRotaryQPerRow, kRotaryCosS0, kRotaryCosS1, kRotarySinS0, kRotarySinS1,
  kFp8, kDescaleQ, kDescaleK, kDescaleV,
  kAllocate, kOutBytes, kLseBytes, kAccumBytes, kLseAccumOffset,
  kNumCount
};
// clang-format on

// kAllocLseScratch: lse is allocated and freed again once the kernels are queued (the caller keeps only out).
enum Alloc : int { kAllocOut = 1, kAllocLse = 2, kAllocPartials = 4, kAllocLseScratch = 8 };

}  // namespace attn::flash::abi
