// Counters the caching allocator keeps per device; memoryStats() returns them to JS.
#pragma once
#include <cstddef>
#include <cstdint>

namespace attn {

struct MemoryStats {
  // Bytes in blocks handed out and not yet freed (block sizes, i.e. after size-class rounding).
  std::size_t allocated_bytes = 0;
  // Bytes the callers asked for in those blocks (before rounding).
  std::size_t requested_bytes = 0;
  // Bytes held from the device: live blocks, cached free blocks, and blocks awaiting their events.
  std::size_t reserved_bytes = 0;
  std::size_t peak_allocated_bytes = 0;
  std::size_t peak_reserved_bytes = 0;
  std::size_t active_blocks = 0;
  std::size_t cached_blocks = 0;        // free, reusable on their stream
  std::size_t pending_free_blocks = 0;  // freed, waiting for other streams' events
  std::uint64_t alloc_requests = 0;     // allocate() calls with bytes > 0
  std::uint64_t free_requests = 0;
  std::uint64_t cache_hits = 0;      // allocations served from the cache
  std::uint64_t device_mallocs = 0;  // gpuMalloc calls that succeeded
  std::uint64_t device_frees = 0;    // gpuFree calls
  std::uint64_t cache_flushes = 0;   // times the cache was released to satisfy an allocation
  std::uint64_t ooms = 0;            // allocations that failed with OutOfMemory
};

}  // namespace attn
