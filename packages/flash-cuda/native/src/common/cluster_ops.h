// Thread-block cluster primitives (sm90 and newer): the cluster-wide barrier and loads from another CTA's shared
// memory (distributed shared memory). The decode kernel merges its split-KV CTAs through them. Compiled only for
// sm90+ device code; callers guard their use with __CUDA_ARCH__ >= 900.
#pragma once
#include <cstdint>

namespace attn::flash {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Every thread of every CTA in the cluster arrives; shared-memory writes before it (release) are visible to
// reads after it (acquire) in any CTA of the cluster.
__device__ __forceinline__ void cluster_barrier() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

// The address, in the cluster's shared window, of `local` (a shared-memory address of this CTA) in CTA `rank`.
__device__ __forceinline__ uint32_t cluster_addr(uint32_t local, uint32_t rank) {
  uint32_t out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(out) : "r"(local), "r"(rank));
  return out;
}

__device__ __forceinline__ float ld_cluster_f32(uint32_t addr) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
  return v;
}

__device__ __forceinline__ float4 ld_cluster_f32x4(uint32_t addr) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}
#endif

}  // namespace attn::flash
