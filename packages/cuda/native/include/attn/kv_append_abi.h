// The argument arrays of the kv-cache append kernel (attn/kv_append.cuh), apart from the kernel so that
// host-compiled bindings can check their sizes.
#pragma once

namespace attn::kv {

// The argument layout from TS (@attn/cuda's src/kv-append.ts lists the same names in the same order).
// BigUint64Array: device addresses (0 = absent) and the stream.
// clang-format off: the enums are grouped by meaning, one group per line.
enum Ptr : int {
  kQ, kQOut, kKNew, kVNew, kKCache, kVCache, kCos, kSin, kCacheSeqlens, kCacheBatchIdx, kBlockTable, kRowTable, kStream,
  kPtrCount
};
// Float64Array: sizes, strides (elements) and flags.
enum Num : int {
  kDtype, kBatch, kSeqQ, kHeadsQ, kHeadsKV, kHeadDim, kHeadDimV, kNewLen,
  kNumBlocks, kBlockSize, kMaxBlocks, kCapacity, kRotRows, kRotHalf, kInterleaved, kQPerRow,
  kQS0, kQS1, kQS2, kQS3,
  kKNewS0, kKNewS1, kKNewS2, kKNewS3,
  kVNewS0, kVNewS1, kVNewS2, kVNewS3,
  kKCacheS0, kKCacheS1, kKCacheS2, kKCacheS3,
  kVCacheS0, kVCacheS1, kVCacheS2, kVCacheS3,
  kCosS0, kCosS1, kSinS0, kSinS1,
  kNumCount
};
// clang-format on

}  // namespace attn::kv
