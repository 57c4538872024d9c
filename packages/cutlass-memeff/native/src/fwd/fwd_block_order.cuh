// Which (query block, b·h pair) a forward block takes. Causal: longest query blocks first over the whole
// launch (blocks start in linear order, x fastest): every (b, h) pair's last query block, then the next to
// last, ... so the tail of the launch holds the shortest blocks. Grid: x = query blocks, y = b·h pairs.
#pragma once

#include "common/params.h"

namespace memeff {

struct FwdBlock {
  int m_block, bh_local;
};

__device__ __forceinline__ FwdBlock fwd_block_of(const FwdParams& p) {
  if (!p.has_right) return FwdBlock{static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y)};
  const unsigned lin = blockIdx.y * gridDim.x + blockIdx.x;  // < 2^31 (seq_q < 2^21, y < 2^16)
  return FwdBlock{static_cast<int>(gridDim.x - 1 - lin / gridDim.y), static_cast<int>(lin % gridDim.y)};
}

}  // namespace memeff
