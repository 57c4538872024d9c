// JS call descriptors -> FwdProblem / BwdProblem. TS validates first (packages/cpu/src/flash);
// this re-checks everything that could make the kernels touch memory they do not own, and throws
// Napi::Error (code ATTN_CPU_FLASH_ARGS) rather than crash.
#pragma once
#include <napi.h>

#include <vector>

#include "problem.h"

namespace attn_cpu {

struct Call {
  bool backward = false;
  Isa isa = Isa::kAuto;
  FwdProblem fwd;
  BwdProblem bwd;
  // The typed arrays the views point into, kept alive while an async call runs.
  std::vector<Napi::ObjectReference> keep;
  // A copy of the checked sequsedK counts (SequsedK::used_k points here; a move keeps the buffer), so
  // that JS changing its array during an async call cannot move a row past its keys.
  std::vector<int32_t> used_k;
  // A copy of the checked block table (PagedKv::table points here), for the same reason.
  std::vector<int32_t> block_table;
  std::vector<int32_t> key_start;
};

Call parse_forward(const Napi::Env& env, const Napi::Value& desc);
Call parse_backward(const Napi::Env& env, const Napi::Value& desc);

}  // namespace attn_cpu
