// Host side of a backward call: the forward's parameters (dispatch.cu's params_from_abi, so both passes
// see the same scores), the backward's own arguments re-checked, the tile configuration, the launches.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace attn::flash {

struct BwdPlan {
  int config;           // index into the generated table
  int dq_accum_stride;  // floats per row of the float32 dQ workspace (default mode, and dq_turn_rows > 0)
  int dq_turn_rows;     // deterministic mode on the TMA kernel: query rows per dQ turn counter; else 0
  int stages;           // shared-memory stages of Q/dO in the dK/dV kernel: 2 where they fit
  int n_blocks;         // key blocks of the dK/dV kernel
  int m_blocks;         // query blocks of the deterministic dQ kernel
};

// nums: the forward's abi::Num array; bnums: abi::BwdNum. Throws std::invalid_argument on bad values,
// std::runtime_error when no compiled configuration fits the device.
BwdPlan backward_plan(const double* nums, const double* bnums);
void backward(const uint64_t* ptrs, const double* nums, const uint64_t* bptrs, const double* bnums);
// "bf16_d128 (dK/dV 64x128, 8 warps, 112 KB; dQ 64x64, 4 warps, 64 KB)", in table order.
std::vector<std::string> backward_kernel_names();
std::vector<std::string> backward_kernel_descriptions();

}  // namespace attn::flash
