// Reading JS arguments (positional, and keyed fields of an options object), for every native addon
// of the project (@attn/cuda's runtime, the backends, context parallel). The TS layer validates first;
// these re-check cheaply so that a wrong call from anywhere else is a typed error (attn::InvalidArgument,
// code ATTN_BAD_ARGUMENT), never undefined behaviour. Each addon's boundary turns InvalidArgument into a
// JS error with its code; nothing here may be called outside that boundary.
#pragma once
#include <napi.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "attn/invalid_argument.h"

namespace attn {

inline std::string arg_label(std::size_t i, const char* name) {
  return "argument " + std::to_string(i) + " (" + name + ")";
}

inline double arg_number(const Napi::CallbackInfo& info, std::size_t i, const char* name) {
  if (info.Length() <= i || !info[i].IsNumber()) {
    throw InvalidArgument(arg_label(i, name) + " must be a number", "ATTN_BAD_ARGUMENT");
  }
  return info[i].As<Napi::Number>().DoubleValue();
}

// A non-negative integer up to 2^53 - 1 (what a JS number holds exactly).
inline std::size_t arg_size(const Napi::CallbackInfo& info, std::size_t i, const char* name) {
  const double v = arg_number(info, i, name);
  if (!(v >= 0) || v > 9007199254740991.0 || std::floor(v) != v) {
    throw InvalidArgument(arg_label(i, name) + " must be a non-negative safe integer", "ATTN_BAD_ARGUMENT");
  }
  return static_cast<std::size_t>(v);
}

inline int arg_int(const Napi::CallbackInfo& info, std::size_t i, const char* name) {
  const double v = arg_number(info, i, name);
  if (!(v >= -2147483648.0 && v <= 2147483647.0) || std::floor(v) != v) {
    throw InvalidArgument(arg_label(i, name) + " must be a 32-bit integer", "ATTN_BAD_ARGUMENT");
  }
  return static_cast<int>(v);
}

inline std::uint32_t arg_u32(const Napi::CallbackInfo& info, std::size_t i, const char* name) {
  const double v = arg_number(info, i, name);
  if (!(v >= 0 && v <= 4294967295.0) || std::floor(v) != v) {
    throw InvalidArgument(arg_label(i, name) + " must be an integer in 0..2^32-1", "ATTN_BAD_ARGUMENT");
  }
  return static_cast<std::uint32_t>(v);
}

inline bool arg_bool(const Napi::CallbackInfo& info, std::size_t i, const char* name) {
  if (info.Length() <= i || !info[i].IsBoolean()) {
    throw InvalidArgument(arg_label(i, name) + " must be a boolean", "ATTN_BAD_ARGUMENT");
  }
  return info[i].As<Napi::Boolean>().Value();
}

inline std::uint64_t arg_u64(const Napi::CallbackInfo& info, std::size_t i, const char* name) {
  if (info.Length() <= i || !info[i].IsBigInt()) {
    throw InvalidArgument(arg_label(i, name) + " must be a bigint", "ATTN_BAD_ARGUMENT");
  }
  bool lossless = false;
  const std::uint64_t v = info[i].As<Napi::BigInt>().Uint64Value(&lossless);
  if (!lossless) throw InvalidArgument(arg_label(i, name) + " must fit in 64 unsigned bits", "ATTN_BAD_ARGUMENT");
  return v;
}

inline void* arg_pointer(const Napi::CallbackInfo& info, std::size_t i, const char* name) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(arg_u64(info, i, name)));
}

template <typename TypedArray>
inline TypedArray arg_typed_array(const Napi::CallbackInfo& info, std::size_t i, const char* name,
                                  napi_typedarray_type type, const char* type_name) {
  if (info.Length() <= i || !info[i].IsTypedArray() || info[i].As<Napi::TypedArray>().TypedArrayType() != type) {
    throw InvalidArgument(arg_label(i, name) + " must be a " + type_name, "ATTN_BAD_ARGUMENT");
  }
  return info[i].As<TypedArray>();
}

// A typed array of exactly `count` elements: the fixed-layout argument arrays of an addon's ABI,
// where any other length means the TS and C++ sides were built from different layouts.
template <typename TypedArray>
inline TypedArray arg_typed_array_sized(const Napi::CallbackInfo& info, std::size_t i, const char* name,
                                        napi_typedarray_type type, const char* type_name, std::size_t count) {
  TypedArray a = arg_typed_array<TypedArray>(info, i, name, type, type_name);
  if (a.ElementLength() != count) {
    throw InvalidArgument(arg_label(i, name) + " has " + std::to_string(a.ElementLength()) + " elements, expected " +
                              std::to_string(count) + " (abi mismatch)",
                          "ATTN_BAD_ARGUMENT");
  }
  return a;
}

inline Napi::Uint8Array arg_bytes(const Napi::CallbackInfo& info, std::size_t i, const char* name) {
  return arg_typed_array<Napi::Uint8Array>(info, i, name, napi_uint8_array, "Uint8Array");
}

// Keyed arguments: an addon that takes one options object reads its fields with these. A missing
// field, or one of the wrong type, is InvalidArgument naming the key.
inline Napi::Value prop(const Napi::Object& o, const char* key) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) throw InvalidArgument(std::string("missing argument '") + key + "'", "ATTN_BAD_ARGUMENT");
  return v;
}

inline double prop_number(const Napi::Object& o, const char* key) {
  Napi::Value v = prop(o, key);
  if (!v.IsNumber()) throw InvalidArgument(std::string("'") + key + "' must be a number", "ATTN_BAD_ARGUMENT");
  return v.As<Napi::Number>().DoubleValue();
}

// An integer a JS number holds exactly (|x| <= 2^53 - 1); false for NaN and infinities.
inline bool is_safe_integer(double v) { return std::fabs(v) <= 9007199254740991.0 && std::floor(v) == v; }

inline std::int64_t prop_int(const Napi::Object& o, const char* key) {
  const double v = prop_number(o, key);
  if (!is_safe_integer(v)) throw InvalidArgument(std::string("'") + key + "' must be an integer", "ATTN_BAD_ARGUMENT");
  return static_cast<std::int64_t>(v);
}

inline std::uint64_t prop_u64(const Napi::Object& o, const char* key) {
  Napi::Value v = prop(o, key);
  if (!v.IsBigInt()) throw InvalidArgument(std::string("'") + key + "' must be a bigint", "ATTN_BAD_ARGUMENT");
  bool lossless = false;
  const std::uint64_t x = v.As<Napi::BigInt>().Uint64Value(&lossless);
  if (!lossless) throw InvalidArgument(std::string("'") + key + "' does not fit 64 unsigned bits", "ATTN_BAD_ARGUMENT");
  return x;
}

inline void* prop_pointer(const Napi::Object& o, const char* key) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(prop_u64(o, key)));
}

inline Napi::Object prop_object(const Napi::Object& o, const char* key) {
  Napi::Value v = prop(o, key);
  if (!v.IsObject()) throw InvalidArgument(std::string("'") + key + "' must be an object", "ATTN_BAD_ARGUMENT");
  return v.As<Napi::Object>();
}

// An array of exactly N integers (strides, sizes, window bounds).
template <int N>
inline void prop_ints(const Napi::Object& o, const char* key, std::int64_t (&out)[N]) {
  Napi::Value v = prop(o, key);
  if (!v.IsArray() || v.As<Napi::Array>().Length() != static_cast<std::uint32_t>(N))
    throw InvalidArgument(std::string("'") + key + "' must be an array of " + std::to_string(N) + " integers",
                          "ATTN_BAD_ARGUMENT");
  Napi::Array a = v.As<Napi::Array>();
  for (int i = 0; i < N; ++i) {
    Napi::Value e = a.Get(static_cast<std::uint32_t>(i));
    const double x = e.IsNumber() ? e.As<Napi::Number>().DoubleValue() : 0.5;  // 0.5: refused below
    if (!is_safe_integer(x))
      throw InvalidArgument(std::string("'") + key + "' must be an array of " + std::to_string(N) + " integers",
                            "ATTN_BAD_ARGUMENT");
    out[i] = static_cast<std::int64_t>(x);
  }
}

inline Napi::BigInt to_bigint(Napi::Env env, const void* ptr) {
  return Napi::BigInt::New(env, static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(ptr)));
}

}  // namespace attn
