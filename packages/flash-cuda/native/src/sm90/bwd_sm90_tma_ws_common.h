// What the TMA warp-specialized dK/dV kernel's parts share (flash_bwd_sm90_tma_ws_kernel.h: the producer and the
// consumers of D <= 128; bwd_sm90_tma_ws_roles.h: the consumers of D 256): its parameters, its shared-memory
// carve and its mbarrier waits.
#pragma once
#include <cuda.h>

#include <cstdint>
#ifdef ATTN_BWD_TMA_WS_WATCHDOG
#include <cstdio>
#endif

#include "attn/barriers.h"
#include "attn/ptx.h"
#include "common/bwd_params.h"
#include "sm90/bwd_sm90_tma_ws_traits.h"

namespace attn::flash {

// The kernel's parameters: the backward's, and the tensor maps of Q, K, V, dO (bf16/fp16, 64-column boxes)
// and the fp32 dQ workspace (32-column boxes), encoded on the host (sm90/tensor_maps.h).
struct BwdTmaArgs {
  BwdParams p;
  CUtensorMap q, k, v, dout, dq_accum;
};

namespace sm90 {

// K, V, two stages of (Q, dO), the dS^T buffers, the fp32 region (D <= 128: the dQ tile, boxes of kBlockM rows
// x 32 columns, 128-byte swizzled; D 256: S^T from warpgroup 0 to 1), then per stage the lse and Dsum rows, and
// the mbarriers: full[2], empty[2], kv.
template <typename Tr>
struct TmaWsSmem {
  using E = typename Tr::Element;
  static constexpr int kStageElems = 2 * Tr::kSmemQElems;  // stage s: Q at q0 + s * kStageElems, dO after it
  E *k, *v, *q0, *ds0;
  float *dq, *s, *lse, *dsum;  // dq and s share the fp32 region (only one exists per form)
  uint32_t full, empty, kv;    // shared addresses; full[s] = full + 8 s
  __device__ __forceinline__ explicit TmaWsSmem(unsigned char* raw) {
    const uint32_t raw_addr = smem_addr(raw);
    k = reinterpret_cast<E*>(raw + ((1024u - (raw_addr & 1023u)) & 1023u));
    v = k + Tr::kSmemKVElems;
    q0 = v + Tr::kSmemKVElems;
    ds0 = q0 + Tr::kStages * kStageElems;
    dq = s = reinterpret_cast<float*>(ds0 + Tr::kDsBuffers * Tr::kSmemDsElems);
    lse = dq + Tr::kSmemDqFloats + Tr::kSmemSFloats;
    dsum = lse + Tr::kStages * Tr::kBlockM;
    full = smem_addr(dsum + Tr::kStages * Tr::kBlockM);
    empty = full + 8 * Tr::kStages;
    kv = empty + 8 * Tr::kStages;
  }
};

// The kernel's mbarrier waits. Diagnostic builds (ATTN_BWD_TMA_WS_WATCHDOG, native/probe/bwd_tma_ws_probe.cu)
// give up after 2^24 polls, print which wait of which CTA and pair it was, and trap: a hang shows where it is.
__device__ __forceinline__ void ws_wait(uint32_t bar, uint32_t parity, const char* what, int k) {
#ifdef ATTN_BWD_TMA_WS_WATCHDOG
  for (uint32_t n = 0; n < (1u << 24); ++n) {
    uint32_t done;
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
    if (done) return;
  }
  printf("bwd tma_ws watchdog: CTA (%d, %d, %d) thread %d: %s of pair %d (parity %u) never completed\n", blockIdx.x,
         blockIdx.y, blockIdx.z, threadIdx.x, what, k, parity);
  __trap();
#else
  (void)what;
  (void)k;
  mbar_wait(bar, parity);
#endif
}

}  // namespace sm90
}  // namespace attn::flash
