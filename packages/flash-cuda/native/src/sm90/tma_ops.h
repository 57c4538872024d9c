// Hopper's tensor memory accelerator (TMA) from device code: tiled loads into shared memory that complete
// on an mbarrier's transaction count, and tiled fp32 reductions from shared memory into global memory
// (bulk groups). The tensor maps are encoded on the host (sm90/tensor_maps.h) and passed as
// __grid_constant__ kernel parameters, whose generic address is what these instructions take. The rest of
// the mbarrier protocol (init, arrive, try_wait.parity) is attn/barriers.h.
#pragma once
#include <cuda.h>

#include <cstdint>

namespace attn::flash::sm90 {

// Makes the initialized mbarriers visible to the async proxy (the TMA unit completes transactions on them);
// followed by the barrier that publishes them to the CTA's threads.
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// One arrival on `bar` that also expects `bytes` more bytes of TMA transactions in the current phase: the
// phase completes once every arrival is in and every expected byte has landed.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void prefetch_tensormap(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// The box of a 4-D tensor map at coordinates (c0, c1, c2, c3) (innermost first) into shared memory at dst;
// its bytes count towards bar's transaction count. Elements outside the tensor are zero-filled.
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1, int c2,
                                            int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], "
      "[%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

// global[box at (c0, c1, c2, c3)] += shared[src] element-wise (the map's type: fp32 here), in the calling
// thread's current bulk group. Elements outside the tensor are not written. The shared source must have
// been published to the async proxy (fence.proxy.async.shared::cta by its writers, then a barrier).
__device__ __forceinline__ void tma_reduce_add_4d(const CUtensorMap* map, uint32_t src, int c0, int c1, int c2,
                                                  int c3) {
  asm volatile(
      "cp.reduce.async.bulk.tensor.4d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(
          reinterpret_cast<uint64_t>(map)),
      "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

__device__ __forceinline__ void bulk_commit_group() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }

// Until at most N of this thread's bulk groups still read their shared-memory sources (the buffer may then
// be written again); the global writes may still be in flight.
template <int N>
__device__ __forceinline__ void bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

// Until at most N of this thread's bulk groups are incomplete (their global writes done).
template <int N>
__device__ __forceinline__ void bulk_wait_group() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

// Turns between CTAs that add into the same global rows in a fixed order (a counter in global memory, zeroed
// before the kernel): wait_turn spins until the counter reads `mine` (acquire, GPU scope), then orders the
// caller's later bulk operations after it; end_turn, once the caller's additions are complete (bulk_wait_group),
// orders them before its release increment. A CTA only ever waits for CTAs launched before it, which are
// resident or done, so the turns cannot deadlock.
__device__ __forceinline__ void wait_turn(const int* turn, int mine) {
  int v;
  do {
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(turn) : "memory");
  } while (v != mine);
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
}
__device__ __forceinline__ void end_turn(int* turn) {
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
  asm volatile("red.release.gpu.global.add.s32 [%0], 1;\n" ::"l"(turn) : "memory");
}

}  // namespace attn::flash::sm90
