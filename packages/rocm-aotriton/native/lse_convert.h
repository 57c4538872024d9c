// Converts log-sum-exp between AOTriton's layout and attn's (see src/marshal/plan.ts and lse.ts):
// AOTriton: float32 [sequences * Hq, maxSeqlenQ]; attn: dense [B, Hq, Sq] (the same layout) or
// varlen [Hq, totalQ]. toAttn turns AOTriton's fully-masked markers (+inf, or <= fully_masked_below)
// into -inf; toAotriton turns -inf into +inf (and fills varlen padding with +inf).
#pragma once
#include <hip/hip_runtime.h>

#include <cstdint>

namespace attn_aot {

struct LseConvert {
  bool to_attn = true;
  float* aot = nullptr;
  float* attn = nullptr;
  int32_t heads_q = 0;
  int32_t sequences = 0;
  int32_t max_seqlen_q = 0;
  int64_t total_q = 0;                    // 0 for dense
  const int32_t* cu_seqlens_q = nullptr;  // nullptr for dense
  float fully_masked_below = -1e38f;
};

hipError_t launch_lse_convert(const LseConvert& c, hipStream_t stream);

}  // namespace attn_aot
