// Sums the per-query-head dK/dV that CK's fmha_bwd writes under GQA/MQA into the key/value heads:
// dst[o, hk, x] = sum over g < group of src[o, hk * group + g, x], accumulated in float32 and rounded
// once to the half type. src and dst are contiguous [outer, heads, inner]: dense [B, H, Sk, D]
// (outer B, inner Sk * D), varlen [totalK, H, D] (outer totalK, inner D). This is the reduction
// PyTorch's mha_bwd_ck does on dk_expanded / dv_expanded after CK's backward.
#pragma once
#include <hip/hip_runtime.h>

#include <cstdint>

namespace attn_ck {

struct HeadGroupSum {
  const uint16_t* src = nullptr;  // fp16 or bf16 bits, [outer, heads_kv * group, inner]
  uint16_t* dst = nullptr;        // the same type, [outer, heads_kv, inner]
  bool bf16 = false;
  int64_t outer = 0;
  int64_t heads_kv = 0;
  int64_t group = 0;
  int64_t inner = 0;
};

hipError_t launch_head_group_sum(const HeadGroupSum& s, hipStream_t stream);

}  // namespace attn_ck
