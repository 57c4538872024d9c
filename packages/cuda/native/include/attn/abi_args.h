// The C++ side of the CUDA backends' one argument ABI (@attn/cuda's src/abi.ts is the TS side): a call's
// arguments come as a BigUint64Array of device addresses and a Float64Array of numbers, each slot named by an
// enum of the addon's abi header. Here the arrays, checked for type and length (a layout mismatch between the
// TS and C++ sides throws, never reads out of bounds); attn/abi_slots.h reads their slots. Both throw
// attn::InvalidArgument (a std::invalid_argument), which each addon's boundary turns into its argument code.
#pragma once
#include <napi.h>

#include <cstddef>
#include <cstdint>

#include "attn/abi_slots.h"
#include "attn/napi_args.h"

namespace attn::abi {

// Argument i: the address array of `count` slots.
inline std::uint64_t* ptrs_arg(const Napi::CallbackInfo& info, std::size_t i, std::size_t count, const char* what) {
  return attn::arg_typed_array_sized<Napi::TypedArrayOf<std::uint64_t>>(info, i, what, napi_biguint64_array,
                                                                        "BigUint64Array", count)
      .Data();
}

// Argument i: the number array of `count` slots.
inline const double* nums_arg(const Napi::CallbackInfo& info, std::size_t i, std::size_t count, const char* what) {
  return attn::arg_typed_array_sized<Napi::Float64Array>(info, i, what, napi_float64_array, "Float64Array", count)
      .Data();
}

}  // namespace attn::abi
