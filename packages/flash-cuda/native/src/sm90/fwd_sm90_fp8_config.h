// The fp8 forward tile the addon builds (one: head-dim bucket 128), named once for the instantiation and the
// dispatcher.
#pragma once
#include "sm90/fwd_sm90_fp8_traits.h"

namespace attn::flash {

#ifndef ATTN_FP8_STAGES
#define ATTN_FP8_STAGES 3
#endif
#ifndef ATTN_FP8_STAGED_TILES
#define ATTN_FP8_STAGED_TILES 2
#endif
using Fp8FwdTile = FwdSm90Fp8Traits<ATTN_FP8_STAGES, ATTN_FP8_STAGED_TILES>;

}  // namespace attn::flash
