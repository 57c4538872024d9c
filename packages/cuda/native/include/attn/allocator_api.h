// The runtime's caching allocator as a table of C functions, for kernel addons that allocate their
// outputs and launch in one N-API call (one round trip from JS instead of one per allocation).
// allocatorApi() of the runtime's addon returns the table's address; a kernel addon checks version and
// size, then calls it in-process. Plain C types only: the addons are separate shared objects, each with
// its own statically linked runtime, and only driver handles (streams) and device addresses pass between
// them. Every block the table hands out belongs to the runtime like one from allocate(): the kernel
// package wraps it in the runtime's storage (adoptBlock), whose dispose() and finalizer free it.
#pragma once
#include <cstddef>
#include <cstdint>

namespace attn {

constexpr uint32_t kAllocatorApiVersion = 1;

struct AllocatorApi {
  uint32_t version;  // kAllocatorApiVersion
  uint32_t size;     // sizeof(AllocatorApi)
  // Writes the device's current stream (the one currentStream() returns in JS; the default stream may be
  // the null handle) to *stream. 0 on success, nonzero for a device index the runtime does not have or a
  // runtime failure.
  int (*current_stream)(int device, void** stream);
  // A block of at least `bytes` (> 0) on `device` for `stream`, or nullptr when the allocator cannot give
  // one (out of memory after releasing its cache, a bad device, a GPU error) or a graph capture is underway
  // on the device (captured allocations are tracked by the JS runtime). Never throws: the caller makes the
  // allocation again through the JS API, whose typed errors say why.
  void* (*allocate)(int device, std::size_t bytes, void* stream);
  // Returns a block that allocate gave, stream-ordered as dispose() in JS. 0 on success, nonzero when the
  // allocator does not know the block.
  int (*free)(int device, void* ptr);
};

}  // namespace attn
