// Streams and events cross into JS as integers (BigInt). These convert between the two; whether an
// integer names a live stream or event is checked by the registries, never assumed.
#pragma once
#include <cstdint>

#include "attn/gpu_api.h"

namespace attn {

inline std::uint64_t handle_to_u64(gpuStream_t s) {
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(s));
}
inline std::uint64_t handle_to_u64(gpuEvent_t e) {
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(e));
}
inline gpuStream_t stream_from_u64(std::uint64_t v) {
  return reinterpret_cast<gpuStream_t>(static_cast<std::uintptr_t>(v));
}
inline gpuEvent_t event_from_u64(std::uint64_t v) {
  return reinterpret_cast<gpuEvent_t>(static_cast<std::uintptr_t>(v));
}

}  // namespace attn
