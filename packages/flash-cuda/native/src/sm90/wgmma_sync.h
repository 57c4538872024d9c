// The wgmma descriptors and ordering primitives live in @attn/cuda (attn/wgmma_sync.h), shared with the other
// backends' sm90 kernels; the flash kernels name them as sm90::.
#pragma once
#include "attn/wgmma_sync.h"

namespace attn::flash::sm90 {
using namespace attn::sm90;
}  // namespace attn::flash::sm90
