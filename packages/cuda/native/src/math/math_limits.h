// cuda-math's limits and launch shape, written once for the kernels and bind_math.cpp; mathLimits()
// reports them to TS, whose rules (src/math-backend/limits.ts) must state the same numbers (a test
// compares them and drives the addon at each limit and one past it).
#pragma once
#include <cstdint>

namespace attn::math {

// Threads per block: four warps. Every kernel's loops over the head dim stride by it.
constexpr int kThreads = 128;
// Keys scored per pass of a query row (one warp per key).
constexpr int kKeyTile = 64;
// Largest D and Dv. The forward and row kernels keep kMaxHeadDim / kThreads accumulators per thread
// in registers; the key kernel's smallest tile (one key, float64) needs 4 * 1024 * 8 = 32 KiB of
// shared memory, within the 48 KiB every CUDA GPU gives a block without opting in.
constexpr int kMaxHeadDim = 1024;
constexpr int kPerThread = kMaxHeadDim / kThreads;
// Largest Sq and Sk, dense or varlen: varlen offsets are int32, and dropout's Philox counter takes
// positions as 32-bit words; one limit for both kinds of call.
constexpr int64_t kMaxSeq = (int64_t{1} << 31) - 1;
// Shared memory the key kernel sizes its tile to (no opt-in needed on any GPU).
constexpr int kKeyKernelSmemBytes = 48 * 1024;
// Largest key tile of the key kernel.
constexpr int kMaxKeyTile = 32;
// Grid size cap: the kernels loop over rows, key tiles and dbias elements with a block (or warp) stride.
constexpr int64_t kMaxBlocks = int64_t{1} << 20;

}  // namespace attn::math
