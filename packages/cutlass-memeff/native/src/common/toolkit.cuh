// @attn/cuda's kernel toolkit (PTX wrappers, element conversions, exp2 and tanh, barriers), named unqualified
// in memeff's kernels as in flash-cuda's.
#pragma once
#include "attn/barriers.h"
#include "attn/convert.h"
#include "attn/fast_math.h"
#include "attn/ptx.h"

namespace memeff {
using namespace attn::ptx;
}  // namespace memeff
