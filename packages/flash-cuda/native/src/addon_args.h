// What addon.cpp (forward) and addon_bwd.cpp (backward) share at the N-API boundary: the abi arrays
// checked for type and length (an abi mismatch between TS and C++ throws, never reads out of bounds), and
// C++ exceptions turned into JS errors with a code (nothing aborts the process).
#pragma once
#include <napi.h>

#include <exception>
#include <stdexcept>
#include <string>

#include "attn/cuda_check.h"
#include "attn/abi_args.h"

namespace attn::flash {

// The abi arrays (attn/abi_args.h), read before `with_js_errors` runs: a bad one is a TypeError naming it.
template <typename Read>
inline auto abi_array(const Napi::CallbackInfo& info, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const attn::InvalidArgument& e) {
    throw Napi::TypeError::New(info.Env(), std::string("flash-cuda: ") + e.what());
  }
}

inline const double* f64_arg(const Napi::CallbackInfo& info, size_t i, size_t count, const char* what) {
  return abi_array(info, [&] { return attn::abi::nums_arg(info, i, count, what); });
}

inline uint64_t* u64_arg(const Napi::CallbackInfo& info, size_t i, size_t count, const char* what) {
  return abi_array(info, [&] { return attn::abi::ptrs_arg(info, i, count, what); });
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
