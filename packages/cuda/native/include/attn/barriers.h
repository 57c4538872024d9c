// Barriers below __syncthreads: named barriers (any arch; a subset of the block's warps meets), and Hopper's
// shared-memory mbarriers and register hand-over between warpgroups (sm_90a), with which warp-specialized
// kernels hand tiles from producer to consumers and let consumer warpgroups take turns on the tensor cores.
#pragma once
#include <cstdint>

namespace attn {
inline namespace ptx {

// Named barriers (ids 1..15; 0 is __syncthreads'): `threads` arrivals (a multiple of 32) complete one; sync
// waits, arrive does not. A sync orders its threads' shared-memory accesses as __syncthreads does for the block.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// The same arrival under a predicate instead of a branch (the wgmma kernels keep control flow out of the
// stretch where their accumulators are in flight).
__device__ __forceinline__ void named_barrier_arrive_if(bool pred, int id, int threads) {
  asm volatile(
      "{\n.reg .pred p;\n"
      "setp.ne.b32 p, %2, 0;\n"
      "@p bar.arrive %0, %1;\n}\n" ::"r"(id),
      "r"(threads), "r"(int(pred))
      : "memory");
}

}  // namespace ptx

namespace sm90 {

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

// Blocks until the phase of parity `parity` has completed. A fresh barrier is in phase 0, and the phase
// before it (parity 1) counts as completed: a producer waiting for "stage free" with parity 1 passes on the
// first round through the ring.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// One arrival on `bar` once every cp.async this thread issued before it has landed (the count the barrier
// was initialized with includes it: .noinc).
__device__ __forceinline__ void cp_async_mbar_arrive(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

// Hands registers between warpgroups (every warp of the warpgroup executes it): the producer gives its
// registers up, the consumers take them (kernels launched with a producer warpgroup start every warp at the
// launch bound's even share).
template <int kRegs>
__device__ __forceinline__ void regs_dealloc() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void regs_alloc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

}  // namespace sm90
}  // namespace attn
