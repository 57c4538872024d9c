// What addon.cpp (forward) and addon_bwd.cpp (backward) share at the N-API boundary: the abi arrays
// checked for type and length (an abi mismatch between TS and C++ throws, never reads out of bounds), and
// C++ exceptions turned into JS errors with a code (nothing aborts the process).
#pragma once
#include <napi.h>

#include <exception>
#include <stdexcept>
#include <string>

#include "attn/cuda_check.h"
#include "attn/napi_args.h"

namespace attn::flash {

// The abi arrays, read before `with_js_errors` runs: a bad one is a TypeError naming it.
template <typename TypedArray>
inline TypedArray abi_array(const Napi::CallbackInfo& info, size_t i, size_t count, const char* what,
                            napi_typedarray_type type, const char* type_name) {
  try {
    return attn::arg_typed_array_sized<TypedArray>(info, i, what, type, type_name, count);
  } catch (const attn::InvalidArgument& e) {
    throw Napi::TypeError::New(info.Env(), std::string("flash-cuda: ") + e.what());
  }
}

inline const double* f64_arg(const Napi::CallbackInfo& info, size_t i, size_t count, const char* what) {
  return abi_array<Napi::Float64Array>(info, i, count, what, napi_float64_array, "Float64Array").Data();
}

inline const uint64_t* u64_arg(const Napi::CallbackInfo& info, size_t i, size_t count, const char* what) {
  return abi_array<Napi::TypedArrayOf<uint64_t>>(info, i, count, what, napi_biguint64_array, "BigUint64Array").Data();
}

inline Napi::Error to_js(Napi::Env env, const std::exception& e, const char* code) {
  Napi::Error err = Napi::Error::New(env, e.what());
  err.Set("code", Napi::String::New(env, code));
  return err;
}

// fn(), with its exceptions as JS errors: ATTN_CUDA_ERROR (a CUDA call or launch failed, naming the kernel),
// ATTN_FLASH_ARGUMENT (a bad argument), ATTN_FLASH_UNSUPPORTED (anything else).
template <class Fn>
auto with_js_errors(Napi::Env env, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const attn::CudaError& e) {
    throw to_js(env, e, "ATTN_CUDA_ERROR");
  } catch (const std::invalid_argument& e) {
    throw to_js(env, e, "ATTN_FLASH_ARGUMENT");
  } catch (const std::exception& e) {
    throw to_js(env, e, "ATTN_FLASH_UNSUPPORTED");
  }
}

}  // namespace attn::flash
