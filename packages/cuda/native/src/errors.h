// The exceptions attn's runtime throws besides attn::CudaError (cuda_check.h). napi_errors.h turns
// each into a JS error with a stable `code`; the TS layer maps those codes onto core's error classes.
#pragma once
#include <cstddef>
#include <stdexcept>
#include <string>

#include "attn/invalid_argument.h"
#include "memory_stats.h"

namespace attn {

// The device could not provide `requested` bytes even after the cache was released.
class OutOfMemory : public std::runtime_error {
 public:
  OutOfMemory(const std::string& what, int device, std::size_t requested, const MemoryStats& stats,
              std::size_t device_free, std::size_t device_total)
      : std::runtime_error(what),
        device(device),
        requested(requested),
        stats(stats),
        device_free(device_free),
        device_total(device_total) {}
  int device;
  std::size_t requested;
  MemoryStats stats;
  std::size_t device_free;
  std::size_t device_total;
};

}  // namespace attn
