// Shared-memory matrix descriptors and the ordering primitives of Hopper's asynchronous warpgroup MMA
// (sm_90a), shared by the backends' sm90 kernels (flash-cuda's 16-bit ones, memeff-cuda's fp32 forward).
// The tiles the descriptors point at are 128-byte rows in column blocks with each 16-byte chunk XOR-ed by
// row % 8, which is exactly wgmma's 128-byte swizzle when every tile starts on a 1024-byte boundary.
#pragma once
#include <cstdint>

namespace attn::sm90 {

// Descriptor of a 128-byte-swizzled tile at shared address `addr` (bits: start >> 4 in [0, 14), leading
// byte offset >> 4 in [16, 30), stride byte offset >> 4 in [32, 46), swizzle mode 1 = 128 B in [62, 64)).
//  K-major operand (Q, K for S = Q.K^T): rows 128 B apart, 8-row groups `sbo` = 1024 B apart; the
//    leading offset is unused (one k16 step never leaves a 128-byte row), 1 by convention.
//  MN-major operand (V for O += P.V): 8 key rows 128 B apart, groups of 8 `sbo` = 1024 B apart, and
//    `lbo` between the 64-column blocks of the head dim.
// Moving along K within a tile is a plain add to the start field (the swizzle is on absolute address bits).
__device__ __forceinline__ uint64_t make_desc(uint32_t addr, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(lbo_bytes >> 4) << 16) | (uint64_t(sbo_bytes >> 4) << 32) |
         (uint64_t(1) << 62);
}

// Before the first wgmma of a batch, and whenever registers it reads or accumulates into were written.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Pins accumulator registers at this point of the program: the compiler may not move their reads or writes
// across it, so nothing touches them while a wgmma that owns them is in flight.
template <int R, int C>
__device__ __forceinline__ void fence_operands(float (&d)[R][C]) {
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int j = 0; j < C; ++j) asm volatile("" : "+f"(d[i][j])::"memory");
}
// The same for register A fragments: they stay where the in-flight wgmma reads them until this point.
template <int R, int C>
__device__ __forceinline__ void fence_operands(uint32_t (&a)[R][C]) {
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int j = 0; j < C; ++j) asm volatile("" : "+r"(a[i][j])::"memory");
}

// cp.async and st.shared write through the generic proxy, wgmma reads through the async proxy: each
// thread fences its own writes before the barrier that publishes them.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

}  // namespace attn::sm90
