// The slots of the CUDA backends' argument arrays (attn/abi_args.h): each read as plain memory, re-checked
// where the value must be an integer in a range. Free of N-API, so that a backend's host code compiled by
// nvcc (its dispatcher) reads the arrays it is handed with the same checks. `who` prefixes each message (the
// addon's name); a bad value throws attn::InvalidArgument (a std::invalid_argument).
#pragma once
#include <cmath>
#include <cstdint>
#include <string>

#include "attn/invalid_argument.h"

namespace attn::abi {

// nums[i] as an integer in [lo, hi]; `who` prefixes the message (the addon's name).
inline std::int64_t num_int(const double* nums, int i, const char* who, const char* what, double lo, double hi) {
  const double x = nums[i];
  if (!(x >= lo && x <= hi) || x != std::floor(x))
    throw InvalidArgument(std::string(who) + what + " must be an integer in [" +
                              std::to_string(static_cast<long long>(lo)) + ", " +
                              std::to_string(static_cast<long long>(hi)) + "], got " + std::to_string(x),
                          "ATTN_BAD_ARGUMENT");
  return static_cast<std::int64_t>(x);
}

// nums[i] as any integer a double holds exactly (strides, offsets).
inline std::int64_t num_i64(const double* nums, int i, const char* who, const char* what) {
  const double x = nums[i];
  if (!(std::fabs(x) <= 9007199254740992.0) || x != std::floor(x))
    throw InvalidArgument(std::string(who) + what + " must be an integer", "ATTN_BAD_ARGUMENT");
  return static_cast<std::int64_t>(x);
}

// `n` consecutive integer slots from `at` (a tensor's strides, a shape).
template <int N>
inline void num_i64s(const double* nums, int at, const char* who, const char* what, std::int64_t (&out)[N]) {
  for (int d = 0; d < N; ++d) out[d] = num_i64(nums, at + d, who, what);
}

// nums[i] as a flag: 0 or 1.
inline bool num_flag(const double* nums, int i, const char* who, const char* what) {
  return num_int(nums, i, who, what, 0, 1) == 1;
}

// ptrs[i] as a pointer (0: null).
template <typename T>
inline T ptr_at(const std::uint64_t* ptrs, int i) {
  return reinterpret_cast<T>(static_cast<std::uintptr_t>(ptrs[i]));
}

}  // namespace attn::abi
