// The Hopper 16-bit forward kernel's argument (flash_fwd_sm90_ws_kernel.h): the call's parameters and, where the
// call's tensors fit them (FwdParams::tma_loads; fwd_sm90_args in flash_fwd_sm90_launch.h), the TMA tensor maps
// of q, k and v.
#pragma once
#include <cuda.h>

#include "common/fwd_params.h"

namespace attn::flash {

struct FwdSm90Args {
  FwdParams p;
  // 4-D tiled maps over [batch, heads, rows, head_dim] with 64-column boxes of the tile's rows (128-byte
  // swizzle); valid only where tma is true.
  CUtensorMap q, k, v;
  // true: the producer loads by TMA; false: by cp.async (the maps are left unset).
  bool tma;
};

}  // namespace attn::flash
